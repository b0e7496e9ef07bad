"""``kvtheory ratio (--workload FILE | --adversary NAME [--param k=v]) --budget B --policy NAME [--seeds N]``."""

from __future__ import annotations

from kvtheory.cli.common import add_json_option, emit, parse_params
from kvtheory.errors import InputError
from kvtheory.model.workload import read_workload
from kvtheory.ratio import competitive_ratio
from kvtheory.workloads.registry import generate


def register(commands) -> None:
    parser = commands.add_parser("ratio", help="a policy's misses over the exact optimum (FIF)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", metavar="FILE", help="JSON Lines workload file")
    source.add_argument("--adversary", metavar="NAME", help="a generator or adversary family instead of a file")
    parser.add_argument("--param", action="append", metavar="KEY=VALUE", help="adversary parameter (repeatable)")
    parser.add_argument("--budget", required=True, type=int, metavar="B", help="cache budget B in tokens")
    parser.add_argument("--batch", type=int, default=1, metavar="BETA", help="batch size beta (default 1)")
    parser.add_argument("--policy", required=True, help="online policy name")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--seeds", type=int, default=1, metavar="N", help="randomized policies: N seeds")
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.seeds < 1:
        raise InputError(f"--seeds must be at least 1, got {args.seeds}")
    if args.workload:
        if args.param:
            raise InputError("--param goes with --adversary, not with --workload")
        workload = read_workload(args.workload)
    else:
        workload = generate(args.adversary, parse_params(args.param), seed=args.seed)
    report = competitive_ratio(
        workload, args.budget, args.policy, batch=args.batch, seeds=range(args.seed, args.seed + args.seeds)
    )
    emit(report.to_dict(), args.json)
    return 0
