"""Real-trace scale: a 12,000-request, ~154M-token Mooncake-format trace of multi-turn conversations (the
chat-blocks generator, nothing downloaded); prints one JSON object.

    python benchmarks/traces.py --json            # full figures (about two minutes on 2 cores)
    python benchmarks/traces.py --json --quick    # a 1,200-request trace, for a smoke run

Figures: writing the trace; reading it (``read_workload(..., "mooncake")`` and the block-built trie) as a
whole process, with its CPU time (user + sys) and peak resident memory; every online policy (``kvtheory evict``) and FIF
(``kvtheory opt``) as whole processes at B = 2,000,000 tokens (a twelfth of the distinct tokens); and an
8-budget ``kvtheory mrc`` of lru, rlt and fif on 2 worker processes (the parent's peak memory; each
worker holds one copy of the workload).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from provenance import provenance
from whole_process import KVTHEORY, printing_peak
from whole_process import measure as measure_process

from kvtheory import read_workload, write_mooncake
from kvtheory.workloads import generate

POLICIES = ["lru", "token-lru", "rlt", "fifo", "random-leaf", "lfu"]
TRACE = {  # 2,000 conversations of 2..10 turns: 12,000 requests, 154,111,411 tokens
    "conversations": 2000,
    "turns": "2,4,6,8,10",
    "system_prompts": 16,
    "system_len": 4096,
    "user_len": 1800,
    "output_len": 400,
    "rate": 2.0,
}
BUDGET = 2_000_000

_READ = printing_peak(
    "import sys\nfrom kvtheory import read_workload\nworkload = read_workload(sys.argv[1], 'mooncake')\nworkload.trie\n"
)


def _process(program: str, argv: list[str], repeats: int) -> dict:
    """Median wall and CPU time of a whole Python process, and its peak resident memory."""
    run = measure_process(program, argv, repeats)
    return {
        "process_seconds": round(run.wall_seconds, 3),
        "process_cpu_seconds": round(run.cpu_seconds, 3),
        "process_peak_rss_mb": round(run.peak_rss_mb, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output anyway)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the conversations")
    parser.add_argument("--repeats", type=int, default=1, help="runs per process figure (median)")
    args = parser.parse_args()
    started = provenance()
    params = {**TRACE, "conversations": TRACE["conversations"] // (10 if args.quick else 1)}
    budget = BUDGET // (10 if args.quick else 1)
    report: dict = {"trace": params, "budget": budget}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "chat.jsonl")
        start = time.perf_counter()
        write_mooncake(generate("chat-blocks", {k: str(v) for k, v in params.items()}, seed=0), path)
        report["generate_and_write_seconds"] = round(time.perf_counter() - start, 3)
        start = time.perf_counter()
        workload = read_workload(path, "mooncake")
        trie = workload.trie
        report["read_in_process_seconds"] = round(time.perf_counter() - start, 3)
        report.update(
            requests=len(workload),
            tokens=workload.total_tokens,
            distinct_tokens=trie.distinct_tokens,
            radix_nodes=trie.n_nodes,
            file_mb=round(Path(path).stat().st_size / 2**20, 2),
        )
        report["read"] = _process(_READ, [path], args.repeats)
        common = ["--workload", path, "--budget", str(budget), "--json"]
        for name in POLICIES:
            report[name] = _process(KVTHEORY, ["evict", *common, "--policy", name], args.repeats)
        report["fif"] = _process(KVTHEORY, ["opt", *common], args.repeats)
        low = workload.max_length
        report["mrc"] = {
            "budgets": f"{low}:{trie.distinct_tokens}:8",
            "policies": "lru,rlt,fif",
            "workers": 2,
            **_process(
                KVTHEORY,
                ["mrc", "--workload", path, "--budget-range", f"{low}:{trie.distinct_tokens}:8"]
                + ["--policies", "lru,rlt,fif", "--workers", "2", "--json"],
                args.repeats,
            ),
        }
    report["provenance"] = started
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
