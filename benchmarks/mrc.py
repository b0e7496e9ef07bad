"""Miss-ratio curves of lru, fifo and fif over 8 budgets, before and after the one-pass method, and against the
peer KVCache.AI ``kvcache-simulator`` (C++ core) on the same budgets; prints one JSON object.

    python benchmarks/mrc.py --json            # a 2,000-conversation Mooncake-format trace and a 200k flat trace
    python benchmarks/mrc.py --json --quick    # a tenth of each, for a smoke run

Two traces: the Mooncake-format chat trace of benchmarks/traces.py (block ids of 512 tokens; the cache's block
size is 512 too, ``--block-size 512``, which is what the peer simulates) and a flat Zipf trace of one-token
queries. On each, ``kvtheory mrc`` of lru, fifo and fif over 8 log-spaced budgets runs as a whole process twice
in the same run: ``--method per-budget`` (before: one run per budget) and ``--method auto`` (after: one pass
where it is exact), both on ``--workers`` processes (by default the command's own choice); the after runs once
more in one process (``--workers 1``), whose CPU time is the fair figure against the peer's single thread.
``identical`` says whether the curves agree to the last miss, and ``method`` which method auto took per policy.
The peer runs its C++ batch core (fifo, lru, optimal) on the same trace and capacities (budget / 512 blocks; its
hit rates count the last half of the requests, so they are not compared) as a whole process, its C++ compiled
once before timing; without the package (``pip install kvcache-simulator``) or a C++ compiler its entry says so.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from provenance import provenance
from traces import TRACE
from whole_process import KVTHEORY, measure, printing_peak

from kvtheory import read_workload, write_mooncake
from kvtheory.experiments.mrc import budget_range
from kvtheory.workloads import generate

POLICIES = "lru,fifo,fif"
HASH_BLOCK = 512

_PEER = printing_peak(
    "import sys, json\n"
    "from kvcache_sim.trace import parse_trace_file\n"
    "from kvcache_sim.cpp_backend import run_cpp_sweep\n"
    "from kvcache_sim.simulator import warmup_requests_for_trace\n"
    "trace = parse_trace_file(sys.argv[1], block_size=int(sys.argv[2]))\n"
    "capacities = [int(c) for c in sys.argv[3].split(',')]\n"
    "warmup = warmup_requests_for_trace(trace, 0.5)\n"  # its own default; at 0 its core simulates nothing
    "result = run_cpp_sweep(\n"
    "    trace, capacities=capacities, policies=['fifo', 'lru', 'optimal'], warmup_requests=warmup\n"
    ")\n"
    "runs = sorted(result.results.items())\n"
    "print(json.dumps({'hit_rate': {f'{p}@{c}': r.hitRate for (p, c), r in runs}, 'warmup_requests': warmup,\n"
    "    'underfilled': [f'{p}@{c}' for (p, c), r in runs if r.measurementMode != 'fixed_window']}))\n"
)


def _figures(run) -> dict:
    return {
        "process_seconds": round(run.wall_seconds, 3),
        "process_cpu_seconds": round(run.cpu_seconds, 3),
        "process_peak_rss_mb": round(run.peak_rss_mb, 1),
    }


def kvtheory_mrc(path: str, budgets: list[int], block_size: int, workers: int | None, repeats: int) -> dict:
    """Before (per budget) and after (auto) as whole processes on ``workers`` (None: the command's default), the
    after also in one process (``--workers 1``: its CPU time against the peer's single thread), and whether
    they agree."""
    common = ["mrc", "--workload", path, "--budgets", ",".join(map(str, budgets)), "--policies", POLICIES]
    common += ["--format", "mooncake", "--hash-block-size", str(block_size), "--block-size", str(block_size)]
    common += ["--json"]
    chosen = [] if workers is None else ["--workers", str(workers)]
    before = measure(KVTHEORY, [*common, *chosen, "--method", "per-budget"], repeats)
    after = measure(KVTHEORY, [*common, *chosen, "--method", "auto"], repeats)
    alone = measure(KVTHEORY, [*common, "--workers", "1", "--method", "auto"], repeats)
    old, new, serial = (json.loads(run.stdout) for run in (before, after, alone))
    return {
        "before_per_budget": _figures(before),
        "after_auto": _figures(after),
        "after_auto_one_process": _figures(alone),
        "method": new["method"],
        "identical": all(
            run["misses"] == new["misses"] and run["hit_rate"] == new["hit_rate"] for run in (old, serial)
        ),
        "misses": new["misses"],
    }


def peer(path: str, block_size: int, capacities: list[int], repeats: int) -> dict:
    """KVCache.AI's kvcache-simulator on the same trace and capacities (blocks), or why it did not run."""
    try:
        from kvcache_sim.cpp_backend import ensure_cpp_simulator
    except ImportError:
        return {"available": False, "note": "kvcache-simulator is not installed: pip install kvcache-simulator"}
    try:
        ensure_cpp_simulator()  # its first-use C++ build, outside the timing
    except Exception as exc:  # noqa: BLE001 - any failure to build the peer is a note, not a benchmark failure
        return {"available": False, "note": f"kvcache-simulator's C++ core did not build: {exc}"}
    run = measure(_PEER, [path, str(block_size), ",".join(map(str, capacities))], repeats)
    # underfilled: the runs its core cut short (cache not full when measuring starts; no hit rate)
    return {"available": True, "capacities_blocks": capacities, **_figures(run), **json.loads(run.stdout)}


def flat_trace(folder: str, requests: int, pages: int) -> str:
    """benchmarks/flat_trace.py's Zipf trace (alpha 0.9, seed 0) as Mooncake-format lines of one 1-token block."""
    weights = 1.0 / np.arange(1, pages + 1) ** 0.9
    drawn = np.random.default_rng(0).choice(pages, size=requests, p=weights / weights.sum())
    path = os.path.join(folder, "flat.jsonl")
    with open(path, "w") as handle:
        handle.write(
            "".join(f'{{"timestamp":0,"input_length":1,"output_length":0,"hash_ids":[{p}]}}\n' for p in drawn.tolist())
        )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output anyway)")
    parser.add_argument("--quick", action="store_true", help="a tenth of each trace")
    parser.add_argument("--repeats", type=int, default=1, help="runs per process figure (median)")
    parser.add_argument(
        "--workers",
        type=int,
        help="worker processes of the per-budget runs (1: in the process; default: the command's own, a pool of "
        "every CPU for runs long enough)",
    )
    args = parser.parse_args()
    started = provenance()
    scale = 10 if args.quick else 1
    report: dict = {"policies": POLICIES, "workers": args.workers}
    with tempfile.TemporaryDirectory() as folder:
        chat = str(Path(folder) / "chat.jsonl")
        params = {**TRACE, "conversations": TRACE["conversations"] // scale}
        write_mooncake(generate("chat-blocks", {k: str(v) for k, v in params.items()}, seed=0), chat)
        flat = flat_trace(folder, 200_000 // scale, 20_000 // scale)
        for name, path, block in (("mooncake", chat, HASH_BLOCK), ("flat", flat, 1)):
            workload = read_workload(path, "mooncake", block)
            low = -(-workload.max_length // block) * block
            high = max(low, workload.trie.distinct_tokens // 2 // block * block)
            budgets = budget_range(f"{low}:{high}:8", block)
            report[name] = {
                "requests": len(workload),
                "tokens": workload.total_tokens,
                "distinct_tokens": workload.trie.distinct_tokens,
                "budgets": budgets,
                "block_size": block,
                "kvtheory": kvtheory_mrc(path, budgets, block, args.workers, args.repeats),
                "kvcache_simulator": peer(path, block, [b // block for b in budgets], args.repeats),
            }
    report["provenance"] = started
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
