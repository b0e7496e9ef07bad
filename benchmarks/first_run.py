"""A user's first run against a warm one: each policy's first ``kvtheory evict`` (and FIF's ``kvtheory opt``)
on the flat Zipf trace against the runs after it; prints one JSON object.

    python benchmarks/first_run.py --json --cache installed   # right after pip install -e . (the warm-up's cache)
    python benchmarks/first_run.py --json --cache empty       # no warm-up: numba compiles on the first run
    python benchmarks/first_run.py --json --requests 100000   # a smaller trace, for a smoke run

The trace is benchmarks/flat_trace.py's (1M one-token requests, Zipf 0.9 over 100,000 pages, B = 10,000).
``--cache empty`` points NUMBA_CACHE_DIR of each policy's processes at a new empty folder, so that its first
process compiles every kernel it runs, as it did before the install-time warm-up (the baseline);
``--cache installed`` leaves numba's cache where the install put it, so its first process is the first since
the install only when the benchmark runs right after it, in a fresh environment (docs/performance.md says how
the stored run was made). For each policy: the first process's wall and CPU seconds (user + sys), the median
of ``--repeats`` processes after it, and first / warm.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from flat_trace import POLICIES, write_traces, zipf_pages
from provenance import provenance
from whole_process import KVTHEORY
from whole_process import measure as measure_process


def _argv(policy: str, jsonl: str, budget: int) -> list[str]:
    command = ["opt", "--solver", "fif"] if policy == "fif" else ["evict", "--policy", policy]
    return [*command, "--workload", jsonl, "--budget", str(budget), "--json"]


def first_and_warm(argv: list[str], repeats: int) -> dict:
    """The first process of ``kvtheory *argv`` and the median of ``repeats`` after it, with their ratios."""
    first = measure_process(KVTHEORY, argv, 1)
    warm = measure_process(KVTHEORY, argv, repeats)
    misses = int(json.loads(warm.stdout)["misses"])
    assert int(json.loads(first.stdout)["misses"]) == misses, "a rerun must serve the same hits"
    return {
        "misses": misses,
        "first_seconds": first.wall_seconds,
        "first_cpu_seconds": first.cpu_seconds,
        "warm_seconds": warm.wall_seconds,
        "warm_cpu_seconds": warm.cpu_seconds,
        "first_over_warm": first.wall_seconds / warm.wall_seconds,
        "first_over_warm_cpu": first.cpu_seconds / warm.cpu_seconds,
    }


def measure(requests: int, budget: int, cache: str, repeats: int, policies: list[str]) -> dict:
    """The figures of the module docstring, one entry per policy."""
    report = {"trace": {"requests": requests, "pages": 100_000, "alpha": 0.9, "seed": 0}, "budget": budget}
    report.update(cache=cache, policies={})
    with tempfile.TemporaryDirectory() as folder:
        jsonl, _ = write_traces(zipf_pages(requests, 100_000, 0.9, seed=0), folder)
        for policy in policies:
            if cache == "empty":
                os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(dir=folder)
            entry = first_and_warm(_argv(policy, jsonl, budget), repeats)
            report["policies"][policy] = entry
            print(f"{policy}: first {entry['first_seconds']:.2f}s, warm {entry['warm_seconds']:.2f}s", file=sys.stderr)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    parser.add_argument("--cache", choices=("installed", "empty"), default="installed")
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=1, help="warm runs after the first (median reported)")
    parser.add_argument("--policies", default=",".join(POLICIES + ["fif"]), help="comma-separated")
    args = parser.parse_args()
    started = provenance()
    if args.cache == "installed" and "NUMBA_CACHE_DIR" in os.environ:
        parser.error("--cache installed measures numba's own cache: unset NUMBA_CACHE_DIR")
    report = measure(args.requests, args.budget, args.cache, args.repeats, args.policies.split(","))
    print(json.dumps({**report, "provenance": started}, indent=2))


if __name__ == "__main__":
    main()
