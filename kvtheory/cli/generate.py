"""``kvtheory generate NAME [--param key=value ...] [--seed S] [--format auto|kvtheory|mooncake] -o FILE.jsonl``."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import parse_params
from kvtheory.errors import InputError
from kvtheory.model.query import BlockQuery
from kvtheory.model.traces import write_mooncake
from kvtheory.model.workload import write_workload
from kvtheory.workloads.registry import GENERATORS, generate


def register(parser) -> None:
    parser.add_argument("name", nargs="?", help="generator or adversary name (see --list)")
    parser.add_argument("--param", action="append", metavar="KEY=VALUE", help="generator parameter (repeatable)")
    parser.add_argument("--seed", type=options.seed, default=0, help="random seed (default 0)")
    parser.add_argument("-o", "--output", type=options.output_file, metavar="FILE", help="output JSON Lines file")
    parser.add_argument(
        "--format",
        choices=("auto", "kvtheory", "mooncake"),
        default="auto",
        help="output format (default auto: mooncake for a block trace such as chat-blocks, else kvtheory)",
    )
    parser.add_argument("--list", action="store_true", help="list generators with their parameters")
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.list:
        import adversaries  # noqa: F401  (registers the adversary families)

        for name in sorted(GENERATORS):
            generator = GENERATORS[name]
            params = ", ".join(f"{p}={param.default!r}" for p, param in generator.parameters().items())
            print(f"{name:<14} {generator.kind:<9} {generator.summary}")
            print(f"{'':<24} {params}")
        return 0
    if not args.name or not args.output:
        raise InputError("generate needs a NAME and -o FILE (or --list)")
    workload = generate(args.name, parse_params(args.param), seed=args.seed)
    blocks = all(isinstance(q, BlockQuery) for q in workload)
    write = write_mooncake if args.format == "mooncake" or (args.format == "auto" and blocks) else write_workload
    try:
        write(workload, args.output)
    except OSError as exc:
        raise InputError(f"{args.output}: cannot write ({exc.strerror})") from None
    print(f"wrote {len(workload)} queries, {workload.total_tokens} tokens to {args.output}")
    return 0
