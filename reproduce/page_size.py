"""What the cache's block size changes (docs/model.md §Blocks): lru (SGLang's RadixCache, at page_size b) and OPT.

    python reproduce/page_size.py             # the workloads below
    python reproduce/page_size.py --quick     # smaller ones (a smoke run)

For each workload, two budgets B (a fraction of its distinct token nodes, rounded up to a multiple of the largest
block size and to at least its longest query) and each block size b in 1, 16, 64: the hit rate of lru and of FIF
(OPT at batch size 1) on a cache of B tokens held in whole blocks of b, with each query's partial last block never
cached. Workloads: gsp and multi-turn chat (token workloads, seed 0) and chat-blocks written as a Mooncake-format
trace of 16 tokens per hash id and read back from the file. Then the miss-ratio curves of vllm (vLLM's block pool),
lru, rlt (3 seeds) and OPT side by side on that trace at each block size. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from kvtheory import generate, run_fif, run_policy
from kvtheory.experiments.mrc import miss_ratio_curve
from kvtheory.model.traces import read_workload, write_mooncake

BLOCK_SIZES = (1, 16, 64)
FRACTIONS = (0.1, 0.3)
HASH_BLOCK = 16
WORKLOADS = {
    "gsp": {"groups": 32, "prompts": 16, "order": "random"},
    "multiturn": {"conversations": 64, "order": "random"},
    "chat-blocks": {"conversations": 64, "block_size": HASH_BLOCK},
}
QUICK = {
    "gsp": {"groups": 8, "prompts": 8, "lengths": [256, 512], "order": "random"},
    "multiturn": {"conversations": 16, "user_len": 128, "order": "random"},
    "chat-blocks": {"conversations": 16, "system_len": 256, "user_len": 128, "block_size": HASH_BLOCK},
}


def load(family: str, params: dict, scratch: Path):
    """The workload; chat-blocks through a Mooncake-format file, as a recorded trace would come."""
    workload = generate(family, params, seed=0)
    if family != "chat-blocks":
        return workload
    path = scratch / "chat-blocks.jsonl"
    write_mooncake(workload, path)
    return read_workload(path, "mooncake", HASH_BLOCK)


def budget_for(workload, fraction: float) -> int:
    unit = max(BLOCK_SIZES)
    least = max(int(fraction * workload.trie.distinct_tokens), workload.max_length)
    return -(-least // unit) * unit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    args = parser.parse_args()
    workloads = QUICK if args.quick else WORKLOADS
    rows, curves = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for family, params in workloads.items():
            workload = load(family, params, Path(scratch))
            for fraction in FRACTIONS:
                budget = budget_for(workload, fraction)
                for b in BLOCK_SIZES:
                    for policy in ("lru", "fif"):
                        started = time.perf_counter()
                        if policy == "fif":
                            run = run_fif(workload, budget, block_size=b)
                        else:
                            run = run_policy(workload, budget, policy, block_size=b)
                        rows.append(
                            {
                                "workload": family,
                                "queries": len(workload),
                                "tokens": workload.total_tokens,
                                "distinct_tokens": workload.trie.distinct_tokens,
                                "budget_fraction": fraction,
                                "budget": budget,
                                "block_size": b,
                                "policy": policy,
                                "hits": run.hits,
                                "misses": run.misses,
                                "hit_rate": run.hit_rate,
                                "seconds": round(time.perf_counter() - started, 3),
                            }
                        )
            if family == "chat-blocks":
                budgets = sorted({budget_for(workload, f) for f in (0.05, 0.1, 0.2, 0.3, 0.5)})
                for b in BLOCK_SIZES:
                    curve = miss_ratio_curve(
                        workload, budgets, ["vllm", "lru", "rlt", "opt"], seeds=3, workers=1, block_size=b
                    )
                    curves.append({"workload": family, "hash_block_size": HASH_BLOCK, **curve})
    print(json.dumps({"workloads": workloads, "block_sizes": BLOCK_SIZES, "rows": rows, "curves": curves}))


if __name__ == "__main__":
    main()
