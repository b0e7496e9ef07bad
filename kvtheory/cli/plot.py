"""``kvtheory plot results.jsonl -o FIG.png [--x k|B|PARAM] [--metric ratio|steady] [--family NAME] [--where K=V]``."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import parse_params
from kvtheory.errors import InputError


def register(parser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="JSON Lines written by kvtheory sweep")
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        type=options.output_file,
        metavar="FIG",
        help="image file to write (PNG, SVG, PDF)",
    )
    parser.add_argument(
        "--x",
        default="k",
        help="x axis: k (default), B, batch, a workload parameter, or eta (the ratio against the error of the "
        "predictions, eta / OPT, for policies that follow predictions; docs/predictions.md)",
    )
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


def claim_curves() -> list:
    """The bounds the claims state that the figure does not draw already (k, H_k, 2 H_k are on every panel),
    as curves on the panels of the family that realises them: e.g. claim 4's k (B + 1) / (k + 1) for ``lru``
    on ``imbalanced``. The claims registry is a layer above the experiments, so it is read here, and
    each bound is evaluated exactly per record (B, beta, k, L_max = (B - k + 1) / beta, n, OPT)."""
    from kvtheory.experiments.plot import BoundCurve
    from proofs_check.claims import all_claims
    from proofs_check.symbols import H, UndefinedBound, evaluate, k, show

    drawn = (k, H(k), 2 * H(k))  # compared as sympy expressions (structurally)
    curves = []
    for claim in all_claims():
        if claim.adversary is None or claim.bound in drawn:
            continue

        def value(record, bound=claim.bound):
            try:
                return float(evaluate(bound, _symbol_values(record)))
            except (UndefinedBound, TypeError, ValueError, ZeroDivisionError):
                return None

        label = f"{claim.id} ({', '.join(claim.policies)}, {claim.kind}): {show(claim.bound)}"
        curves.append(BoundCurve(label, claim.adversary, claim.policies, value))
    return curves


def _symbol_values(record) -> dict:
    import sympy as sp

    from proofs_check.symbols import OPT, B, L, beta, k, n

    values = {B: record.get("budget"), beta: record.get("batch", 1), k: record.get("k")}
    values[n] = record.get("queries")
    values[OPT] = record.get("opt_misses")
    if values[k] is not None and values[B] is not None and values[beta]:
        values[L] = sp.Rational(values[B] - values[k] + 1, values[beta])
    return {symbol: value for symbol, value in values.items() if value is not None}


def run(args) -> int:
    from kvtheory.experiments.plot import plot_results
    from kvtheory.experiments.sweep import read_results

    if args.x == "eta":
        return _plot_eta(args)
    summary = plot_results(
        read_results(args.results),
        args.output,
        x=args.x,
        metric=args.metric,
        families=args.family,
        where=parse_params(args.where),
        scale=args.scale,
        bounds=claim_curves(),
    )
    print(
        f"plot written to {args.output}: {len(summary['panels'])} panel(s) ({', '.join(summary['panels'])}), "
        f"{summary['series']} series, {summary['points']} points"
        + (f"; claims' bounds: {', '.join(dict.fromkeys(summary['bounds']))}" if summary["bounds"] else "")
    )
    return 0


def _plot_eta(args) -> int:
    from kvtheory.experiments.eta_plot import plot_eta
    from kvtheory.experiments.sweep import read_results

    if args.metric != "ratio" or args.scale != "auto":
        raise InputError("--x eta plots the ratio on its own scales; --metric and --scale do not apply")
    summary = plot_eta(read_results(args.results), args.output, families=args.family, where=parse_params(args.where))
    print(
        f"plot written to {args.output}: {len(summary['panels'])} panel(s) ({', '.join(summary['panels'])}), "
        f"{summary['series']} series against eta / OPT, {summary['points']} points, "
        f"{summary['lines']} policies without predictions as lines"
    )
    return 0
