"""``kvtheory trace-stats --workload F [--format ...] [--hash-block-size N] [--json]``.

A trace's size, distinct blocks, reuse, ideal hit rate (the infinite-cache bound) and the prefix-closure check
of its hash ids (docs/formats.md §Trace statistics; ``kvtheory.model.traces.stats``).
"""

from __future__ import annotations

from kvtheory.cli.common import add_format_options, add_json_option, emit, load_workload
from kvtheory.model.traces import detect_format
from kvtheory.model.traces.stats import trace_stats


def register(parser) -> None:
    parser.add_argument("--workload", required=True, metavar="FILE", help="workload or trace file (see --format)")
    add_format_options(parser)
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    workload = load_workload(args)
    fmt = detect_format(args.workload) if args.format == "auto" else args.format
    emit({"workload": args.workload, "format": fmt, **trace_stats(workload).to_dict()}, args.json)
    return 0
