"""``kvtheory game worst --workload U --budget B --policy P --horizon H [--batch BETA] [--state-limit N] --json``,
``kvtheory game limit --workload U --budget B --policy P [--batch BETA] [--state-limit N] --json`` and
``kvtheory game best --workload U --budget B --horizon H [--batch BETA] (--deterministic | --randomized)
--json``: exact competitive analysis on a small universe (docs/game.md).

``worst`` prints the exact maximum of ALG/OPT (E[ALG]/OPT for a randomized policy) over every sequence of up to
H queries of the universe U (the workload's lines), as "p/q", with a witness sequence; ``limit`` a deterministic
policy's asymptotic ratio, with a cycle that reaches it; ``best`` the smallest worst ratio any deterministic
or randomized (an LP) online algorithm reaches up to H, at any batch size, both certificates re-checked. A
universe or horizon past the state limit is refused with one line (exit status 2) saying how many states it needed.
"""

from __future__ import annotations

import argparse
import sys

from kvtheory.cli.common import add_format_options, add_json_option, emit, load_workload, policy_names
from kvtheory.game.best import best_deterministic, check_strategies
from kvtheory.game.limit import LIMIT_NODES, limit
from kvtheory.game.randomized import best_randomized
from kvtheory.game.search import STATE_LIMIT, worst


def _positive(what: str, most: int):
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}") from None
        if not 1 <= value <= most:
            raise argparse.ArgumentTypeError(f"must be {what} (1 to {most}), got {text[:40]}")
        return value

    return parse


def _common(parser, state_limit: int, policy: bool = True) -> None:
    parser.add_argument("--workload", required=True, metavar="FILE", help="the universe: one candidate query per line")
    add_format_options(parser)
    parser.add_argument(
        "--budget", required=True, type=_positive("a budget in tokens", 1 << 20), metavar="B", help="budget B"
    )
    if policy:
        parser.add_argument("--policy", required=True, help=f"an online policy: {policy_names()}")
        parser.add_argument(
            "--batch", type=_positive("a batch size", 1000), default=1, metavar="BETA", help="batch size (default 1)"
        )
    parser.add_argument(
        "--state-limit",
        type=_positive("a number of states", 1 << 40),
        default=state_limit,
        metavar="N",
        help=f"refuse a search that needs more states (default {state_limit:,})",
    )
    add_json_option(parser)


def register(parser) -> None:
    modes = parser.add_subparsers(dest="mode", required=True, parser_class=type(parser))
    worst_parser = modes.add_parser(
        "worst", help="a policy's exact worst ratio over every sequence of up to H queries of the universe"
    )
    _common(worst_parser, STATE_LIMIT)
    worst_parser.add_argument(
        "--horizon", required=True, type=_positive("a number of queries", 1000), metavar="H", help="longest sequence"
    )
    worst_parser.add_argument(
        "--executor",
        choices=("local", "dask"),
        help="split the search by first batch over a process pool or Dask (default: one process)",
    )
    worst_parser.add_argument("--scheduler", metavar="ADDRESS", help="with --executor dask: the scheduler")
    worst_parser.add_argument("--workers", type=_positive("a number of workers", 1024), metavar="N", help="workers")
    worst_parser.set_defaults(run=run)
    limit_parser = modes.add_parser(
        "limit", help="a deterministic policy's asymptotic ratio: the maximum-ratio cycle of its finite game graph"
    )
    _common(limit_parser, LIMIT_NODES)
    limit_parser.set_defaults(run=run_limit)
    best_parser = modes.add_parser(
        "best", help="the smallest worst ratio any deterministic or randomized online algorithm reaches up to H"
    )
    _common(best_parser, STATE_LIMIT, policy=False)
    best_parser.add_argument(
        "--horizon", required=True, type=_positive("a number of queries", 1000), metavar="H", help="longest sequence"
    )
    best_parser.add_argument(
        "--batch",
        type=_positive("a batch size", 1000),
        default=1,
        metavar="BETA",
        help="batch size (default 1)",
    )
    kind = best_parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--deterministic", action="store_true", help="over deterministic online algorithms (a game)")
    kind.add_argument("--randomized", action="store_true", help="over randomized online algorithms (an LP)")
    best_parser.set_defaults(run=run_best)


def run(args) -> int:
    workload = load_workload(args)
    executor = None
    if args.executor is not None:
        from kvtheory.experiments.executors import make_executor

        executor = make_executor(args.executor, workers=args.workers, scheduler=args.scheduler)
    try:
        result = worst(
            workload,
            args.budget,
            args.policy,
            args.horizon,
            batch=args.batch,
            state_limit=args.state_limit,
            progress=sys.stderr.isatty() and executor is None,
            executor=executor,
        )
    finally:
        if executor is not None:
            executor.close()
    record = result.to_dict()
    if not args.json:
        record["sequence"] = " ".join(map(str, result.sequence))
    emit(record, args.json)
    return 0


def run_limit(args) -> int:
    workload = load_workload(args)
    result = limit(
        workload, args.budget, args.policy, batch=args.batch, state_limit=args.state_limit, progress=sys.stderr.isatty()
    )
    record = result.to_dict()
    if not args.json:
        record["prefix"] = " ".join(map(str, result.prefix))
        record["cycle"] = " ".join(map(str, result.cycle))
    emit(record, args.json)
    return 0


def run_best(args) -> int:
    workload = load_workload(args)
    if args.randomized:
        result = best_randomized(workload, args.budget, args.horizon, batch=args.batch, lp_limit=args.state_limit)
        emit(result.to_dict(), args.json)
        return 0
    result = best_deterministic(workload, args.budget, args.horizon, batch=args.batch, state_limit=args.state_limit)
    upper, lower = check_strategies(workload, args.budget, result)
    if not upper == lower == result.ratio:
        raise AssertionError(f"the strategies do not certify {result.ratio}: they give {upper} and {lower}")
    record = result.to_dict()
    record["certificate"] = "checked"
    emit(record, args.json)
    return 0
