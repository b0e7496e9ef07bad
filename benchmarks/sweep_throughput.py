"""Sweep throughput: cells per second of the local executor (a process pool) against a plain loop.

    python benchmarks/sweep_throughput.py                        # examples/sweeps/ratios.toml, 2 workers
    python benchmarks/sweep_throughput.py --cells 60 --workers 2 # a stride sample of 60 cells, for a smoke run

Both sides run the very same cells with empty per-process caches (the pool forks from this process
after the caches are cleared): the loop calls ``run_cell`` on each cell in order in this process, told
the size of the sweep as ``run_cells`` tells it; the pool is ``run_cells`` with a ``LocalExecutor``
writing the JSON Lines file as a sweep does. Prints one JSON object: cells, wall seconds and cells/s of
each, the speed-up, the CPU seconds of each (the pool's workers included), whether both gave identical
records, and the load average before and after: other processes on a shared machine lower the wall-clock
figure, not the CPU one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import orjson
from provenance import provenance

from kvtheory.experiments import sweep
from kvtheory.experiments.executors import LocalExecutor
from kvtheory.experiments.grid import expand, load_spec
from kvtheory.experiments.sweep import run_cell, run_cells

ROOT = Path(__file__).resolve().parent.parent


def clear_caches() -> None:
    sweep._workload.cache_clear()
    sweep._optimum.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "examples" / "sweeps" / "ratios.toml"), help="TOML sweep spec")
    parser.add_argument("--workers", type=int, default=2, help="pool processes (default 2)")
    parser.add_argument("--cells", type=int, default=0, help="a stride sample of this many cells (0: all)")
    args = parser.parse_args()
    started = provenance()

    cells = expand(load_spec(args.spec), where=args.spec)
    if args.cells and args.cells < len(cells):
        step = len(cells) / args.cells
        cells = [cells[int(i * step)] for i in range(args.cells)]
    load_before = os.getloadavg()

    clear_caches()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.jsonl"
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        parent_cpu = time.process_time()
        executor = LocalExecutor(args.workers)
        try:
            start = time.perf_counter()
            run_cells(cells, out, executor, progress=False)
            pool_s = time.perf_counter() - start
        finally:
            executor.close()  # joins the workers, so their CPU time is in RUSAGE_CHILDREN
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        pool_cpu = (after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime) + (
            time.process_time() - parent_cpu
        )
        pool_lines = sorted(out.read_bytes().splitlines())

    clear_caches()
    start, loop_cpu = time.perf_counter(), time.process_time()
    loop_lines = sorted(
        orjson.dumps(run_cell(cell, job_cells=len(cells)), option=orjson.OPT_SERIALIZE_NUMPY) for cell in cells
    )
    loop_s, loop_cpu = time.perf_counter() - start, time.process_time() - loop_cpu

    print(
        json.dumps(
            {
                "spec": os.path.relpath(args.spec, ROOT),
                "cells": len(cells),
                "workers": args.workers,
                "cpus": len(os.sched_getaffinity(0)),
                "sequential_s": round(loop_s, 2),
                "sequential_cells_per_s": round(len(cells) / loop_s, 2),
                "local_pool_s": round(pool_s, 2),
                "local_pool_cells_per_s": round(len(cells) / pool_s, 2),
                "speedup": round(loop_s / pool_s, 2),
                "sequential_cpu_s": round(loop_cpu, 2),
                "local_pool_cpu_s": round(pool_cpu, 2),
                # wall-clock speed-up the pool would reach on idle cores: workers x (loop CPU / pool CPU)
                "idle_cores_speedup_bound": round(args.workers * loop_cpu / pool_cpu, 2),
                "identical_records": pool_lines == loop_lines,
                "load_avg_before": [round(x, 2) for x in load_before],
                "load_avg_after": [round(x, 2) for x in os.getloadavg()],
                "provenance": started,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
