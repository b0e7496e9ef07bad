"""The paper's gsp setting segmented by model type and size, and by KV-cache dtype (issue 28's table).

    python reproduce/model_types.py                   # every packaged config.json, bf16 and fp8 KV, on H200
    python reproduce/model_types.py --quick           # scaled-down gsp (smoke test)
    python reproduce/model_types.py --block-size 16   # the same on vLLM's block caches (16 tokens a block)

For each model of kvtheory/data/model_configs (dense GQA, mixture of experts, MLA) and each KV-cache
dtype (bf16, fp8; the weights keep the config's dtype), the cost model of one worker of ``--gpu``
(default H200) with the fewest tensor-parallel GPUs, 1, 2, 4 or 8, that hold the weights and leave room
for at least ``--min-budget`` tokens of a bf16 KV cache (default 100,000: a few of the workload's longest
prompts); the fp8 cache runs on the same GPUs, so that the KV dtype is all that changes between the two:
KV bytes per token (whole, and per GPU), weight bytes, the budget B in tokens per worker, a_miss, a_cached
and one decode step. Then the paper's gsp setting on it (128 groups x 32 prompts, 12 queries/s Poisson,
output 4 tokens, 4 workers, batch-1 workers, seed ``--seed``) under each ``--pair`` of router + eviction
(default cache-aware + lru and lbgr + rlt, the Table 1 comparison): hit rate, p50 TTFT and p50 latency
in seconds, and throughput. One seed per cell: these are absolute values of one run, not intervals.

With ``--block-size b`` (b > 1) every worker caches whole blocks of b tokens
(docs/cluster.md §Blocks in the cluster): B is rounded down to whole blocks, b x floor(B / b) (vLLM's pool
of floor(B / b) usable blocks), and the default pairs are cache-aware + vllm and lbgr + vllm: vLLM's block
pool is the engine's eviction, so what varies is the router, SGLang's cache-aware router or the authors'
lbgr, the two of the token table's pairs.

Prints one JSON object: the setting, then one record per (model, KV dtype).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from kvtheory.cluster.blocks import whole_blocks
from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.costmodel import cost_model, gpu
from kvtheory.cluster.model_config import packaged_configs, spec_from_config, with_dtypes
from kvtheory.cluster.simulation import simulate
from kvtheory.errors import InputError
from kvtheory.workloads import generate

WORKERS = 4
QUICK = {"groups": 16, "prompts": 8}
TP_CHOICES = (1, 2, 4, 8)
METRICS = ("hit_rate", "ttft_p50", "latency_p50", "throughput_qps")


def kind(spec) -> str:
    """dense or MoE (experts, per token), and the attention: GQA, MHA or MLA."""
    mixture = f"MoE {spec.experts}, {spec.experts_per_token} per token" if spec.experts else "dense"
    return f"{mixture}, {spec.attention.upper()}"


def smallest_tp(gpu_spec, spec, min_budget: int):
    """The cost model at the fewest GPUs of TP_CHOICES whose budget reaches ``min_budget`` (None if none)."""
    for tp in TP_CHOICES:
        try:
            model = cost_model(gpu_spec, spec, tp=tp)
        except InputError:
            continue
        if model.budget >= min_budget:
            return model
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="H200", help="GPU of every worker (default H200)")
    parser.add_argument("--min-budget", type=int, default=100_000, help="tokens of KV cache a worker must hold")
    parser.add_argument(
        "--pair",
        action="append",
        help="ROUTER+EVICTION (repeatable; default cache-aware+lru and lbgr+rlt; at b > 1 cache-aware+vllm and "
        "lbgr+vllm)",
    )
    parser.add_argument(
        "--block-size", type=int, default=1, help="the workers' cache block size b in tokens (default 1: tokens)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the workload, arrivals and policies (default 0)")
    parser.add_argument("--quick", action="store_true", help=f"scaled-down gsp ({QUICK})")
    args = parser.parse_args(argv)
    if args.block_size < 1:
        parser.error(f"--block-size must be a positive number of tokens, got {args.block_size}")
    b = args.block_size
    default = ["cache-aware+lru", "lbgr+rlt"] if b == 1 else ["cache-aware+vllm", "lbgr+vllm"]
    pairs = [tuple(p.split("+", 1)) for p in (args.pair or default)]
    if any(len(p) != 2 for p in pairs):
        parser.error("--pair is ROUTER+EVICTION, e.g. cache-aware+lru")
    started = time.perf_counter()
    gpu_spec = gpu(args.gpu)
    params = QUICK if args.quick else {}
    workload = generate("gsp", params, seed=args.seed)
    records = []
    for filename, config in packaged_configs().items():
        base = spec_from_config(config, filename)
        sized = smallest_tp(gpu_spec, with_dtypes(base, kv_dtype="bf16"), args.min_budget)
        for kv_dtype in ("bf16", "fp8"):
            spec = with_dtypes(base, kv_dtype=kv_dtype)
            model = None if sized is None else cost_model(gpu_spec, spec, tp=sized.tp)
            record = {
                "model": spec.name,
                "kind": kind(spec),
                "total_params": spec.total_params,
                "active_params": spec.active_params,
                "weight_dtype": spec.weight_dtype,
                "kv_dtype": kv_dtype,
                "kv_bytes_per_token": spec.kv_bytes_per_token,
            }
            if model is None:
                record["fits"] = False
                records.append(record)
                continue
            cluster = whole_blocks(Cluster.from_cost_models([model], WORKERS), b)
            budget = cluster[0].budget
            runs = {}
            for router, eviction in pairs:
                result = simulate(workload, cluster, router, eviction, seed=args.seed, block_size=b).to_dict()
                runs[f"{router}+{eviction}"] = {m: result[m] for m in METRICS}
            record.update(
                fits=True,
                tp=model.tp,
                memory_per_worker=gpu_spec.hbm_bytes * model.tp,
                kv_bytes_per_token_per_gpu=model.kv_bytes_per_token_per_gpu,
                weight_bytes=model.weight_bytes,
                budget=budget,
                a_miss=model.a_miss,
                a_cached=model.a_cached,
                decode_per_output_token=model.decode_per_output_token(),
                runs=runs,
            )
            records.append(record)
    lengths = [q.length for q in workload]
    out = {
        "setting": {
            "gpu": gpu_spec.name,
            "workers": WORKERS,
            "min_budget": args.min_budget,
            "workload": "gsp " + ("quick " + json.dumps(QUICK) if args.quick else "paper size (128 x 32)"),
            "queries": len(lengths),
            "tokens": sum(lengths),
            "mean_prompt": sum(lengths) / len(lengths),
            "max_prompt": max(lengths),
            "rate": "12 q/s Poisson",
            "output_len": 4,
            "seed": args.seed,
            "pairs": [f"{r}+{e}" for r, e in pairs],
            **({} if b == 1 else {"block_size": b}),
        },
        "models": records,
        "seconds": round(time.perf_counter() - started, 1),
    }
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
