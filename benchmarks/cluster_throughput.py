"""Cluster performance: simulated queries/second per router, and the largest joint MIP solved in 60 s.

    python benchmarks/cluster_throughput.py --json            # full figures (a few minutes on 2 cores)
    python benchmarks/cluster_throughput.py --json --quick    # scaled-down gsp, 5 s MIP limit

Part 1: the time-based simulation (kvtheory.cluster.simulation) of the paper-size gsp workload (128 x 32
prompts, 4,096 queries, 12.8 M tokens, 12 q/s) on 4 workers (Llama-3.1-8B on L40 from the cost model,
B = 207,057 tokens each), for every router with lru and rlt eviction (``--evictions``: any policies):
wall and CPU time of the simulation alone (medians of --repeats runs; generating the workload and its trie
is timed separately) and simulated queries per second of each (on a loaded machine quote the CPU figures).

Part 2: the joint routing + eviction MIP (kvtheory.cluster.joint_mip.solve_joint_mip, edge formulation, CBC)
on small gsp instances of growing size (n = groups x prompts queries, group lengths 8 and 16 tokens,
prefix ratio 0.5, output 4 tokens), with the cost ratios of Llama-3.1-8B on L40 (a_miss scaled to 1,
a_cached and the decode time scaled alike), budget B = L_max + a third of the shared tokens, for M = 2
and M = 4 workers: model building plus solving, until the first instance not proven optimal within the
limit. Instances of at most 12 queries are checked against the exhaustive optimum (subset DP with FIF).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

from provenance import provenance

from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.costmodel import cost_model_by_name
from kvtheory.cluster.optimum import exhaustive_optimum, joint_optimum
from kvtheory.cluster.routers import ROUTERS
from kvtheory.cluster.simulation import simulate
from kvtheory.workloads import generate

SIZES = ((2, 2), (2, 3), (2, 4), (3, 4), (4, 4), (4, 5), (4, 6), (5, 6), (6, 6), (6, 8), (8, 8), (8, 10), (10, 10))


def simulation_speed(quick: bool, repeats: int, evictions: tuple[str, ...] = ("lru", "rlt")) -> dict:
    params = {"groups": 32, "prompts": 8} if quick else {}
    started = time.perf_counter()
    workload = generate("gsp", params, seed=0)
    _ = workload.trie
    setup = time.perf_counter() - started
    cluster = Cluster.from_cost_models([cost_model_by_name("L40", "Llama-3.1-8B")], 4)
    rows = []
    for router in ROUTERS:
        for eviction in evictions:
            walls, cpus = [], []
            for _ in range(repeats):
                started, started_cpu = time.perf_counter(), time.process_time()
                run = simulate(workload, cluster, router, eviction, seed=0)
                walls.append(time.perf_counter() - started)
                cpus.append(time.process_time() - started_cpu)
            seconds, cpu_seconds = statistics.median(walls), statistics.median(cpus)
            rows.append(
                {
                    "router": router,
                    "eviction": eviction,
                    "seconds": round(seconds, 3),
                    "queries_per_second": round(len(workload) / seconds),
                    "cpu_seconds": round(cpu_seconds, 3),
                    "queries_per_cpu_second": round(len(workload) / cpu_seconds),
                    "hit_rate": round(run.hit_rate, 4),
                }
            )
    return {
        "workload": {"name": "gsp", "params": params, "queries": len(workload), "tokens": workload.total_tokens},
        "workers": 4,
        "budget": cluster[0].budget,
        "workload_and_trie_seconds": round(setup, 2),
        "runs": rows,
    }


def mip_instance(groups: int, prompts: int, m: int, seed: int):
    workload = generate("gsp", {"groups": groups, "prompts": prompts, "lengths": [8, 16], "output_len": 4}, seed=seed)
    trie = workload.trie
    shared = sum(trie.edge_len[v] for v in range(1, trie.n_nodes) if len(trie.children[v]) > 1)
    budget = workload.max_length + shared // 3
    cm = cost_model_by_name("L40", "Llama-3.1-8B")
    scale = 1.0 / cm.a_miss
    worker = Worker(1.0, cm.a_cached * scale, budget, cm.decode_base * scale, cm.decode_per_context_token * scale)
    return workload, Cluster(tuple(worker for _ in range(m)))


def mip_scaling(time_limit: float, seed: int) -> list[dict]:
    report = []
    for m in (2, 4):
        largest = first_failure = None
        for groups, prompts in SIZES:
            workload, cluster = mip_instance(groups, prompts, m, seed)
            result = joint_optimum(workload, cluster, time_limit=time_limit)
            row = {
                "queries": len(workload),
                "tokens": workload.total_tokens,
                "groups": groups,
                "prompts": prompts,
                "budget": cluster[0].budget,
                "status": result.status,
                "seconds": round(result.seconds, 2),
                "makespan": result.makespan,
                "gap": result.gap,
                "variables": result.variables,
            }
            if len(workload) <= 12 and result.status == "optimal":
                exact = exhaustive_optimum(workload, cluster)
                row["exhaustive_agrees"] = math.isclose(exact.makespan, result.makespan, rel_tol=1e-6, abs_tol=1e-6)
            print(f"M={m} n={len(workload)}: {result.status} in {result.seconds:.1f} s", file=sys.stderr)
            if result.status == "optimal" and result.seconds <= time_limit:
                largest = row
            else:
                first_failure = row
                break
        report.append({"workers": m, "largest_optimal": largest, "first_not_optimal": first_failure})
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="scaled-down gsp and a 5 s MIP limit")
    parser.add_argument("--repeats", type=int, default=3, help="simulation repeats (median)")
    parser.add_argument("--time-limit", type=float, default=None, help="MIP time limit (default 60, quick 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-mip", action="store_true")
    parser.add_argument("--evictions", default="lru,rlt", help="comma-separated eviction policies of the workers")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    args = parser.parse_args(argv)
    started = provenance()
    limit = args.time_limit or (5.0 if args.quick else 60.0)
    record = {"simulation": simulation_speed(args.quick, args.repeats, tuple(args.evictions.split(",")))}
    if not args.skip_mip:
        record["joint_mip"] = {
            "time_limit": limit,
            "solver": "cbc",
            "formulation": "edge",
            "by_workers": mip_scaling(limit, args.seed),
        }
    record["provenance"] = started
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
