"""The exact batched optimum at the paper's sizes; prints one JSON object (``--table``: a Markdown table).

    python benchmarks/batched_optimum.py                 # every cell, both MIP back ends (tens of minutes)
    python benchmarks/batched_optimum.py --quick         # gsp, multiturn and longdoc at beta = 2, 8 and B = D/4
    python benchmarks/batched_optimum.py --table         # the table of docs/performance.md

Workloads: the generators' defaults (the paper's sizes: gsp 128 groups x 32 prompts, multiturn 128
conversations, longdoc), seed 0. For each batch size beta in {2, 4, 8, 16, 32} and budget B = D/8, D/4,
D/2 (D = distinct token nodes), ``solve_optimum`` runs with HiGHS and with CBC as the MIP back end under
a 60 s limit on the whole solve. Reported per cell and back end: seconds, status, how optimality was
shown, OPT (or the bracket), FIF's misses and its excess over OPT. A cell whose batch footprint exceeds B
cannot be served at all and is reported as such.
"""

from __future__ import annotations

import argparse
import json
import sys

from provenance import provenance

from kvtheory.errors import InputError
from kvtheory.optimum.exact import MIP_SOLVERS, solve_optimum
from kvtheory.workloads import generate

WORKLOADS = ("gsp", "multiturn", "longdoc")
BATCHES = (2, 4, 8, 16, 32)
FRACTIONS = (8, 4, 2)  # B = D / fraction
TIME_LIMIT = 60.0


def cell(workload, name: str, beta: int, fraction: int, solver: str) -> dict:
    distinct = workload.trie.distinct_tokens
    budget = distinct // fraction
    record = {"workload": name, "beta": beta, "budget": f"D/{fraction}", "B": budget, "solver": solver}
    try:
        opt = solve_optimum(workload, budget, batch=beta, time_limit=TIME_LIMIT, mip_solver=solver)
    except InputError as exc:
        return {**record, "status": "infeasible", "error": str(exc)}
    return {
        **record,
        "seconds": round(opt.seconds, 3),
        "status": opt.status,
        "proof": opt.proof,
        "opt": opt.misses,
        "bound": opt.bound,
        "fif": opt.fif_misses,
        "fif_excess": (opt.fif_misses - opt.misses) / opt.misses,
    }


def table(records: list[dict]) -> str:
    lines = [
        "| workload | beta | B | seconds (HiGHS / CBC) | status | how | FIF's excess |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    pairs: dict[tuple, dict] = {}
    for r in records:
        pairs.setdefault((r["workload"], r["beta"], r["budget"]), {})[r["solver"]] = r
    for (name, beta, budget), by_solver in pairs.items():
        first = next(iter(by_solver.values()))
        if first["status"] == "infeasible":
            lines.append(f"| {name} | {beta} | {budget} | - | batch footprint > B | - | - |")
            continue
        seconds = " / ".join(f"{by_solver[s]['seconds']:.2f}" for s in MIP_SOLVERS if s in by_solver)
        statuses = "/".join(sorted({r["status"] for r in by_solver.values()}))
        how = "flow bound = FIF" if first["proof"] and "flow" in first["proof"] else "MIP"
        lines.append(
            f"| {name} | {beta} | {budget} | {seconds} | {statuses} | {how} | {100 * first['fif_excess']:.3f}% |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: beta 2 and 8, B = D/4")
    parser.add_argument("--table", action="store_true", help="print a Markdown table instead of JSON")
    parser.add_argument("--solvers", default=",".join(MIP_SOLVERS), help="MIP back ends (default: highs,cbc)")
    args = parser.parse_args(argv)
    started = provenance()
    batches, fractions = ((2, 8), (4,)) if args.quick else (BATCHES, FRACTIONS)
    records = []
    for name in WORKLOADS:
        workload = generate(name, {}, seed=0)
        for beta in batches:
            for fraction in fractions:
                for solver in args.solvers.split(","):
                    records.append(cell(workload, name, beta, fraction, solver))
                    print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    proven = [r for r in records if r["status"] == "optimal"]
    summary = {
        "cells": len(records),
        "proven_optimal": len(proven),
        "infeasible": sum(r["status"] == "infeasible" for r in records),
        "max_seconds": max((r["seconds"] for r in proven), default=None),
    }
    print(
        table(records)
        if args.table
        else json.dumps({"summary": summary, "cells": records, "provenance": started}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
