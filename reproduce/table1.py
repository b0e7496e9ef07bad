"""The paper's Table 1 setting in the cluster simulation, beside the paper's figures.

    python reproduce/table1.py --seeds 10                     # the four main rows, the 70B and worst-order ratios
    python reproduce/table1.py --seeds 10 --rlt rlt-authors --evict-amount allocation --engine continuous
    python reproduce/table1.py --quick --seeds 2              # scaled-down gsp (smoke test)

Setting (docs/cluster.md; the paper's Table 1): paper-size gsp (128 groups x 32 prompts, group lengths
512..8192 cycled, prefix ratio 0.5, system prompt + "\\n\\n" + question, output 4 tokens, Poisson
arrivals at 12 queries/s, random order), 4 workers running Llama-3.1-8B on L40 (cost model defaults:
memory fraction 0.9, MFU 0.5; ``--mem-fraction`` and ``--mfu`` change them). Rows: cache-aware and lbgr
(the reference routers, their default options) with the LRU-family and the RLT-family eviction (``--lru``
and ``--rlt`` name the policies, default ``lru`` and ``rlt``). Ratios: cache-aware+LRU over lbgr+RLT,
for Llama-3.1-70B on H200 (tensor-parallel over 2 GPUs per worker: the bf16 weights, 141.1 GB, do not
fit one 141 GB H200) in the random order, and for Llama-3.1-8B on L40 in the round-robin order over
groups (the paper's worst case).

Each seed draws the workload's tokens, order and arrivals and the randomized eviction; every row runs
the same seeds. Per row: p50 latency, p50 TTFT (seconds) and hit rate, each as the mean over seeds with
a two-sided 95% Student-t confidence interval (kvtheory.stats.summarize). Ratios are taken seed by seed
(paired: both routers on the same workload and arrivals), then summarized the same way.

``--evict-amount`` and ``--engine`` are handed to the simulation as they are (``evict_amount=``,
``engine=``); a kvtheory whose simulation lacks the option says so and exits with status 2.

The paper's figures (as issue 14 quotes them): p50 latency 26.7 s (cache-aware+LRU), 19.2 s
(cache-aware+RLT), 6.03 s (LBGR+LRU), 2.26 s (LBGR+RLT); hit rates 23.9, 26.4, 33.3, 37.3 % in the same
row order; LBGR+RLT over cache-aware+LRU: 5.46x p50 latency and 7.19x TTFT for Llama-70B, 22.8x latency
and 15.5x TTFT in the round-robin order. It gives no TTFT per row here (null).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from dataclasses import dataclass

from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.costmodel import cost_model_by_name
from kvtheory.cluster.simulation import Simulation, simulate
from kvtheory.errors import InputError
from kvtheory.policies import policy_class
from kvtheory.stats import summarize
from kvtheory.workloads import generate

WORKERS = 4
SMALL = ("Llama-3.1-8B", "L40", 1)
LARGE = ("Llama-3.1-70B", "H200", 2)
QUICK = {"groups": 16, "prompts": 8}
PAPER_ROWS = {
    ("cache-aware", "lru"): {"latency_p50": 26.7, "ttft_p50": None, "hit_rate": 0.239},
    ("cache-aware", "rlt"): {"latency_p50": 19.2, "ttft_p50": None, "hit_rate": 0.264},
    ("lbgr", "lru"): {"latency_p50": 6.03, "ttft_p50": None, "hit_rate": 0.333},
    ("lbgr", "rlt"): {"latency_p50": 2.26, "ttft_p50": None, "hit_rate": 0.373},
}
PAPER_RATIOS = {
    "Llama-3.1-70B": {"latency_p50": 5.46, "ttft_p50": 7.19},
    "round-robin order": {"latency_p50": 22.8, "ttft_p50": 15.5},
}
METRICS = ("latency_p50", "ttft_p50", "hit_rate")


@dataclass(frozen=True)
class Setup:
    """What every run of the table shares: seeds, gsp parameters, cost model knobs, simulation options."""

    seeds: list[int]
    params: dict
    costs: dict
    extra: dict

    def run(self, router: str, eviction: str, setting: tuple[str, str, int], order: str) -> list[dict]:
        """One record of METRICS per seed."""
        model, gpu, tp = setting
        cluster = Cluster.from_cost_models([cost_model_by_name(gpu, model, tp=tp, **self.costs)], WORKERS)
        records = []
        for seed in self.seeds:
            workload = generate("gsp", {**self.params, "order": order}, seed=seed)
            result = simulate(workload, cluster, router, eviction, seed=seed, **self.extra).to_dict()
            records.append({m: result[m] for m in METRICS})
        return records


def pass_through(evict_amount: str | None, engine: str | None) -> dict:
    """The simulation options given on the command line, checked against what this kvtheory accepts."""
    given = {"evict_amount": evict_amount, "engine": engine}
    accepted = inspect.signature(Simulation.__init__).parameters
    options = {}
    for key, value in given.items():
        if value is None:
            continue
        if key not in accepted:
            flag = "--" + key.replace("_", "-")
            raise InputError(f"{flag}: this kvtheory's cluster simulation has no {key!r} option")
        options[key] = value
    return options


def summary(values) -> dict:
    s = summarize(values)
    return {"mean": s.mean, "ci95": list(s.ci)}


def table(setup: Setup, lru: str, rlt: str) -> dict:
    rows, ratios = [], []
    for (router, family), paper in PAPER_ROWS.items():
        eviction = lru if family == "lru" else rlt
        records = setup.run(router, eviction, SMALL, "random")
        rows.append(
            {
                "router": router,
                "eviction": eviction,
                "model": SMALL[0],
                "gpu": SMALL[1],
                "order": "random",
                **{m: summary([r[m] for r in records]) for m in METRICS},
                "paper": paper,
            }
        )
    cases = (("Llama-3.1-70B", LARGE, "random"), ("round-robin order", SMALL, "round-robin"))
    for label, setting, order in cases:
        base = setup.run("cache-aware", lru, setting, order)
        ours = setup.run("lbgr", rlt, setting, order)
        ratios.append(
            {
                "label": label,
                "ratio": f"cache-aware+{lru} / lbgr+{rlt}",
                "model": setting[0],
                "gpu": f"{setting[2]}x{setting[1]}" if setting[2] > 1 else setting[1],
                "order": order,
                **{m: summary([b[m] / o[m] for b, o in zip(base, ours)]) for m in ("latency_p50", "ttft_p50")},
                "cache_aware": {m: summary([b[m] for b in base]) for m in METRICS},
                "lbgr": {m: summary([o[m] for o in ours]) for m in METRICS},
                "paper": PAPER_RATIOS[label],
            }
        )
    return {"rows": rows, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="number of seeds (0, 1, ..., N-1); default 10")
    parser.add_argument("--lru", default="lru", help="eviction policy of the LRU rows (default lru)")
    parser.add_argument("--rlt", default="rlt", help="eviction policy of the RLT rows (default rlt)")
    parser.add_argument("--evict-amount", default=None, help="handed to the simulation as evict_amount=")
    parser.add_argument("--engine", default=None, help="handed to the simulation as engine=")
    parser.add_argument("--mfu", type=float, default=0.5, help="the cost model's prefill MFU (default 0.5)")
    parser.add_argument("--mem-fraction", type=float, default=0.9, help="the cost model's memory fraction (0.9)")
    parser.add_argument("--quick", action="store_true", help=f"scaled-down gsp ({QUICK})")
    args = parser.parse_args(argv)
    try:
        if args.seeds < 1:
            raise InputError(f"--seeds must be at least 1, got {args.seeds}")
        for name in (args.lru, args.rlt):
            policy_class(name)
        extra = pass_through(args.evict_amount, args.engine)
        params = dict(QUICK) if args.quick else {}
        started = time.perf_counter()
        seeds = list(range(args.seeds))
        costs = {"mfu": args.mfu, "mem_fraction": args.mem_fraction}
        result = table(Setup(seeds, params, costs, extra), args.lru, args.rlt)
    except InputError as error:
        print(f"table1: {error}", file=sys.stderr)
        return 2
    setting = {
        "workload": {"name": "gsp", "params": params or "paper defaults (128 x 32, 12 q/s, output 4)"},
        "workers": WORKERS,
        "cost_model": costs,
        "seeds": seeds,
        "simulation_options": extra,
        "confidence": "mean over seeds, two-sided 95% Student-t interval",
    }
    print(json.dumps({**setting, **result, "seconds": round(time.perf_counter() - started, 1)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
