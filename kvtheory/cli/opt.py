"""``kvtheory opt --workload FILE --budget B [--batch BETA] [--solver exact|fif|highs|cbc] [--time-limit S] --json``;
with ``--workers M`` (and ``--gpu/--model``, or ``--budget`` with ``--a-miss/--a-cached``) the joint
routing + eviction makespan optimum on small instances, and its lower bounds on any.

Exit status: 0 with a result (``optimal``, or a bracket: ``time_limit`` / ``upper_bound``), 3 when a
solver found no solution within the time limit (the line on stderr says so), 2 for bad input, 130 when
Ctrl-C or SIGTERM stopped a MIP (the result printed is what it had: status ``interrupted``, incumbent and
bound if any; ``kvtheory.optimum.interrupt``).
"""

from __future__ import annotations

import argparse
import sys

from kvtheory.cli import options
from kvtheory.cli.common import (
    CLUSTER_OPTIONS,
    add_block_size_option,
    add_format_options,
    add_json_option,
    emit,
    load_workload,
    reject_unused,
)
from kvtheory.cli.route import add_cluster_options, build_cluster
from kvtheory.errors import InputError
from kvtheory.optimum.exact import DEFAULT_MIP_SOLVER, MIP_SOLVERS, fif_bracket, solve_optimum

SOLVERS = ("exact", "fif", *MIP_SOLVERS)
#: an older spelling still read: ``--solver mip`` was the MIP alone on CBC
ALIASES = {"mip": "cbc"}
#: the joint routing + eviction MIP's back end unless --solver names one (not measured against CBC: the
#: single-worker measurement of docs/optima.md does not carry over to another model)
JOINT_MIP_SOLVER = "highs"
NO_SOLUTION = 3
INTERRUPTED = 130


def register(parser) -> None:
    parser.add_argument("--workload", required=True, metavar="FILE", help="workload file (see --format)")
    add_format_options(parser)
    parser.add_argument("--budget", type=options.budget, metavar="B", help="cache budget B in tokens (per worker)")
    parser.add_argument("--batch", type=options.batch, default=1, metavar="BETA", help="batch size beta (default 1)")
    add_block_size_option(parser)
    parser.add_argument(
        "--solver",
        default="exact",
        help=f"exact (default: FIF at batch 1; at batch >= 2 FIF, a flow bound, then a MIP on {DEFAULT_MIP_SOLVER} "
        "started from FIF), fif (FIF alone: an upper bound at batch >= 2), highs or cbc (the MIP alone on that "
        f"back end); with --workers the joint MIP on the back end named ({JOINT_MIP_SOLVER} for exact and fif)",
    )
    parser.add_argument("--mip-solver", help=argparse.SUPPRESS)  # folded into --solver: refused with a hint
    parser.add_argument(
        "--formulation", default="edge", choices=("edge", "token"), help="with --solver highs|cbc: MIP formulation"
    )
    parser.add_argument(
        "--time-limit", type=options.seconds, default=None, metavar="SECONDS", help="limit on the whole solve"
    )
    parser.add_argument(
        "--workers", type=options.workers, metavar="M", help="several workers: the joint makespan optimum"
    )
    parser.add_argument(
        "--output-len", type=options.tokens, metavar="N", help="with --workers: output tokens per query"
    )
    parser.add_argument(
        "--method",
        choices=("auto", "mip", "bounds"),
        default="auto",
        help="with --workers: mip (the joint MIP within --time-limit), bounds (lower bounds only), auto (default: "
        "the MIP when the instance is small or --time-limit is given, else bounds)",
    )
    add_cluster_options(parser, budget=False)
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from kvtheory.optimum.interrupt import stoppable

    with stoppable():  # Ctrl-C / SIGTERM during a MIP: its incumbent and bound, status "interrupted"
        return _run(args)


def _run(args) -> int:
    if args.mip_solver is not None:
        raise InputError(
            f"--mip-solver is gone: --solver exact runs its MIP on {DEFAULT_MIP_SOLVER} (measured faster, "
            "docs/optima.md); --solver highs or --solver cbc runs the MIP alone on that back end"
        )
    args.solver = ALIASES.get(args.solver, args.solver)
    if args.solver not in SOLVERS:
        raise InputError(f"unknown solver {args.solver!r}; known solvers: {', '.join(SOLVERS)}")
    if args.workers is not None:
        if args.block_size != 1:
            raise InputError("--block-size applies to one worker: the joint makespan model caches tokens")
        return _several_workers(args)
    if args.budget is None:
        raise InputError("--budget is required (or --workers M with a cluster)")
    reject_unused(args, CLUSTER_OPTIONS, "without --workers")
    workload = load_workload(args)
    if args.solver in ("exact", "fif"):
        blocks = {"batch": args.batch, "block_size": args.block_size}
        if args.solver == "exact":
            result = solve_optimum(workload, args.budget, time_limit=args.time_limit, **blocks)
        else:
            result = fif_bracket(workload, args.budget, **blocks)
        record = {
            **result.to_dict(),
            "queries": len(workload),
            "tokens": workload.total_tokens,
            "hit_rate": 1 - result.misses / workload.total_tokens,
        }
    else:
        from kvtheory.optimum.mip import solve_mip

        if args.block_size != 1:
            blocks = f"at --block-size {args.block_size} use exact or fif"
            raise InputError(f"--solver {args.solver} runs the token MIP; {blocks}")

        record = solve_mip(
            workload,
            args.budget,
            batch=args.batch,
            solver=args.solver,
            time_limit=args.time_limit,
            formulation=args.formulation,
        ).to_dict()
    emit(record, args.json)
    return _exit_status(record, args)


def _exit_status(record: dict, args) -> int:
    """0; INTERRUPTED when a signal stopped the solver; NO_SOLUTION when it stopped without any solution
    within the time limit (each with one line on stderr)."""
    if record["status"] == "interrupted":
        print("kvtheory opt: interrupted; the result above is what the solver had", file=sys.stderr)
        return INTERRUPTED
    if record["status"] != "no_solution":
        return 0
    print(
        f"kvtheory opt: no solution found within the time limit ({args.time_limit} s); "
        f"the best lower bound is {record['bound']}",
        file=sys.stderr,
    )
    return NO_SOLUTION


def _several_workers(args) -> int:
    from kvtheory.cluster.optimum import optimum_or_bounds

    solver = JOINT_MIP_SOLVER if args.solver in ("exact", "fif") else args.solver  # the joint optimum is a MIP
    if args.batch != 1:
        raise InputError("the joint makespan model serves one query at a time (--batch 1)")
    cluster = build_cluster(args, args.workers)
    workload = load_workload(args)
    record = optimum_or_bounds(
        workload,
        cluster,
        output_len=args.output_len,
        solver=solver,
        time_limit=args.time_limit,
        formulation=args.formulation,
        method=args.method,
    )
    emit(record, args.json)
    return _exit_status(record, args)
