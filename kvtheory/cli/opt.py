"""``kvtheory opt --workload FILE --budget B [--batch BETA] --solver fif|mip|highs [--time-limit S] --json``;
with ``--workers M`` (and ``--gpu/--model``, or ``--budget`` with ``--a-miss/--a-cached``) the joint
routing + eviction makespan optimum on small instances, and its lower bounds on any."""

from __future__ import annotations

import sys

from kvtheory.cli import options
from kvtheory.cli.common import CLUSTER_OPTIONS, add_json_option, emit, reject_unused
from kvtheory.cli.route import add_cluster_options, build_cluster
from kvtheory.errors import InputError
from kvtheory.model.workload import read_workload
from kvtheory.simulate import run_fif

SOLVERS = ("fif", "mip", "highs")


def register(commands) -> None:
    parser = commands.add_parser("opt", help="exact offline optimum (FIF, or a MIP through PuLP)")
    parser.add_argument("--workload", required=True, metavar="FILE", help="JSON Lines workload file")
    parser.add_argument("--budget", type=options.budget, metavar="B", help="cache budget B in tokens (per worker)")
    parser.add_argument("--batch", type=options.batch, default=1, metavar="BETA", help="batch size beta (default 1)")
    parser.add_argument("--solver", default="fif", help="fif (exact, O(T log T)), mip (CBC) or highs")
    parser.add_argument("--formulation", default="edge", choices=("edge", "token"), help="MIP formulation")
    parser.add_argument("--time-limit", type=options.seconds, default=None, metavar="SECONDS", help="MIP time limit")
    parser.add_argument(
        "--workers", type=options.workers, metavar="M", help="several workers: the joint makespan optimum"
    )
    parser.add_argument(
        "--output-len", type=options.tokens, metavar="N", help="with --workers: output tokens per query"
    )
    add_cluster_options(parser, budget=False)
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    """Ctrl-C or SIGTERM during a MIP solve: print what the solver had (status "interrupted",
    incumbent and bound if any) and exit 130 (``kvtheory.optimum.interrupt``)."""
    from kvtheory.optimum.interrupt import stoppable

    with stoppable():
        return _run(args)


def _finish(record: dict, as_json: bool) -> int:
    emit(record, as_json)
    if record.get("status") == "interrupted":
        print("kvtheory opt: interrupted; the result above is what the solver had", file=sys.stderr)
        return 130
    return 0


def _run(args) -> int:
    if args.solver not in SOLVERS:
        raise InputError(f"unknown solver {args.solver!r}; known solvers: {', '.join(SOLVERS)}")
    if args.workers is not None:
        return _several_workers(args)
    if args.budget is None:
        raise InputError("--budget is required (or --workers M with a cluster)")
    reject_unused(args, CLUSTER_OPTIONS, "without --workers")
    workload = read_workload(args.workload)
    if args.solver == "fif":
        result = run_fif(workload, args.budget, batch=args.batch)
        record = {"solver": "fif", "status": "optimal", **result.to_dict()}
        del record["policy"], record["seed"]
    else:
        from kvtheory.optimum.mip import solve_mip

        result = solve_mip(
            workload,
            args.budget,
            batch=args.batch,
            solver="cbc" if args.solver == "mip" else "highs",
            time_limit=args.time_limit,
            formulation=args.formulation,
        )
        record = result.to_dict()
    return _finish(record, args.json)


def _several_workers(args) -> int:
    from kvtheory.cluster.optimum import optimum_or_bounds

    if args.solver == "fif":
        args.solver = "mip"  # the joint optimum is a MIP; FIF stays the per-worker eviction inside it
    if args.batch != 1:
        raise InputError("the joint makespan model serves one query at a time (--batch 1)")
    cluster = build_cluster(args, args.workers)
    workload = read_workload(args.workload)
    record = optimum_or_bounds(
        workload,
        cluster,
        output_len=args.output_len,
        solver="cbc" if args.solver == "mip" else "highs",
        time_limit=args.time_limit,
        formulation=args.formulation,
    )
    return _finish(record, args.json)
