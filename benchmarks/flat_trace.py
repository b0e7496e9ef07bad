"""Speed on many one-token queries: a flat 1M-request Zipf trace, every policy and FIF as whole processes
against libCacheSim's C LRU on the same requests; prints one JSON object.

    python benchmarks/flat_trace.py --json                   # 1,000,000 requests, Zipf 0.9 over 100,000 pages
    python benchmarks/flat_trace.py --json --requests 100000 # a smaller trace, for a smoke run

The trace is written as a JSON Lines workload of one-token queries {"tokens":[page]} (numpy's seeded
Zipf-like sampler: page p with probability proportional to 1/(p+1)^alpha) and, for libCacheSim, as an
oracleGeneral binary trace of the same requests (object size 1, so its byte budget is B tokens). For each
policy and FIF: the wall time and peak resident memory (VmHWM) of the whole ``kvtheory evict`` /
``kvtheory opt --solver fif`` process, numba's first-call compile included whenever its cache is cold
(``--cold`` empties it first), and the misses. libCacheSim (``pip install -e .[bench]``) is timed the
same way, as a whole process reading the binary trace, and inside that process its ``process_trace`` call
alone (``processing_seconds``); without it its entry says so. ``--read oracle-general`` gives kvtheory the
binary file libCacheSim reads instead of the JSON Lines one. Each process is
timed in wall seconds and in CPU seconds (user + sys): on a shared machine the CPU figure is the stable one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np
from provenance import provenance
from whole_process import KVTHEORY, Measured
from whole_process import measure as measure_process

POLICIES = ["lru", "token-lru", "fifo", "rlt", "rlt-authors", "random-leaf", "lfu"]

_LIBCACHESIM = (
    "import sys, time, libcachesim as lcs\n"
    "reader = lcs.TraceReader(sys.argv[1], lcs.TraceType.ORACLE_GENERAL_TRACE)\n"
    "wall, cpu = time.perf_counter(), time.process_time()\n"
    "ratio = lcs.LRU(int(sys.argv[2])).process_trace(reader)[0]\n"
    "wall, cpu = time.perf_counter() - wall, time.process_time() - cpu\n"
    "status = open('/proc/self/status').read()\n"
    "peak = [line for line in status.splitlines() if line.startswith('VmHWM')][0].split()[1]\n"
    "print(round(ratio * int(sys.argv[3])), wall, cpu)\n"
    "print(peak, file=sys.stderr)\n"
)


def zipf_pages(requests: int, pages: int, alpha: float, seed: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, pages + 1) ** alpha
    return np.random.default_rng(seed).choice(pages, size=requests, p=weights / weights.sum())


def write_traces(pages: np.ndarray, folder: str) -> tuple[str, str]:
    jsonl = os.path.join(folder, "flat.jsonl")
    with open(jsonl, "w") as handle:
        handle.write("".join(f'{{"tokens":[{p}]}}\n' for p in pages.tolist()))
    binary = os.path.join(folder, "flat.oracleGeneral")
    record = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rows = np.zeros(pages.size, dtype=record)
    rows["time"], rows["id"], rows["size"], rows["next"] = np.arange(pages.size), pages + 1, 1, -1
    rows.tofile(binary)
    return jsonl, binary


def libcachesim_lru(binary: str, budget: int, requests: int, repeats: int) -> dict:
    try:
        import libcachesim  # noqa: F401
    except ImportError:
        return {"available": False, "note": "libcachesim is not installed: pip install -e .[bench]"}
    run = measure_process(_LIBCACHESIM, [binary, str(budget), str(requests)], repeats)
    misses, wall, cpu = run.stdout.split()
    inside = {"processing_seconds": float(wall), "processing_cpu_seconds": float(cpu)}
    return {"available": True, "misses": int(misses), **_figures(run), **inside}


def _figures(run: Measured) -> dict:
    return {
        "process_seconds": run.wall_seconds,
        "process_cpu_seconds": run.cpu_seconds,
        "process_peak_rss_mb": run.peak_rss_mb,
    }


def kvtheory_process(argv: list[str], repeats: int) -> dict:
    """Median wall time, peak resident memory and misses of a whole ``kvtheory`` process."""
    run = measure_process(KVTHEORY, argv, repeats)
    return {"misses": int(json.loads(run.stdout)["misses"]), **_figures(run)}


def clear_numba_cache() -> None:
    """Remove numba's on-disk cache of kvtheory's compiled cores, so the next process compiles them."""
    import kvtheory

    for root, _, files in os.walk(os.path.dirname(kvtheory.__file__)):
        for name in files:
            if name.endswith((".nbi", ".nbc")):
                os.remove(os.path.join(root, name))


def measure(
    requests: int, pages: int, alpha: float, budget: int, repeats: int, policies: list[str], read: str = "jsonl"
) -> dict:
    """The flat-trace figures (see the module docstring); kvtheory reads the trace as ``read`` (its JSON Lines
    file, or the oracleGeneral binary libCacheSim reads)."""
    trace = zipf_pages(requests, pages, alpha, seed=0)
    report = {
        "trace": {"requests": requests, "pages": pages, "alpha": alpha, "seed": 0, "kvtheory_reads": read},
        "budget": budget,
        "cores": os.cpu_count(),
        "policies": {},
    }
    with tempfile.TemporaryDirectory() as folder:
        jsonl, binary = write_traces(trace, folder)
        report["libcachesim_lru"] = libcachesim_lru(binary, budget, requests, repeats)
        reference = report["libcachesim_lru"].get("process_seconds")
        reference_cpu = report["libcachesim_lru"].get("process_cpu_seconds")
        for name in policies:
            argv = ["opt", "--solver", "fif"] if name == "fif" else ["evict", "--policy", name]
            workload = jsonl if read == "jsonl" else binary
            entry = kvtheory_process([*argv, "--workload", workload, "--budget", str(budget), "--json"], repeats)
            if reference:
                entry["times_libcachesim_lru"] = entry["process_seconds"] / reference
                entry["cpu_times_libcachesim_lru"] = entry["process_cpu_seconds"] / reference_cpu
            report["policies"][name] = entry
            print(f"{name}: {entry['process_seconds']:.2f}s {entry['process_peak_rss_mb']:.0f} MB", file=sys.stderr)
    if "lru" in report["policies"] and "misses" in report["libcachesim_lru"]:
        report["lru_misses_equal_libcachesim"] = (
            report["policies"]["lru"]["misses"] == report["libcachesim_lru"]["misses"]
        )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--alpha", type=float, default=0.9)
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=1, help="runs per timing (median reported)")
    parser.add_argument("--policies", default=",".join(POLICIES + ["fif"]), help="comma-separated")
    parser.add_argument("--cold", action="store_true", help="empty numba's cache first (first-call compile timed)")
    parser.add_argument(
        "--read", choices=["jsonl", "oracle-general"], default="jsonl", help="the file kvtheory reads (default jsonl)"
    )
    args = parser.parse_args()
    started = provenance()
    if args.cold:
        clear_numba_cache()
    policies = args.policies.split(",")
    report = measure(args.requests, args.pages, args.alpha, args.budget, args.repeats, policies, args.read)
    print(json.dumps({**report, "provenance": started}, indent=2))


if __name__ == "__main__":
    main()
