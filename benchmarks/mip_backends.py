"""HiGHS against CBC as the MIP back end of the exact batched optimum; prints one JSON object.

    python benchmarks/mip_backends.py            # the instances below, 60 s limit per solve
    python benchmarks/mip_backends.py --quick    # the first two instances

The default MIP back end of ``kvtheory opt`` (``--solver exact``, and the joint optimum) is the one
this measures as faster: :data:`kvtheory.optimum.exact.DEFAULT_MIP_SOLVER`, chosen from this script's
output (the figures and the command are in docs/optima.md).

Instances: seeded multi-turn conversations and shared-prefix groups, served in batches (beta >= 2, where
FIF is not exact and the MIP runs unless the flow bound already meets FIF), at budgets between the
longest batch footprint and the distinct tokens. For each instance and back end, two wall times of the
whole solve (model building included), each in a fresh order (HiGHS first on even instances, CBC first
on odd ones), with a ``time_limit`` of 60 s:

* ``exact``: :func:`kvtheory.optimum.exact.solve_optimum` (FIF, the flow bound, then the edge MIP started
  from FIF's schedule), what ``kvtheory opt`` runs by default;
* ``mip``: :func:`kvtheory.optimum.mip.solve_mip`, the edge MIP alone (``kvtheory opt --solver highs|cbc``).

Both back ends must find the same optimum where both prove one; the summary gives, per mode, the total
seconds of each back end over the instances and how many instances each was faster on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from provenance import provenance

import adversaries  # noqa: F401  (registers the batch family)
from kvtheory.optimum.exact import MIP_SOLVERS, solve_optimum
from kvtheory.optimum.mip import solve_mip
from kvtheory.workloads import generate

TIME_LIMIT = 60.0
#: (generator, parameters, seed, beta, budget B: tokens, or a fraction of the distinct tokens D), chosen so that
#: the flow bound does not meet FIF on most of them and the exact solver's MIP runs (``mip_ran_in_exact``)
INSTANCES = (
    ("multiturn", {"conversations": 16}, 1, 4, 40000),  # the README's chat.jsonl at B = 40,000, beta = 4
    ("multiturn", {"conversations": 16}, 1, 2, 0.4),
    ("multiturn", {"conversations": 16}, 1, 2, 0.5),
    ("multiturn", {"conversations": 16}, 1, 4, 0.4),
    ("multiturn", {"conversations": 12}, 3, 4, 0.3),
    ("gsp", {"groups": 8, "prompts": 4}, 1, 2, 0.25),
    ("batch", {"B": 32, "beta": 2, "L": 4, "n": 400, "order": "cyclic"}, 0, 2, 32),
    ("batch", {"B": 16, "beta": 4, "L": 4, "n": 2000, "repeat": 3, "order": "cyclic"}, 0, 4, 16),
)


def _budget(workload, beta: int, budget: float) -> int:
    """``budget`` tokens, or the fraction ``budget`` < 1 of the distinct tokens (at least the largest footprint)."""
    from kvtheory.model.batches import batches, footprint

    if budget >= 1:
        return int(budget)
    trie = workload.trie
    need = max(footprint(trie, [trie.path(j) for j in group]) for group in batches(len(workload), beta))
    return max(need, int(trie.distinct_tokens * budget))


def measure(name: str, params: dict, seed: int, beta: int, fraction: float, first: str) -> dict:
    workload = generate(name, params, seed=seed)
    budget = _budget(workload, beta, fraction)
    record = {
        "workload": name,
        "params": params,
        "seed": seed,
        "beta": beta,
        "B": budget,
        "queries": len(workload),
        "tokens": workload.total_tokens,
    }
    order = (first, *(s for s in MIP_SOLVERS if s != first))
    for solver in order:
        started = time.perf_counter()
        opt = solve_optimum(workload, budget, batch=beta, time_limit=TIME_LIMIT, mip_solver=solver)
        record[f"exact_{solver}"] = {
            "seconds": round(time.perf_counter() - started, 3),
            "status": opt.status,
            "misses": opt.misses,
            "bound": opt.bound,
            "solver": opt.solver,
        }
    for solver in order:
        started = time.perf_counter()
        mip = solve_mip(workload, budget, batch=beta, solver=solver, time_limit=TIME_LIMIT)
        record[f"mip_{solver}"] = {
            "seconds": round(time.perf_counter() - started, 3),
            "status": mip.status,
            "misses": mip.misses,
        }
    return record


def summary(records: list[dict]) -> dict:
    result = {}
    for mode in ("exact", "mip"):
        totals = {s: round(sum(r[f"{mode}_{s}"]["seconds"] for r in records), 3) for s in MIP_SOLVERS}
        faster = {
            s: sum(
                r[f"{mode}_{s}"]["seconds"] < min(r[f"{mode}_{o}"]["seconds"] for o in MIP_SOLVERS if o != s)
                for r in records
            )
            for s in MIP_SOLVERS
        }
        result[mode] = {"total_seconds": totals, "instances_faster": faster}
    result["mip_ran_in_exact"] = sum(r["exact_highs"]["solver"].startswith("mip:") for r in records)
    disagree = [
        r["workload"]
        for r in records
        for mode in ("exact", "mip")
        if all(r[f"{mode}_{s}"]["status"] == "optimal" for s in MIP_SOLVERS)
        and len({r[f"{mode}_{s}"]["misses"] for s in MIP_SOLVERS}) > 1
    ]
    result["optima_disagree"] = disagree
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first two instances only")
    args = parser.parse_args(argv)
    started = provenance()
    instances = INSTANCES[:2] if args.quick else INSTANCES
    records = []
    for number, (name, params, seed, beta, fraction) in enumerate(instances):
        first = MIP_SOLVERS[number % len(MIP_SOLVERS)]
        records.append(measure(name, params, seed, beta, fraction, first))
        print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    report = {
        "command": "python benchmarks/mip_backends.py" + (" --quick" if args.quick else ""),
        "provenance": started,
        "time_limit": TIME_LIMIT,
        "summary": summary(records),
        "instances": records,
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
