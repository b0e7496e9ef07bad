"""How far each exact MIP formulation reaches; prints one JSON object.

    python benchmarks/mip_scaling.py            # 60 s per instance (several minutes on 2 cores)
    python benchmarks/mip_scaling.py --quick    # 5 s per instance, a smoke run
    python benchmarks/mip_scaling.py --scales 1 --joint-scales 16   # choose the prompt-length multipliers

For each formulation ("token": the per-token MIP of docs/model.md §The offline optimum; "edge": one
integer per radix edge and gap), instances of growing size (queries n = 4, 6, 8, 11, 16, ... a factor
sqrt(2) apart) are solved until the first one not proven optimal within the time limit, counting model
building and solving together
(and, for two workers, the LP relaxation solved for the lower bounds). The report gives the largest
instance solved (its tokens T = sum |q_j|) and the first one that was not, for one worker (checked
against FIF) and for two identical workers (the joint routing + eviction MIP, a_miss = 1,
a_cached = 0.1, no output time), side by side. The two-worker ladders run with the generators' short
segments (scale 1, about 45 tokens a query) and with every segment 64 times longer (about 3,000 tokens
a query, the paper's GSP lengths): the routing is what limits the joint MIP, and only the token
formulation grows with the prompts.

Workloads (numpy, from --seed; every token id is fresh unless shared on purpose):
* gsp: G = max(2, isqrt(n)) groups; group g has a prefix of length cycled over 8, 16, 32, 64 and each
  of its queries adds a unique suffix of the same length (prefix ratio 0.5); groups drawn uniformly.
* tree: a system prompt of 8 tokens shared by all, max(2, isqrt(n)) topics (4..32 tokens) drawn with
  Zipf weights 1/(k+1), 3 templates per topic (4..16 tokens), then a unique suffix (4..16 tokens).
Budget: B = L_max + (shared tokens) // 3, so that about a third of the shared prefixes fit beside a query.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys

import numpy as np
from provenance import provenance

from kvtheory import Workload, run_fif
from kvtheory.cluster.joint_mip import solve_joint_mip
from kvtheory.optimum.mip import solve_mip

FORMULATIONS = ("token", "edge")
MAX_QUERIES = 1 << 16


class _Tokens:
    """Fresh token ids, so that two segments share a prefix only when the generator says so; every
    segment is ``scale`` times the length the generator names (longer prompts, the same radix tree)."""

    def __init__(self, scale: int) -> None:
        self._next = itertools.count()
        self._scale = scale

    def segment(self, length: int) -> list[int]:
        return [next(self._next) for _ in range(length * self._scale)]


def gsp(n: int, rng: np.random.Generator, scale: int) -> tuple[Workload, int]:
    """Generated shared prefix: (workload, number of shared tokens)."""
    fresh = _Tokens(scale)
    groups = max(2, math.isqrt(n))
    lengths = [(8, 16, 32, 64)[g % 4] for g in range(groups)]
    prefixes = [fresh.segment(length) for length in lengths]
    queries = []
    for g in rng.integers(groups, size=n):
        queries.append(prefixes[g] + fresh.segment(lengths[g]))
    return Workload.from_token_lists(queries), sum(map(len, prefixes))


def tree(n: int, rng: np.random.Generator, scale: int) -> tuple[Workload, int]:
    """System prompt -> topic -> template -> unique suffix: (workload, number of shared tokens)."""
    fresh = _Tokens(scale)
    system = fresh.segment(8)
    topics = max(2, math.isqrt(n))
    topic_tokens = [fresh.segment(int(rng.integers(4, 33))) for _ in range(topics)]
    templates = [[fresh.segment(int(rng.integers(4, 17))) for _ in range(3)] for _ in range(topics)]
    weights = 1.0 / np.arange(1, topics + 1)
    queries = []
    for topic in rng.choice(topics, size=n, p=weights / weights.sum()):
        template = templates[topic][int(rng.integers(3))]
        queries.append(system + topic_tokens[topic] + template + fresh.segment(int(rng.integers(4, 17))))
    shared = len(system) + sum(map(len, topic_tokens)) + sum(len(t) for ts in templates for t in ts)
    return Workload.from_token_lists(queries), shared


FAMILIES = {"gsp": gsp, "tree": tree}


def sizes():
    """n = 4, 6, 8, 11, 16, 23, 32, ...: a factor sqrt(2) apart."""
    for k in itertools.count():
        n = round(4 * math.sqrt(2) ** k)
        if n > MAX_QUERIES:
            return
        yield n


def instance(family: str, n: int, seed: int, scale: int) -> tuple[Workload, int]:
    workload, shared = FAMILIES[family](n, np.random.default_rng([seed, n]), scale)
    return workload, workload.max_length + shared // 3


def describe(workload: Workload, budget: int) -> dict:
    return {
        "queries": len(workload),
        "tokens": workload.total_tokens,
        "distinct_tokens": workload.trie.distinct_tokens,
        "radix_edges": workload.trie.n_nodes - 1,
        "budget": budget,
    }


def single(workload: Workload, budget: int, formulation: str, limit: float, solver: str) -> dict:
    result = solve_mip(workload, budget, formulation=formulation, solver=solver, time_limit=limit)
    record = result.to_dict()
    record["fif_misses"] = run_fif(workload, budget).misses
    return record


def joint(workload: Workload, budget: int, formulation: str, limit: float, solver: str) -> dict:
    result = solve_joint_mip(
        workload,
        [budget, budget],
        a_miss=[1.0, 1.0],
        a_cached=[0.1, 0.1],
        formulation=formulation,
        solver=solver,
        time_limit=limit,
    )
    record = result.to_dict()
    del record["routing"]
    return record


def ladder(mode, family: str, formulation: str, limit: float, seed: int, solver: str, scale: int) -> dict:
    """Grow n until an instance is not proven optimal within ``limit`` seconds (building included)."""
    largest, attempts = None, []
    for n in sizes():
        workload, budget = instance(family, n, seed, scale)
        record = {**describe(workload, budget), **mode(workload, budget, formulation, limit, solver)}
        solved = record["status"] == "optimal" and record["seconds"] <= limit
        attempts.append(
            {
                "queries": n,
                "tokens": record["tokens"],
                "status": record["status"],
                "seconds": round(record["seconds"], 3),
                "solved": solved,
            }
        )
        print(f"{mode.__name__} {formulation} n={n}: {record['status']} {record['seconds']:.2f}s", file=sys.stderr)
        if not solved:
            return {"largest_solved": largest, "first_unsolved": record, "attempts": attempts}
        largest = record
    return {"largest_solved": largest, "first_unsolved": None, "attempts": attempts}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 s per instance instead of 60 s")
    parser.add_argument("--family", choices=sorted(FAMILIES), default="tree")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solver", choices=("cbc", "highs"), default="cbc")
    parser.add_argument("--scales", default="1", help="single worker: segment length multipliers, e.g. 1,16")
    parser.add_argument(
        "--joint-scales", default="1,64", help="two workers: segment length multipliers (64: prompts of ~3k tokens)"
    )
    args = parser.parse_args(argv)
    started = provenance()
    limit = 5.0 if args.quick else 60.0
    report = {"family": args.family, "seed": args.seed, "solver": args.solver, "time_limit_s": limit}
    for mode, key, scales in ((single, "single_worker", args.scales), (joint, "two_workers", args.joint_scales)):
        for scale in (int(x) for x in scales.split(",") if x.strip()):
            report[f"{key}_scale_{scale}"] = {
                f: ladder(mode, args.family, f, limit, args.seed, args.solver, scale) for f in FORMULATIONS
            }
    report["provenance"] = started
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
