"""The cluster tables of docs/results.md, from one command:
``python -m kvtheory.cluster.report --seeds 3 --out reports/cluster-report.md`` (a run's output, kept at the top
of the repository, outside the package; the default ``--out -`` prints it).

Main table: {random, round-robin, cache-aware, lbgr} x {lru, rlt} (plus extra routers) on the gsp,
multiturn and longdoc workloads at the paper's settings: 4 workers, 12 queries/s (Poisson arrivals of the
generators), output 4 tokens, Llama-3.1-8B on L40 and Llama-3.1-70B on H200 (tp 2: its bf16 weights,
141.1 GB, do not fit one 141 GB H200). Then the sweeps the paper's reviewers asked for, on gsp with
Llama-3.1-8B on L40: workers 2..10, rate 4..20, memory fraction 0.5..0.9, output length 4..128, LBGR's
forgetting factor and cache-aware's thresholds; and the offline makespan over the best lower bound.
Batch 1 (each worker serves one query at a time) unless a table says otherwise.
Every figure is the mean over ``--seeds`` seeds (each seed draws the workload, its arrivals and the
randomized policies). ``--quick`` uses scaled-down workloads (for smoke tests).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import time
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.costmodel import cost_model_by_name
from kvtheory.cluster.optimum import lower_bounds, offline_makespan
from kvtheory.cluster.simulation import simulate
from kvtheory.workloads import generate

SETTINGS = (("Llama-3.1-8B", "L40", 1), ("Llama-3.1-70B", "H200", 2))
WORKLOADS = ("gsp", "multiturn", "longdoc")
PAPER = {"gsp": {}, "multiturn": {}, "longdoc": {}}  # the generators' defaults are the paper's sizes
QUICK = {
    "gsp": {"groups": 32, "prompts": 8},
    "multiturn": {"conversations": 32},
    "longdoc": {"documents": 128},
}
MAIN_ROUTERS = ("random", "round-robin", "cache-aware", "lbgr")
SGLANG_NOW = {"cache_threshold": 0.3, "balance_abs": 64.0, "balance_rel": 1.5}
EXTRA_ROUTERS = (
    ("least-load", {}, "least-load"),
    ("cache-aware", SGLANG_NOW, "cache-aware (0.3/64/1.5)"),
    ("cache-aware-adaptive", {}, "cache-aware-adaptive"),
    ("lbgr", {"learn": "none"}, "lbgr (no learning)"),
    ("lbgr-calibrated", {}, "lbgr-calibrated"),
    ("lbgr-full", {}, "lbgr-full"),
)
METRICS = ("hit_rate", "latency_p50", "latency_p95", "ttft_p50", "throughput_qps")
HEADER = "| hit rate | p50 latency (s) | p95 latency (s) | p50 TTFT (s) | throughput (q/s) |"


@lru_cache(maxsize=4)
def _workload(name: str, params: tuple, seed: int):
    workload = generate(name, dict(params), seed=seed)
    _ = workload.trie  # build once, shared by every run on it
    return workload


def _cluster(model: str, gpu: str, tp: int, workers: int, mem_fraction: float = 0.9) -> Cluster:
    return Cluster.from_cost_models([cost_model_by_name(gpu, model, tp=tp, mem_fraction=mem_fraction)], workers)


def run_point(
    name: str,
    params: dict,
    cluster: Cluster,
    router: str,
    eviction: str,
    seeds: Sequence[int],
    *,
    options: dict | None = None,
    output_len: int | None = None,
    batch: int = 1,
) -> dict:
    """Mean of METRICS over seeds (workload, arrivals and policies all drawn from the seed)."""
    rows = []
    for seed in seeds:
        workload = _workload(name, tuple(sorted(params.items())), seed)
        run = simulate(
            workload, cluster, router, eviction, seed=seed, router_options=options, output_len=output_len, batch=batch
        )
        record = run.to_dict()
        rows.append([record[m] for m in METRICS])
    return dict(zip(METRICS, np.mean(rows, axis=0).tolist()))


def offered_load(name: str, params: dict, cluster: Cluster, seed: int) -> tuple[float, float]:
    """(all-miss, best-case) work per worker per second of the arrival span: >1 means overload."""
    workload = _workload(name, tuple(sorted(params.items())), seed)
    w = cluster[0]
    span = max(q.arrival for q in workload) - min(q.arrival for q in workload)
    trie = workload.trie
    seen = bytearray(trie.n_nodes)
    all_miss = best = 0.0
    for j, q in enumerate(workload):
        path = trie.path(j)
        hit = max((trie.depth[v] for v in path if seen[v]), default=0)
        for v in path:
            seen[v] = 1
        out = w.output_time(q.length, q.output_len or 0)
        all_miss += w.cost(q.length, 0, q.output_len or 0)
        best += w.prefill(q.length, hit) + out
    scale = len(cluster) * span
    return all_miss / scale, best / scale


def _row(label: str, values: dict) -> str:
    return (
        f"| {label} | {values['hit_rate']:.3f} | {values['latency_p50']:.2f} | {values['latency_p95']:.2f} "
        f"| {values['ttft_p50']:.2f} | {values['throughput_qps']:.2f} |"
    )


def _verdict(paper: dict, base: dict) -> str:
    """How lbgr+rlt compares with cache-aware+lru on each metric."""
    parts = []
    for metric, better, label in (
        ("hit_rate", max, "hit rate"),
        ("latency_p50", min, "p50"),
        ("latency_p95", min, "p95"),
        ("throughput_qps", max, "throughput"),
    ):
        a, b = paper[metric], base[metric]
        if math.isclose(a, b, rel_tol=0.02, abs_tol=1e-3):
            parts.append(f"{label} tie")
        else:
            parts.append(f"{label} {'ahead' if better(a, b) == a else 'behind'}")
    return ", ".join(parts)


def main_tables(workloads: dict, seeds: Sequence[int], out, settings=SETTINGS) -> dict:
    """The main tables, printed to ``out``; returns them as data: per setting its worker's costs, and per
    workload its size, offered load and one row per router + eviction (the means of METRICS)."""
    verdicts, tables = [], []
    for model, gpu, tp in settings:
        cluster = _cluster(model, gpu, tp, 4)
        w0 = cluster[0]
        tp_text = f"{tp} x " if tp > 1 else ""
        print(
            f"\n#### {model} on {tp_text}{gpu} (4 workers, B = {w0.budget:,} tokens each, "
            f"a_miss = {w0.a_miss * 1e6:.1f} us/token, "
            f"a_cached = {w0.a_cached * 1e9:.0f} ns/token, decode {w0.decode_base * 1e3:.1f} ms/token)\n",
            file=out,
        )
        setting = {
            "model": model,
            "gpu": gpu,
            "tp": tp,
            "workers": 4,
            "budget": w0.budget,
            "a_miss": w0.a_miss,
            "a_cached": w0.a_cached,
            "decode": w0.decode_base,
            "workloads": [],
        }
        for name in WORKLOADS:
            params = workloads[name]
            miss_load, best_load = offered_load(name, params, cluster, seeds[0])
            workload = _workload(name, tuple(sorted(params.items())), seeds[0])
            print(
                f"\n{name} ({len(workload)} queries, {workload.total_tokens:,} tokens, 12 q/s): "
                "offered load per worker "
                f"{miss_load:.2f} if every token missed, {best_load:.2f} with every reusable prefix hit\n",
                file=out,
            )
            print(f"| router | eviction {HEADER}", file=out)
            print("| --- | --- | --- | --- | --- | --- | --- |", file=out)
            rows = []
            for router, options, label in ((r, None, r) for r in MAIN_ROUTERS):
                for eviction in ("lru", "rlt"):
                    values = run_point(name, params, cluster, router, eviction, seeds, options=options)
                    rows.append({"router": label, "eviction": eviction, **values})
                    print(_row(f"{label} | {eviction}", values), file=out)
            for router, options, label in EXTRA_ROUTERS:
                for eviction in ("lru", "rlt"):
                    values = run_point(name, params, cluster, router, eviction, seeds, options=options)
                    rows.append({"router": label, "eviction": eviction, **values})
                    print(_row(f"{label} | {eviction}", values), file=out)
            by = {(r["router"], r["eviction"]): r for r in rows}
            verdict = _verdict(by[("lbgr", "rlt")], by[("cache-aware", "lru")])
            verdicts.append(f"{model}/{gpu} {name}: lbgr+rlt vs cache-aware+lru: {verdict}")
            setting["workloads"].append(
                {
                    "name": name,
                    "queries": len(workload),
                    "tokens": workload.total_tokens,
                    "offered_load_all_miss": miss_load,
                    "offered_load_best": best_load,
                    "rows": rows,
                }
            )
            out.flush()
        tables.append(setting)
    return {"settings": tables, "verdicts": verdicts}


SWEEP_PAIRS = (
    ("cache-aware", "lru", {}, "cache-aware+lru"),
    ("cache-aware", "lru", SGLANG_NOW, "cache-aware(0.3/64/1.5)+lru"),
    ("lbgr", "rlt", {}, "lbgr+rlt"),
    ("lbgr", "rlt", {"learn": "none"}, "lbgr(no learning)+rlt"),
)


def _sweep(title: str, values, point, out, pairs=SWEEP_PAIRS) -> list[dict]:
    print(f"\n{title}\n", file=out)
    print(f"| value | router + eviction {HEADER}", file=out)
    print("| --- | --- | --- | --- | --- | --- | --- |", file=out)
    rows = []
    for value in values:
        for router, eviction, options, label in pairs:
            values_at = point(value, router, eviction, options)
            rows.append({"value": value, "label": label, **values_at})
            print(_row(f"{value} | {label}", values_at), file=out)
        out.flush()
    return rows


#: the sweeps of ``sweeps``, by name (``--sweep``): what each varies and its title
SWEEPS = {
    "workers": "Workers M:",
    "rate": "Request rate (queries/s):",
    "mem-fraction": "Memory fraction (the cache budget B per worker follows):",
    "output": "Output length (tokens per query), batch 1 (one query at a time: decode is not shared):",
    "output-batch8": "Output length, batch 8 (up to 8 queued queries prefilled together, then decoded in lock step):",
    "forgetting": "LBGR forgetting factor (12 q/s and 8 q/s):",
    "thresholds": "cache-aware thresholds (cache_threshold / balance_abs; balance_rel 1.0001), eviction lru:",
}


def sweeps(workloads: dict, seeds: Sequence[int], out, names: Sequence[str] = tuple(SWEEPS)) -> dict:
    """The sweeps named in ``names`` (keys of SWEEPS), printed to ``out``; returns their rows by name."""
    gsp = workloads["gsp"]
    model, gpu = "Llama-3.1-8B", "L40"
    base = _cluster(model, gpu, 1, 4)
    print(
        f"\n#### Sweeps: gsp ({len(_workload('gsp', tuple(sorted(gsp.items())), seeds[0]))} queries), "
        f"{model} on {gpu}; "
        "4 workers, 12 q/s, memory fraction 0.9, output 4 unless swept",
        file=out,
    )
    points = {
        "workers": (
            (2, 4, 6, 8, 10),
            lambda m, r, e, o: run_point("gsp", gsp, _cluster(model, gpu, 1, m), r, e, seeds, options=o),
        ),
        "rate": (
            (4, 8, 12, 16, 20),
            lambda rate, r, e, o: run_point("gsp", {**gsp, "rate": float(rate)}, base, r, e, seeds, options=o),
        ),
        "mem-fraction": (
            (0.5, 0.6, 0.7, 0.8, 0.9),
            lambda f, r, e, o: run_point("gsp", gsp, _cluster(model, gpu, 1, 4, f), r, e, seeds, options=o),
        ),
        "output": (
            (4, 16, 32, 64, 128),
            lambda n, r, e, o: run_point("gsp", gsp, base, r, e, seeds, options=o, output_len=n),
        ),
        "output-batch8": (
            (4, 16, 32, 64, 128),
            lambda n, r, e, o: run_point("gsp", gsp, base, r, e, seeds, options=o, output_len=n, batch=8),
        ),
    }
    found = {}
    for name in names:
        if name in points:
            values, point = points[name]
            found[name] = _sweep(SWEEPS[name], values, point, out)
        elif name == "forgetting":
            print(f"\n{SWEEPS[name]}\n", file=out)
            print(f"| q/s | forgetting {HEADER}", file=out)
            print("| --- | --- | --- | --- | --- | --- | --- |", file=out)
            rows = []
            for rate in (12, 8):
                for f in (0.9, 0.95, 0.98, 0.992, 0.999, 1.0):
                    options = {"forgetting": f}
                    values = run_point("gsp", {**gsp, "rate": float(rate)}, base, "lbgr", "rlt", seeds, options=options)
                    rows.append({"rate": rate, "forgetting": f, **values})
                    print(_row(f"{rate} | {f}", values), file=out)
                out.flush()
            found[name] = rows
        else:
            print(f"\n{SWEEPS[name]}\n", file=out)
            print(f"| cache_threshold | balance_abs {HEADER}", file=out)
            print("| --- | --- | --- | --- | --- | --- | --- |", file=out)
            rows = []
            for threshold in (0.1, 0.3, 0.49, 0.5, 0.7):
                for balance in (4.0, 32.0, 64.0):
                    options = {"cache_threshold": threshold, "balance_abs": balance}
                    values = run_point("gsp", gsp, base, "cache-aware", "lru", seeds, options=options)
                    rows.append({"cache_threshold": threshold, "balance_abs": balance, **values})
                    print(_row(f"{threshold} | {balance:g}", values), file=out)
                out.flush()
            found[name] = rows
    return found


def offline_table(workloads: dict, seeds: Sequence[int], out) -> dict:
    """The offline makespans over the best lower bound, printed to ``out``; returns the bounds and rows."""
    gsp = workloads["gsp"]
    workload = _workload("gsp", tuple(sorted(gsp.items())), seeds[0])
    cluster = _cluster("Llama-3.1-8B", "L40", 1, 4)
    bounds = lower_bounds(workload, cluster)
    best = max(bounds.values())
    print(
        f"\n#### Offline makespan (every query at 0), gsp, Llama-3.1-8B on L40, 4 workers: over the best lower bound "
        f"(work/M = {bounds['work_over_m']:.1f} s, largest query = {bounds['largest_query']:.2f} s; "
        "no MIP at this size, "
        "so each ratio is an upper bound on the true one)\n",
        file=out,
    )
    print("| router | eviction | makespan (s) | ratio to bound | hit rate |", file=out)
    print("| --- | --- | --- | --- | --- |", file=out)
    rows = []
    for router in ("random", "round-robin", "least-load", "cache-aware", "lbgr"):
        for eviction in ("lru", "rlt"):
            run = offline_makespan(workload, cluster, router, eviction, seed=seeds[0])
            rows.append(
                {
                    "router": router,
                    "eviction": eviction,
                    "makespan": run.max_busy,
                    "ratio": run.max_busy / best,
                    "hit_rate": run.hit_rate,
                }
            )
            print(
                f"| {router} | {eviction} | {run.max_busy:.1f} | {run.max_busy / best:.3f} | {run.hit_rate:.3f} |",
                file=out,
            )
    out.flush()
    return {"bounds": bounds, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvtheory.cluster.report", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="-", help="markdown file to write (default stdout)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per point (default 1)")
    parser.add_argument("--quick", action="store_true", help="scaled-down workloads")
    parser.add_argument("--only", choices=("main", "sweeps", "offline"), help="one part only")
    parser.add_argument(
        "--model", choices=[m for m, _, _ in SETTINGS], help="main tables: this model's setting only (default both)"
    )
    parser.add_argument(
        "--sweep", action="append", choices=tuple(SWEEPS), help="sweeps: this one only (repeatable; default all)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object (the tables as data) instead of markdown"
    )
    args = parser.parse_args(argv)
    if args.json and args.out != "-":
        parser.error("--json prints to stdout; leave out --out")
    workloads = QUICK if args.quick else PAPER
    seeds = list(range(args.seeds))
    settings = [s for s in SETTINGS if args.model in (None, s[0])]
    out = io.StringIO() if args.json else sys.stdout if args.out == "-" else open(args.out, "w")
    started = time.perf_counter()
    found: dict = {"seeds": seeds, "quick": args.quick}
    try:
        print(
            f"<!-- python -m kvtheory.cluster.report --seeds {args.seeds}{' --quick' if args.quick else ''} -->",
            file=out,
        )
        if args.only in (None, "main"):
            found["main"] = main_tables(workloads, seeds, out, settings)
            print("\nlbgr+rlt against cache-aware+lru (ahead = better; tie within 2%):\n", file=out)
            for line in found["main"]["verdicts"]:
                print(f"- {line}", file=out)
        if args.only in (None, "offline"):
            found["offline"] = offline_table(workloads, seeds, out)
        if args.only in (None, "sweeps"):
            found["sweeps"] = sweeps(workloads, seeds, out, args.sweep or tuple(SWEEPS))
        print(f"\n<!-- {time.perf_counter() - started:.0f} s -->", file=out)
    finally:
        if out is not sys.stdout:
            out.close()
    if args.json:
        found["seconds"] = round(time.perf_counter() - started, 1)
        json.dump(found, sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
