"""``kvtheory demo [--plot FILE.png] [--seed S]``: the embedded default job."""

from __future__ import annotations

from kvtheory.experiments.demo import demo_plot, demo_table, run_demo


def register(commands) -> None:
    parser = commands.add_parser("demo", help="every policy and the optimum on an embedded workload, with a plot")
    parser.add_argument("--plot", default="kvtheory-demo.png", metavar="FILE", help="PNG to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the workload and the first run")
    parser.add_argument("--seeds", type=int, default=10, metavar="N", help="seeds per randomized policy")
    parser.set_defaults(run=run)


def run(args) -> int:
    result = run_demo(seed=args.seed, seeds=args.seeds)
    print(demo_table(result))
    demo_plot(result, args.plot)
    print(f"\nplot written to {args.plot}")
    return 0
