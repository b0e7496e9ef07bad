"""rlt-authors against textbook rlt, and allocation against shortfall eviction, over many seeds.

    python reproduce/evict_amount.py                   # 60 instances per workload and budget
    python reproduce/evict_amount.py --instances 10    # a smoke run

Workloads (small, as the model's measurement): random tries (``random-tree``), GSP (random order) and
multi-turn chat, at budgets B = a fraction of the distinct token nodes (at least L_max). Instance s is the
workload generated with seed s and every policy run with seed s. For each pair (A, base) the figure is
the paired relative difference of misses, (misses_A - misses_base) / misses_base, per instance: its mean
with a two-sided 95% Student-t interval over the instances. Pairs: rlt-authors vs rlt (both shortfall),
and allocation vs shortfall for lru, rlt and rlt-authors. Prints one JSON object.

A policy family that does not implement the allocation amount yet evicts the shortfall whatever it is
asked: its allocation figure is then exactly 0 (``identical`` counts the instances with equal misses).
"""

from __future__ import annotations

import argparse
import json
import time

from kvtheory import generate, run_policy
from kvtheory.stats import summarize

WORKLOADS = {
    "random-tree": {"queries": 300, "max_length": 24, "alphabet": 3},
    "gsp": {"groups": 8, "prompts": 8, "lengths": [64, 128, 256], "order": "random"},
    "multiturn": {"conversations": 12, "turns": [2, 4, 6], "user_len": 64, "output_len": 4, "order": "random"},
}
FRACTIONS = (0.25, 0.5)
#: (name, (policy, evict amount) measured, (policy, evict amount) it is compared with)
PAIRS = (
    ("rlt-authors vs rlt", ("rlt-authors", "shortfall"), ("rlt", "shortfall")),
    ("lru allocation vs shortfall", ("lru", "allocation"), ("lru", "shortfall")),
    ("rlt allocation vs shortfall", ("rlt", "allocation"), ("rlt", "shortfall")),
    ("rlt-authors allocation vs shortfall", ("rlt-authors", "allocation"), ("rlt-authors", "shortfall")),
)


def measure(instances: int) -> list[dict]:
    rows = []
    for family, params in WORKLOADS.items():
        for fraction in FRACTIONS:
            differences: dict[str, list[float]] = {name: [] for name, _, _ in PAIRS}
            identical = dict.fromkeys(differences, 0)
            for seed in range(instances):
                workload = generate(family, params, seed=seed)
                budget = max(int(fraction * workload.trie.distinct_tokens), workload.max_length)
                misses = {}
                for name, measured, base in PAIRS:
                    for policy, amount in (measured, base):
                        if (policy, amount) not in misses:
                            run = run_policy(workload, budget, policy, seed=seed, evict_amount=amount)
                            misses[policy, amount] = run.misses
                    differences[name].append((misses[measured] - misses[base]) / misses[base])
                    identical[name] += misses[measured] == misses[base]
            for name, values in differences.items():
                summary = summarize(values)
                rows.append(
                    {
                        "workload": family,
                        "budget_fraction": fraction,
                        "pair": name,
                        "instances": instances,
                        "mean_relative_difference": summary.mean,
                        "ci95": list(summary.ci),
                        "identical": identical[name],
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=60, help="instances (seeds) per workload and budget")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = measure(args.instances)
    print(json.dumps({"params": WORKLOADS, "rows": rows, "seconds": round(time.perf_counter() - start, 1)}))


if __name__ == "__main__":
    main()
