"""The learned predictor on serving traces (docs/predictions.md §On serving traces): its error, the hit rate of
the policies that follow it against lru, rlt and OPT, and their latency in a cluster.

    python reproduce/predictions_serving.py             # the workloads below
    python reproduce/predictions_serving.py --quick     # smaller ones (a smoke run)

Workloads: chat-blocks (multi-turn conversations with think times, seed 0) served in tokens (b = 1), and a
Mooncake-format trace: chat-blocks (seed 1) written as a Mooncake file of 16 tokens per hash id, read back from the
file and served in blocks of b = 16 tokens (SGLang's page_size, vLLM's block size), where a policy that follows
predictions is told them for the block-level schedule and eta is in blocks. For each, budgets B of a fraction of the
distinct tokens (rounded up to a multiple of 64 and to the longest query): OPT (FIF, exact at batch size 1), lru,
rlt and every registered policy that follows predictions told by ``learned`` (randomized ones: the mean over
``SEEDS`` seeds), and with ``oracle`` for reference; eta of learned and OPT's misses in the unit of eta (blocks at
b = 16, the misses of FIF on the block-level workload), for eta / OPT. Then ``kvtheory route`` on the chat-blocks
trace with its own arrival times and output lengths: 4 workers (Llama-3.1-70B on 4 x H100-SXM each) of B = 10% of
the distinct tokens each, behind the cache-aware router, batch engine at batch 1, each worker's policy told by its
own learned predictor (kvtheory.cluster.predicted). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from kvtheory import generate, run_fif, run_policy
from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.costmodel import cost_model_by_name
from kvtheory.cluster.simulation import simulate
from kvtheory.model.blocks import block_workload
from kvtheory.model.traces import read_workload, write_mooncake
from kvtheory.policies import PREDICTIVE_POLICIES, policy_class

HASH_BLOCK = 16
SEEDS = 3
FRACTIONS = (0.05, 0.1, 0.3)
WORKLOADS = {
    "chat-blocks": ({"conversations": 32, "block_size": HASH_BLOCK}, 0, 1),
    "mooncake": ({"conversations": 32, "block_size": HASH_BLOCK}, 1, HASH_BLOCK),
}
QUICK = {
    "chat-blocks": ({"conversations": 8, "system_len": 256, "user_len": 128, "block_size": HASH_BLOCK}, 0, 1),
    "mooncake": ({"conversations": 8, "system_len": 256, "user_len": 128, "block_size": HASH_BLOCK}, 1, HASH_BLOCK),
}
#: the cluster: workers, router, GPU and model of the cost model, each worker's budget as a fraction of distinct
CLUSTER = {"workers": 4, "router": "cache-aware", "gpu": "H100-SXM", "model": "Llama-3.1-70B", "tp": 4, "fraction": 0.1}


def load(name: str, params: dict, seed: int, scratch: Path):
    """The workload; the Mooncake one through a Mooncake-format file, as a recorded trace would come."""
    workload = generate("chat-blocks", params, seed=seed)
    if name != "mooncake":
        return workload
    path = scratch / "trace.jsonl"
    write_mooncake(workload, path)
    return read_workload(path, "mooncake", HASH_BLOCK)


def budget_for(workload, fraction: float) -> int:
    least = max(int(fraction * workload.trie.distinct_tokens), workload.max_length)
    return -(-least // 64) * 64


def policies() -> list[str]:
    """lru, rlt, then every registered policy that follows predictions, told by learned and by the oracle."""
    return ["lru", "rlt"] + [f"{name}@{p}" for name in sorted(PREDICTIVE_POLICIES) for p in ("learned", "oracle")]


def single_worker(workload, budget: int, block_size: int) -> list[dict]:
    """One row per policy: hit rate (mean over seeds where randomized), eta where told."""
    started = time.perf_counter()
    opt = run_fif(workload, budget, block_size=block_size)
    units = (
        opt.misses
        if block_size == 1
        else run_fif(block_workload(workload, block_size).workload, budget // block_size).misses
    )
    row = {"policy": "opt", "hit_rate": opt.hit_rate, "misses": opt.misses, "misses_in_eta_units": units}
    rows = [{**row, "seconds": _since(started)}]
    for policy in policies():
        started = time.perf_counter()
        seeds = range(SEEDS) if policy_class(policy).randomized else [0]
        runs = [run_policy(workload, budget, policy, seed=s, block_size=block_size) for s in seeds]
        row = {"policy": policy, "hit_rate": float(np.mean([r.hit_rate for r in runs])), "seeds": len(runs)}
        row["misses"] = float(np.mean([r.misses for r in runs]))
        if runs[0].eta is not None:
            row["eta"] = runs[0].eta
        rows.append({**row, "seconds": _since(started)})
    return rows


def cluster_runs(workload) -> dict:
    spec = CLUSTER
    budget = budget_for(workload, spec["fraction"])
    cluster = Cluster.from_cost_models([cost_model_by_name(spec["gpu"], spec["model"], tp=spec["tp"])], spec["workers"])
    cluster = Cluster(tuple(replace(w, budget=budget) for w in cluster.workers))
    runs = []
    for policy in ["lru", "rlt"] + [f"{name}@learned" for name in sorted(PREDICTIVE_POLICIES)]:
        started = time.perf_counter()
        seeds = range(SEEDS) if policy_class(policy).randomized else [0]
        records = [simulate(workload, cluster, spec["router"], policy, seed=s).to_dict() for s in seeds]
        keys = ("hit_rate", "latency_mean", "latency_p95", "ttft_mean", "ttft_p95", "throughput_qps", "makespan")
        row = {key: float(np.mean([r[key] for r in records])) for key in keys}
        if "eta" in records[0]:
            row["eta"] = float(np.mean([r["eta"] for r in records]))
        runs.append({"policy": policy, "seeds": len(records), **row, "seconds": _since(started)})
    return {**spec, "budget": budget, "queries": len(workload), "runs": runs}


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    args = parser.parse_args()
    workloads = QUICK if args.quick else WORKLOADS
    tables, cluster = [], None
    with tempfile.TemporaryDirectory() as scratch:
        for name, (params, seed, block_size) in workloads.items():
            workload = load(name, params, seed, Path(scratch))
            for budget in dict.fromkeys(budget_for(workload, fraction) for fraction in FRACTIONS):
                table = {"workload": name, "seed": seed, "block_size": block_size}
                table |= {"budget": budget, "queries": len(workload), "tokens": workload.total_tokens}
                table |= {"distinct_tokens": workload.trie.distinct_tokens}
                tables.append({**table, "rows": single_worker(workload, budget, block_size)})
            if name == "chat-blocks":
                cluster = cluster_runs(workload)
    out = {"workloads": workloads, "hash_block_size": HASH_BLOCK, "seeds": SEEDS, "tables": tables}
    print(json.dumps({**out, "cluster": cluster}))


if __name__ == "__main__":
    main()
