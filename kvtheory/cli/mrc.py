"""``kvtheory mrc --workload F [--format ...] (--budgets B1,B2,... | --budget-range LO:HI:N) --policies P1,P2,...
[--batch BETA] [--block-size b] [--seeds N] [--time-limit S] [--evict-amount shortfall|allocation] [--plot FIG.png]
[--method auto|one-pass|per-budget] [--executor local|dask] [--workers N] --json``: miss-ratio curves
(docs/formats.md §Miss-ratio curves)."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import (
    add_block_size_option,
    add_evict_amount_option,
    add_format_options,
    add_json_option,
    add_predictor_options,
    emit,
    load_workload,
    told_all,
)
from kvtheory.errors import InputError


def register(parser) -> None:
    parser.add_argument("--workload", required=True, metavar="FILE", help="workload file (see --format)")
    add_format_options(parser)
    budgets = parser.add_mutually_exclusive_group(required=True)
    budgets.add_argument("--budgets", metavar="B1,B2,...", help="the budgets B (tokens)")
    budgets.add_argument(
        "--budget-range", metavar="LO:HI:N", help="N budgets from LO to HI, log-spaced (multiples of --block-size)"
    )
    parser.add_argument(
        "--policies", required=True, metavar="P1,P2,...", help="online policies, and opt (or fif): OPT (e.g. lru,opt)"
    )
    parser.add_argument("--batch", type=options.batch, default=1, metavar="BETA", help="batch size beta (default 1)")
    add_block_size_option(parser)
    add_predictor_options(parser)
    parser.add_argument(
        "--seeds", type=options.runs, default=1, metavar="N", help="seeds 0..N-1 of randomized policies"
    )
    parser.add_argument(
        "--time-limit",
        type=options.seconds,
        metavar="SECONDS",
        help="at batch >= 2: the limit on each exact solve of OPT",
    )
    add_evict_amount_option(parser, where="the online policies (OPT evicts the shortfall): ")
    parser.add_argument(
        "--plot", metavar="FIG.png", help="also draw the curves against the budget (log x): FIG.png, .pdf or .svg"
    )
    parser.add_argument(
        "--y", choices=("miss-ratio", "hit-rate"), help="the plot's y axis: miss-ratio (default) or hit-rate"
    )
    parser.add_argument("--gpu", metavar="NAME", help="with --model: the plot's top axis in GiB of KV cache")
    parser.add_argument("--model", metavar="NAME", help="with --gpu: the model whose KV bytes per token convert")
    parser.add_argument(
        "--method",
        default="auto",
        choices=("auto", "one-pass", "per-budget"),
        help="all budgets in one pass where exact (auto, default), for every policy, or one run per budget",
    )
    parser.add_argument(
        "--executor", default="local", choices=("local", "dask"), help="local (process pool, default) or dask"
    )
    parser.add_argument(
        "--workers",
        type=options.workers,
        metavar="N",
        help="worker processes for the per-budget runs (default: every CPU when the runs are long enough to take the "
        "compiled engines, else this process; 1: this process; dask: the CPUs)",
    )
    add_json_option(parser)
    parser.set_defaults(run=run)


def _names(text: str, what: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise InputError(f"{what} is empty")
    return names


def _budgets(args) -> list[int]:
    from kvtheory.experiments.mrc import budget_range

    if args.budget_range:
        return budget_range(args.budget_range, args.block_size)
    try:
        return [int(b) for b in _names(args.budgets, "--budgets")]
    except ValueError:
        raise InputError(f"--budgets expects integers B1,B2,..., got {args.budgets!r}") from None


def _plot_options(args) -> dict:
    """Check the plot's options before any work; the cost model's KV bytes per token for --gpu/--model."""
    given = [flag for flag, value in (("--y", args.y), ("--gpu", args.gpu), ("--model", args.model)) if value]
    if not args.plot:
        if given:
            raise InputError(f"{given[0]} applies to the plot: give --plot FIG.png too")
        return {}
    from kvtheory.experiments.plot import figure_format

    figure_format(args.plot)
    if bool(args.gpu) != bool(args.model):
        raise InputError("--gpu and --model go together (the GiB axis needs both)")
    if not args.gpu:
        return {}
    from kvtheory.cluster.costmodel import cost_model_by_name

    cost = cost_model_by_name(args.gpu, args.model)
    return {
        "kv_bytes_per_token": cost.kv_bytes_per_token,
        "hardware": f"{cost.model} on {cost.gpu}",
        "gpu_budget": cost.budget,
    }


def run(args) -> int:
    from kvtheory.experiments.mrc import miss_ratio_curve

    budgets = _budgets(args)
    policies = told_all(list(dict.fromkeys(_names(args.policies, "--policies"))), args)
    hardware = _plot_options(args)
    workload = load_workload(args)
    result = miss_ratio_curve(
        workload,
        budgets,
        policies,
        batch=args.batch,
        seeds=args.seeds,
        executor=args.executor,
        workers=args.workers,
        time_limit=args.time_limit,
        evict_amount=args.evict_amount,
        block_size=args.block_size,
        method=args.method,
    )
    if args.plot:
        from kvtheory.experiments.plot import plot_mrc  # matplotlib's figure code, for a plot alone

        plot_mrc(result, args.plot, y=args.y or "miss-ratio", workload=args.workload, batch=args.batch,
                 seeds=args.seeds, **hardware)  # fmt: skip
    if args.json:
        emit(result, True)
    else:
        width = max(len(name) for name in policies)
        print(f"{'budget':>12}  " + "  ".join(f"{name:>{max(width, 8)}}" for name in policies))
        for i, budget in enumerate(result["budgets"]):
            rates = "  ".join(f"{result['hit_rate'][name][i]:>{max(width, 8)}.4f}" for name in policies)
            print(f"{budget:>12}  {rates}")
        for entry in result["infeasible"]:  # left out of the curve, with the reason
            print(f"{entry['budget']:>12}  infeasible: {entry['reason']}")
    return 0
