"""Single-worker performance on the paper-size GSP workload; prints one JSON object.

    python benchmarks/run.py --json            # full figures (a few minutes on 2 cores)
    python benchmarks/run.py --json --quick    # a smaller GSP, for a smoke run
    python benchmarks/run.py --json --flat-requests 0   # without the flat 1M-request Zipf trace

Figures: for each online policy and FIF, the in-process simulation time (median of --repeats runs)
and tokens/second on the whole workload at B = a quarter of its distinct tokens, on the engine ``backend="auto"``
chooses (``engine``) and on each engine ("python": the per-edge class; "compiled": its core, where it has
one), with the same misses; the wall and CPU
time (user + sys) and peak resident memory of the whole ``kvtheory evict`` / ``kvtheory opt`` process
reading the JSON Lines file; and a straightforward per-token reference simulation of the same policy
(kvtheory.reference: a dict of token nodes, one step per token) run on a slice of the workload, scaled to
the whole by tokens, with the speed-up of the fast path over it and whether both agree hit for hit on the slice.
Then, in the same run, the flat Zipf trace of benchmarks/flat_trace.py (1M one-token requests, every policy
and FIF as whole processes against libCacheSim's C LRU on the same requests), under "flat_trace".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from functools import partial

from flat_trace import POLICIES as FLAT_POLICIES
from flat_trace import measure as measure_flat_trace
from provenance import provenance
from whole_process import KVTHEORY
from whole_process import measure as measure_process

from kvtheory import run_fif, run_policy, write_workload
from kvtheory.policies import policy_class
from kvtheory.policies.base import KernelServed
from kvtheory.policies.dispatch import long_enough, policy_object
from kvtheory.reference import ReferenceAuthorsRLT, reference_run
from kvtheory.reference.core import token_lists
from kvtheory.workloads import generate

POLICIES = ["lru", "token-lru", "rlt", "rlt-authors", "fifo", "random-leaf", "lfu"]


def _reference_hits(workload, budget: int, name: str) -> list[int]:
    """The per-token reference's hits; rlt-authors' reference keeps SGLang's radix nodes instead (the same
    draws from the same seed, so its hits are comparable one for one)."""
    if name != "rlt-authors":
        return reference_run(workload, budget, name, seed=0)
    policy = ReferenceAuthorsRLT(token_lists(workload), budget, seed=0)
    return [h for j in range(len(workload)) for h in policy.serve([j])]


def _median_time(function, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _process(argv: list[str], repeats: int) -> dict:
    """Median wall and CPU time of a whole CLI process, and its peak resident memory."""
    run = measure_process(KVTHEORY, argv, repeats)
    return {
        "process_seconds": run.wall_seconds,
        "process_cpu_seconds": run.cpu_seconds,
        "process_peak_rss_mb": run.peak_rss_mb,
    }


def _run(workload, budget: int, name: str, seed: int = 0, backend: str = "auto"):
    if name == "fif":
        return run_fif(workload, budget, backend=backend)
    return run_policy(workload, budget, name, seed=seed, backend=backend)


def _engine(workload, budget: int, name: str) -> str:
    """The engine ``backend="auto"`` takes for the run of ``name`` over ``workload``, as the dispatcher chooses it
    (FIF: from the run's length, as ``run_fif`` asks it)."""
    if name == "fif":
        return "compiled" if long_enough(len(workload)) else "python"
    made = policy_object(policy_class(name), workload.trie, budget, seed=0)
    return "compiled" if isinstance(made, KernelServed) else "python"


def _by_engine(workload, budget: int, name: str, repeats: int) -> tuple[dict, dict]:
    """The in-process time (median of ``repeats``) of the run on each engine, and each engine's result; an error
    if their misses differ."""
    seconds, results = {}, {}
    for backend in ("python", "compiled"):
        seconds[backend], results[backend] = _median_time(
            partial(_run, workload, budget, name, backend=backend), repeats
        )
    if results["python"].misses != results["compiled"].misses:
        raise SystemExit(f"{name}: the engines' misses differ: { ({k: r.misses for k, r in results.items()}) }")
    return seconds, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    parser.add_argument("--quick", action="store_true", help="a 16 x 8 GSP instead of the paper's 128 x 32")
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (median reported)")
    parser.add_argument("--slice", type=int, default=24, help="queries in the reference slice")
    parser.add_argument("--flat-requests", type=int, default=1_000_000, help="flat Zipf trace length (0: skip)")
    args = parser.parse_args()
    started = provenance()

    params = {"groups": 16, "prompts": 8} if args.quick else {}
    workload = generate("gsp", params, seed=0)
    distinct = workload.trie.distinct_tokens
    budget = distinct // 4
    piece = workload[: args.slice]
    piece_budget = max(piece.trie.distinct_tokens // 4, piece.max_length)
    report = {
        "workload": {"name": "gsp", "params": params or "paper defaults", "seed": 0},
        "queries": len(workload),
        "tokens": workload.total_tokens,
        "distinct_tokens": distinct,
        "budget": budget,
        "slice": {"queries": len(piece), "tokens": piece.total_tokens, "budget": piece_budget},
        "policies": {},
    }
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "gsp.jsonl")
        write_workload(workload, path)
        for name in POLICIES + ["fif"]:
            engine = _engine(workload, budget, name)
            engine_seconds, results = _by_engine(workload, budget, name, args.repeats)
            seconds, result = engine_seconds[engine], results[engine]  # the run "auto" makes
            if name == "fif":
                argv = ["opt", "--solver", "fif"]
            else:
                argv = ["evict", "--policy", name]
            cli = [*argv, "--workload", path, "--budget", str(budget), "--json"]
            fast_piece, fast_result = _median_time(partial(_run, piece, piece_budget, name), args.repeats)
            ref_seconds, ref_hits = _median_time(partial(_reference_hits, piece, piece_budget, name), 1)
            ref_scaled = ref_seconds * workload.total_tokens / piece.total_tokens
            entry = {
                "misses": result.misses,
                "hit_rate": result.hit_rate,
                "seconds": seconds,
                "engine": engine,
                "engine_seconds": engine_seconds,
                "tokens_per_second": workload.total_tokens / seconds,
                **_process(cli, args.repeats),
                "reference_slice_seconds": ref_seconds,
                "reference_scaled_seconds": ref_scaled,
                "speedup_vs_reference": ref_scaled / seconds,
                "fast_slice_seconds": fast_piece,
            }
            if name in ("rlt", "random-leaf"):
                entry["identical_to_reference_on_slice"] = "randomized: equal in distribution (tests)"
            else:
                entry["identical_to_reference_on_slice"] = fast_result.query_hits.tolist() == list(ref_hits)
            report["policies"][name] = entry
            print(f"{name}: {entry['seconds']:.3f}s", file=sys.stderr)
    if args.flat_requests:
        flat = measure_flat_trace(args.flat_requests, 100_000, 0.9, 10_000, args.repeats, FLAT_POLICIES + ["fif"])
        report["flat_trace"] = flat
    report["provenance"] = started
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
