"""``kvtheory opt --workload FILE --budget B [--batch BETA] --solver fif|mip|highs [--time-limit S] --json``."""

from __future__ import annotations

from kvtheory.cli.common import add_json_option, add_workload_options, emit
from kvtheory.errors import InputError
from kvtheory.model.workload import read_workload
from kvtheory.simulate import run_fif

SOLVERS = ("fif", "mip", "highs")


def register(commands) -> None:
    parser = commands.add_parser("opt", help="exact offline optimum (FIF, or a MIP through PuLP)")
    add_workload_options(parser)
    parser.add_argument("--solver", default="fif", help="fif (exact, O(T log T)), mip (CBC) or highs")
    parser.add_argument("--formulation", default="edge", choices=("edge", "token"), help="MIP formulation")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS", help="MIP time limit")
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.solver not in SOLVERS:
        raise InputError(f"unknown solver {args.solver!r}; known solvers: {', '.join(SOLVERS)}")
    if args.time_limit is not None and args.time_limit <= 0:
        raise InputError(f"--time-limit must be positive, got {args.time_limit}")
    workload = read_workload(args.workload)
    if args.solver == "fif":
        result = run_fif(workload, args.budget, batch=args.batch)
        record = {"solver": "fif", "status": "optimal", **result.to_dict()}
        del record["policy"], record["seed"]
    else:
        from kvtheory.optimum.mip import solve_mip

        solver = "cbc" if args.solver == "mip" else "highs"
        result = solve_mip(
            workload,
            args.budget,
            batch=args.batch,
            solver=solver,
            time_limit=args.time_limit,
            formulation=args.formulation,
        )
        record = result.to_dict()
    emit(record, args.json)
    return 0
