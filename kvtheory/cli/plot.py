"""``kvtheory plot results.jsonl -o FIG.png [--x k|B|PARAM] [--metric ratio|steady] [--family NAME] [--where K=V]``."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import parse_params


def register(commands) -> None:
    parser = commands.add_parser(
        "plot",
        help="plot sweep results: ratio against k (or B) per policy, with k, 2*H_k and H_k drawn in",
    )
    parser.add_argument("results", metavar="RESULTS", help="JSON Lines written by kvtheory sweep")
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        type=options.output_file,
        metavar="FIG",
        help="image file to write (PNG, SVG, PDF)",
    )
    parser.add_argument("--x", default="k", help="x axis: k (default), B, batch, or a workload parameter")
    parser.add_argument(
        "--metric",
        default="ratio",
        choices=("ratio", "steady"),
        help="ALG/OPT, or (ALG-D)/(OPT-D) without the compulsory misses D",
    )
    parser.add_argument("--family", action="append", metavar="NAME", help="only this family (repeatable)")
    parser.add_argument(
        "--where", action="append", metavar="KEY=VALUE", help="only records with this field (repeatable)"
    )
    parser.add_argument("--scale", default="auto", choices=("auto", "linear", "log"), help="axis scales")
    parser.set_defaults(run=run)


def run(args) -> int:
    from kvtheory.experiments.plot import plot_results
    from kvtheory.experiments.sweep import read_results

    summary = plot_results(
        read_results(args.results),
        args.output,
        x=args.x,
        metric=args.metric,
        families=args.family,
        where=parse_params(args.where),
        scale=args.scale,
    )
    print(
        f"plot written to {args.output}: {len(summary['panels'])} panel(s) ({', '.join(summary['panels'])}), "
        f"{summary['series']} series, {summary['points']} points"
    )
    return 0
