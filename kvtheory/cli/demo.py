"""``kvtheory demo [--plot FILE.png] [--seed S] [--seeds N] [--evict-amount shortfall|allocation]``: the
embedded default job."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import add_evict_amount_option
from kvtheory.errors import InputError
from kvtheory.experiments.demo import demo_plot, demo_table, run_demo
from kvtheory.experiments.plot import figure_format


def register(parser) -> None:
    parser.add_argument(
        "--plot", default="kvtheory-demo.png", metavar="FILE", help="figure to write: FILE.png, .pdf or .svg"
    )
    parser.add_argument("--seed", type=options.seed, default=0, help="seed of the workloads and the first run")
    parser.add_argument("--seeds", type=options.runs, default=10, metavar="N", help="seeds per randomized policy")
    add_evict_amount_option(parser, where="the online policies: ")
    parser.set_defaults(run=run)


def run(args) -> int:
    figure_format(args.plot)  # before the runs: a file name the figure cannot have fails at once
    results = run_demo(seed=args.seed, seeds=args.seeds, evict_amount=args.evict_amount)
    print("\n\n".join(demo_table(result) for result in results))
    try:
        demo_plot(results, args.plot)
    except (OSError, ValueError) as exc:  # ValueError: matplotlib does not know the file's extension
        raise InputError(f"{args.plot}: cannot write the plot ({getattr(exc, 'strerror', None) or exc})") from None
    print(f"\nplot written to {args.plot}")
    return 0
