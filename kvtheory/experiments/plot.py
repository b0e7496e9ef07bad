"""One figure style for every plot kvtheory draws, and the plots of sweep results.

The style (used by ``kvtheory plot``, ``kvtheory mrc --plot`` and ``kvtheory demo``): each policy has one
colour and one marker in every figure (:func:`policy_style`; OPT is black and dashed); a seeded series is
drawn with its 95% confidence band; tick labels never overlap (:func:`tidy_ticks`); axes start where the
data are, not at 0; every title names the setting (workload, B, beta, seeds); the output format is chosen
by the file's suffix, PNG, PDF or SVG (:func:`save_figure`). Matplotlib with the Agg backend: no display is
needed.

Sweep results (:func:`plot_results`): one panel per workload family; per policy, the mean ratio at each x
with its 95% interval (the per-run ratios of every cell at that x pooled: policy seeds and instance seeds),
and, for randomized policies, every per-seed ratio as a faint dot (the seed-stability picture). The
theoretical curves of docs/claims.md are drawn in: k (deterministic lower bound, claims 2-3), 2 * H_k (RLT's
upper bound, claim 5) and H_k (the randomized lower bound, claim 6), against k when x is k, and as
horizontal lines when the panel has a single k; and, given as :class:`BoundCurve` by the caller (the command
line builds them from the claims registry, a layer above this one), the bound a claim states for the
panel's family, e.g. k (B + 1) / (k + 1) for claim 4 on ``imbalanced``.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.records import show
from kvtheory.ratio import harmonic

METRICS = {"ratio": "ratios", "steady": "steady_ratios"}
_ALIASES = {"B": "budget", "beta": "batch"}

# -- the figure style ---------------------------------------------------------------------------------------
#: the optimum's name in results (``fif``; ``opt`` accepted too): black, dashed, no marker
OPT_NAMES = ("fif", "opt", "OPT")
#: one colour (Okabe-Ito and tab10, distinguishable in colour-blind vision) and marker per built-in policy
POLICY_STYLES = {
    "lru": ("#0072B2", "o"),
    "token-lru": ("#56B4E9", "s"),
    "rlt": ("#D55E00", "^"),
    "rlt-authors": ("#E69F00", "v"),
    "fifo": ("#009E73", "D"),
    "random-leaf": ("#CC79A7", "P"),
    "lfu": ("#8C564B", "X"),
    "blind-oracle": ("#9467BD", "*"),
    "predictive-marker": ("#2CA02C", "p"),
}
#: colours and markers of other policies (plug-ins), chosen by a hash of the name: the same in every figure
_SPARE_COLORS = ("#7F7F7F", "#BCBD22", "#17BECF", "#9467BD", "#F0E442", "#1F3A93", "#A0522D", "#2CA02C")
_SPARE_MARKERS = ("h", "*", "p", "<", ">", "8", "d", "H")
_LINESTYLES = ("-", "--", "-.", ":")
#: the file suffixes a figure can be written as (the format follows the suffix)
FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
#: matplotlib settings of every figure
RC = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": 150,
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
}


def policy_style(name: str) -> dict:
    """The colour, marker and line style of ``name`` in every figure (OPT: black, dashed, no marker)."""
    if name in OPT_NAMES:
        return {"color": "black", "marker": "", "linestyle": "--"}
    if name in POLICY_STYLES:
        color, marker = POLICY_STYLES[name]
        return {"color": color, "marker": marker, "linestyle": "-"}
    slot = zlib.crc32(name.encode())
    return {
        "color": _SPARE_COLORS[slot % len(_SPARE_COLORS)],
        "marker": _SPARE_MARKERS[(slot // 8) % len(_SPARE_MARKERS)],
        "linestyle": _LINESTYLES[1 + (slot // 64) % 3],
    }


def figure_format(path: str | Path) -> str:
    """The format of a figure file from its suffix (``png``, ``pdf``, ``svg``); InputError for any other."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(
            f"{path}: unknown figure format {suffix or '(no suffix)'!r}; the file name must end in {', '.join(FORMATS)}"
        )
    return FORMATS[suffix]


@contextmanager
def figure_style():
    """pyplot (Agg backend) with :data:`RC` in effect: ``with figure_style() as plt: ...``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        yield plt


def save_figure(fig, path: str | Path) -> None:
    """Tidy the ticks and write ``fig`` in the format its suffix names; close it. InputError if it cannot."""
    import matplotlib.pyplot as plt

    try:
        kind = figure_format(path)
        with plt.rc_context(RC):  # the fonts of SVG and PDF files are chosen when saving
            tidy_ticks(fig)
            fig.savefig(path, format=kind, dpi=RC["savefig.dpi"], bbox_inches="tight")
    except OSError as exc:
        raise InputError(f"{path}: cannot write the figure ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)


def log_axis(axis, low: float, high: float, *, base: int = 10) -> None:
    """A log axis over [low, high] labelled with matplotlib's engineering formatter (20k, 1M): at 1, 2 and 5
    times the powers of ``base`` when the data span a decade or two, at the powers alone beyond; no minor
    tick is labelled (minor labels are what collided: "3x10^4 4x10^4")."""
    from matplotlib.ticker import EngFormatter, LogLocator, NullFormatter, ScalarFormatter

    decades = math.log(max(high, low) / low, base) if low > 0 else 0.0
    if base == 10:
        subs = (1.0, 2.0, 3.0, 5.0) if decades < 0.6 else (1.0, 2.0, 5.0) if decades <= 2.2 else (1.0,)
        axis.set_major_formatter(EngFormatter(sep=""))
    else:
        subs = (1.0,)
        axis.set_major_formatter(ScalarFormatter())
    axis.set_major_locator(LogLocator(base=base, subs=subs))
    axis.set_minor_locator(LogLocator(base=base, subs="auto"))
    axis.set_minor_formatter(NullFormatter())


def overlapping_tick_labels(fig) -> list[tuple[str, str]]:
    """Pairs of visible major tick labels that overlap on any axis of ``fig`` (after drawing it)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pairs = []
    for ax in fig.axes:
        for axis in _axes_of(ax):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            for i in range(len(labels)):
                for j in range(i + 1, len(labels)):
                    if boxes[i].overlaps(boxes[j]):
                        pairs.append((labels[i].get_text(), labels[j].get_text()))
    return pairs


def _axes_of(ax):
    axes = [ax.xaxis, ax.yaxis]
    for child in ax.child_axes:  # secondary axes (the GiB axis of mrc)
        axes += [child.xaxis, child.yaxis]
    return axes


def tidy_ticks(fig, *, rounds: int = 4) -> None:
    """Make sure no two tick labels overlap. Where some do, labelled minor ticks lose their labels first (what
    matplotlib's log formatter writes between decades: "3x10^4 4x10^4"); then the axis gets fewer major
    ticks from matplotlib's own locators (MaxNLocator on a linear axis, LogLocator with fewer ticks on a
    log axis); the labels of a category axis (policy names) are turned across it instead. Up to ``rounds``
    rounds, each one draw."""
    from matplotlib.category import StrCategoryLocator
    from matplotlib.ticker import FixedLocator, LogLocator, MaxNLocator, NullFormatter

    for _ in range(rounds):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        crowded = False
        for ax in fig.axes:
            for axis in _axes_of(ax):
                majors = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
                minors = [t for t in axis.get_ticklabels(minor=True) if t.get_visible() and t.get_text()]
                boxes = [t.get_window_extent(renderer) for t in majors + minors]
                if not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]):
                    continue
                crowded = True
                count = max(2, len(majors) // 2)
                if minors:
                    axis.set_minor_formatter(NullFormatter())
                elif isinstance(axis.get_major_locator(), (FixedLocator, StrCategoryLocator)):
                    for label in majors:  # names, not numbers: all kept, written across the axis
                        label.set_rotation(90 if axis is getattr(axis.axes, "xaxis", None) else 0)
                        label.set_horizontalalignment("center")
                elif axis.get_scale() == "log":
                    axis.set_major_locator(LogLocator(base=getattr(axis.get_transform(), "base", 10), numticks=count))
                else:
                    axis.set_major_locator(MaxNLocator(nbins=count - 1))
        if not crowded:
            return


def series_band(ax, xs, low, high, color) -> None:
    """A seeded series' 95% confidence band."""
    ax.fill_between(xs, low, high, color=color, alpha=0.18, linewidth=0)


def setting_text(**values) -> str:
    """``B = 20,000-400,000, β = 1, seeds = 10``: the setting of a figure, the values that are not None."""
    names = {"beta": "\u03b2"}
    return ", ".join(f"{names.get(k, k)} = {v}" for k, v in values.items() if v not in (None, ""))


def span_text(values: Iterable[float]) -> str:
    """One value, or the range ``lo-hi`` of several: ``25,926``, ``20,000-400,000``."""
    values = sorted(set(values))
    if not values:
        return ""
    text = [f"{int(v):,}" if float(v).is_integer() else f"{v:g}" for v in (values[0], values[-1])]
    return text[0] if len(values) == 1 else f"{text[0]}\u2013{text[1]}"


@dataclass(frozen=True)
class BoundCurve:
    """A bound a claim states, drawn on the panels of ``family`` whose policies include one of ``policies``.

    ``value(record)`` is the bound on the ratio at one sweep record (None where it is undefined); the
    command line builds these from the claims registry (``proofs_check``), which this layer must not import.
    """

    label: str
    family: str
    policies: tuple[str, ...]
    value: Callable[[Mapping], float | None]


def field(record: Mapping, name: str):
    """A record's value for ``name``: a top-level field (``B`` = budget), else a workload parameter."""
    name = _ALIASES.get(name, name)
    if name in record and name not in ("params",):
        return record[name]
    return record.get("params", {}).get(name)


def select(
    records: Iterable[Mapping], *, families: Sequence[str] | None = None, where: Mapping[str, str] | None = None
) -> list[Mapping]:
    """Records without errors, of the given families, whose fields match ``where`` (compared as text)."""
    chosen = []
    for record in records:
        if "error" in record:
            continue
        if families and record.get("family") not in families:
            continue
        if where and any(str(field(record, key)) != value for key, value in where.items()):
            continue
        chosen.append(record)
    return chosen


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _policy_order(name: str) -> tuple[int, str]:
    """Registry order (lru, token-lru, rlt, ...), then unknown names alphabetically."""
    from kvtheory.policies import ONLINE_POLICIES

    order = list(ONLINE_POLICIES)
    return (order.index(name) if name in order else len(order), name)


def _auto_log(values: Sequence[float], spread: float) -> bool:
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    return len(positive) == len(values) and len(positive) > 1 and max(positive) / min(positive) >= spread


def plot_results(
    records: Iterable[Mapping],
    path: str | Path,
    *,
    x: str = "k",
    metric: str = "ratio",
    families: Sequence[str] | None = None,
    where: Mapping[str, str] | None = None,
    scale: str = "auto",
    bounds: Sequence[BoundCurve] = (),
) -> dict:
    """Write the figure to ``path`` (PNG, PDF or SVG by its suffix); return {"panels", "series", "points",
    "bounds"} (``bounds``: the labels of the claim curves drawn).

    ``metric``: ``ratio`` (ALG / OPT) or ``steady`` ((ALG - D) / (OPT - D), D the compulsory misses).
    ``scale``: ``auto`` (log x when x spans >= 8x, log y when the ratios span >= 20x), ``linear``, ``log``.
    ``bounds``: claims' bounds, each drawn on the panels of its family that show one of its policies.
    """
    figure_format(path)
    fig, summary = results_figure(
        records, x=x, metric=metric, families=families, where=where, scale=scale, bounds=bounds
    )
    save_figure(fig, path)
    return summary


def results_figure(
    records: Iterable[Mapping],
    *,
    x: str = "k",
    metric: str = "ratio",
    families: Sequence[str] | None = None,
    where: Mapping[str, str] | None = None,
    scale: str = "auto",
    bounds: Sequence[BoundCurve] = (),
):
    """The figure of :func:`plot_results` (not saved) and its summary."""
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if scale not in ("auto", "linear", "log"):
        raise InputError(f"unknown scale {scale!r}; known: auto, linear, log")
    records = list(records)
    known = sorted({r.get("family") for r in records if "error" not in r} - {None})
    unknown = [f for f in families or () if f not in known]
    if unknown:
        raise InputError(f"unknown family {', '.join(map(repr, unknown))}; the results hold: {', '.join(known)}")
    chosen = [r for r in select(records, families=families, where=where) if field(r, x) is not None]
    if not chosen:
        raise InputError(f"no results to plot (no error-free record with a value for x = {x!r} matches)")
    for record in chosen:
        value = field(record, x)
        if type(value) not in (int, float) or not math.isfinite(value):
            raise InputError(f"x = {x!r} must be numeric, but cell {record.get('cell')} has {show(value)}")

    from matplotlib.ticker import MaxNLocator

    from kvtheory.stats import summarize

    panels = facets(chosen, x)
    if len(panels) > MAX_PANELS:
        raise InputError(
            f"{len(panels)} panels (one per family and setting of the parameters that vary besides x = {x!r}) "
            f"are too many: choose with --family NAME and --where KEY=VALUE, or another --x"
        )
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    summary = {"panels": [], "series": 0, "points": 0, "bounds": []}
    with figure_style() as plt:
        fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 5.0 * rows), squeeze=False)
        for index, (family, group) in enumerate(panels.items()):
            ax = axes[index // columns][index % columns]
            policies = sorted({r["policy"] for r in group}, key=_policy_order)
            all_x, all_y = [], []
            top = 0.0
            for order, policy in enumerate(policies):
                # hollow markers, and each later series drawn thinner and smaller than the one before:
                # two policies with the same values (lru and token-lru often) both stay visible
                style = policy_style(policy) | {
                    "markerfacecolor": "none",
                    "markeredgewidth": 1.3,
                    "markersize": max(3.5, 7.5 - 1.0 * order),
                    "linewidth": max(1.0, 2.6 - 0.4 * order),
                }
                by_x: dict[float, list[float]] = defaultdict(list)
                randomized = False
                for record in (r for r in group if r["policy"] == policy):
                    # a ratio with OPT's misses all compulsory is infinite, written as null: left out
                    values = [v for v in record.get(METRICS[metric]) or () if _finite(v)]
                    by_x[float(field(record, x))].extend(values)
                    randomized |= bool(record.get("randomized"))
                xs = sorted(v for v in by_x if by_x[v])
                if not xs:
                    continue
                stats = [summarize(by_x[v]) for v in xs]
                means = np.array([s.mean for s in stats])
                low = np.array([s.ci[0] for s in stats])
                high = np.array([s.ci[1] for s in stats])
                if randomized and len(xs) > 1:  # a seeded policy's line: its band; else error bars
                    ax.plot(xs, means, label=policy, zorder=3 + order / 10, **style)
                    if np.any(high > low):
                        series_band(ax, xs, low, high, style["color"])
                else:  # (a deterministic policy's interval comes from instance seeds, if any)
                    ax.errorbar(
                        xs, means, yerr=[means - low, high - means], capsize=4, label=policy,
                        zorder=3 + order / 10, **style,
                    )  # fmt: skip
                if randomized:
                    dots_x = [v for v in xs for _ in by_x[v]]
                    dots_y = [y for v in xs for y in by_x[v]]
                    ax.scatter(dots_x, dots_y, s=6, alpha=0.3, color=style["color"], linewidths=0, zorder=2)
                all_x.extend(xs)
                all_y.extend(means.tolist())
                top = max(top, float(np.max(high)))
                summary["series"] += 1
                summary["points"] += len(xs)
            reference = _theory(ax, group, x, all_x)
            base_family = family.split(" (")[0]
            for curve in bounds:
                if curve.family == base_family and set(curve.policies) & set(policies):
                    height = _claim_curve(ax, curve, group, x)
                    if height is not None:
                        reference = max(reference, height)
                        summary["bounds"].append(curve.label)
            log_x = scale == "log" or (scale == "auto" and _auto_log(all_x, 8))
            log_y = scale == "log" or (scale == "auto" and _auto_log(all_y, 20))
            if log_x and all(v > 0 for v in all_x):
                ax.set_xscale("log", base=2)
                log_axis(ax.xaxis, min(all_x), max(all_x), base=2)
            if ax.get_xscale() == "linear" and all(float(v).is_integer() for v in all_x):
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # k, B, n: no 1.975 between 1 and 2
                if len(set(all_x)) == 1:
                    ax.set_xlim(all_x[0] - 1, all_x[0] + 1)
            if log_y and all(v > 0 for v in all_y):
                ax.set_yscale("log", base=2)
                log_axis(ax.yaxis, min(all_y), max(all_y), base=2)
            if top > 0 and math.isfinite(top):
                # Keep the data in view: a theory curve far above every measured point (k on yao) runs off.
                bottom = ax.get_ylim()[0]
                span = max(top, reference) - (bottom if ax.get_yscale() == "linear" else 0)
                ceiling = max(top, reference) * 1.12 if ax.get_yscale() == "log" else max(top, reference) + 0.08 * span
                ax.set_ylim(bottom, ceiling)
            constant = "" if family.endswith(")") else _constant_params(group, x)
            title = family + (f" ({constant})" if constant else "")
            ax.set_title(f"{title}\n{_panel_setting(group, x)}")
            ax.set_xlabel({"k": "k = B - \u03b2 L_max + 1", "budget": "B (tokens)", "B": "B (tokens)"}.get(x, x))
            ax.set_ylabel("misses / OPT misses" if metric == "ratio" else "(misses - D) / (OPT - D)")
            ax.grid(True, which="both", alpha=0.25)
            # below the panel, where it hides no point and no curve
            handles, labels = ax.get_legend_handles_labels()
            rank = {name: i for i, name in enumerate(policies)}  # the policies in registry order, then the bounds
            entries = sorted(zip(handles, labels), key=lambda e: rank.get(e[1], len(rank)))
            ax.legend(
                *zip(*entries), fontsize=7, ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False
            )
            summary["panels"].append(family)
        for index in range(len(panels), rows * columns):
            axes[index // columns][index % columns].set_visible(False)
        fig.tight_layout()
    return fig, summary


def _panel_setting(group: Sequence[Mapping], x: str) -> str:
    """B, beta and the seeds of one panel's records (what the panel's title does not say already)."""
    name = _ALIASES.get(x, x)
    budgets = {r["budget"] for r in group if isinstance(r.get("budget"), (int, float))}
    batches = {r["batch"] for r in group if isinstance(r.get("batch"), int)}
    policy_seeds = max((len(r.get("seeds") or ()) for r in group if r.get("randomized")), default=0)
    instances = len({show(r.get("params", {}).get("seed", r.get("seed"))) for r in group})
    return setting_text(
        B=None if name == "budget" else span_text(budgets),
        beta=None if name == "batch" else span_text(batches),
        seeds=f"{policy_seeds} per randomized policy" if policy_seeds else None,
        instances=instances if instances > 1 else None,
    )


def _claim_curve(ax, curve: BoundCurve, group: Sequence[Mapping], x: str) -> float | None:
    """Draw a claim's bound at the x of the panel's records; return its largest value (None: undefined)."""
    at: dict[float, list[float]] = defaultdict(list)
    for record in group:
        if record.get("policy") in curve.policies:
            value = curve.value(record)
            if value is not None and math.isfinite(value):
                at[float(field(record, x))].append(float(value))
    if not at:
        return None
    xs = sorted(at)
    ys = [float(np.mean(at[v])) for v in xs]
    if len(xs) == 1:  # one x: a line across the panel, as the other bounds at a single k
        ax.axhline(ys[0], color="#8B0000", linestyle=(0, (5, 1.5, 1, 1.5)), linewidth=1.3, label=curve.label)
        return ys[0]
    ax.plot(xs, ys, color="#8B0000", linestyle=(0, (5, 1.5, 1, 1.5)), linewidth=1.3, marker="_",
            markersize=9, label=curve.label, zorder=2.5)  # fmt: skip
    return max(ys)


#: more panels than this make an unreadable figure: the user is asked to choose
MAX_PANELS = 16


def facets(records: Sequence[Mapping], x: str) -> dict[str, list[Mapping]]:
    """One panel per family and per setting of the workload parameters that vary within it, so that no
    panel pools cells of different instances. Left out of the setting: the seed (seeds are samples of
    one setting), the x parameter itself, and a parameter that determines x one to one (``load`` of the
    ``batch`` family sets k), which x already shows.
    """
    by_family: dict[str, list[Mapping]] = defaultdict(list)
    for record in records:
        by_family[record["family"]].append(record)
    panels: dict[str, list[Mapping]] = {}
    for family, group in by_family.items():
        names = sorted({key for r in group for key in r.get("params", {})} - {"seed", _ALIASES.get(x, x)})
        varying = [n for n in names if len({_param(r, n) for r in group}) > 1 and not _same_as_x(group, n, x)]
        for record in group:
            setting = ", ".join(f"{n}={_param(record, n)}" for n in varying)
            panels.setdefault(f"{family} ({setting})" if setting else family, []).append(record)
    return panels


def _param(record: Mapping, name: str) -> str:
    return show(record.get("params", {}).get(name))


def _same_as_x(group: Sequence[Mapping], name: str, x: str) -> bool:
    """Whether workload parameter ``name`` and x determine each other on ``group`` (one to one)."""
    pairs = {(_param(r, name), show(field(r, x))) for r in group}
    return len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})


def _theory(ax, group: Sequence[Mapping], x: str, xs: Sequence[float]) -> float:
    """k, 2 H_k and H_k: curves against k, or lines at the panel's single k.

    Returns the height the y axis should at least show: 2 H_k at the largest k (0 without curves).
    """
    curves = (("k", lambda k: k, "--"), ("2 H_k", lambda k: 2 * harmonic(k), ":"), ("H_k", harmonic, "-."))
    if _ALIASES.get(x, x) == "k" and len({int(v) for v in xs if v >= 1}) > 1:
        ks = [int(v) for v in xs if v >= 1]
        grid = (
            np.unique(np.geomspace(min(ks), max(ks), 64).round().astype(int)) if max(ks) > min(ks) else np.array(ks[:1])
        )
        for label, f, style in curves:
            ax.plot(grid, [f(int(k)) for k in grid], style, color="dimgray", linewidth=1, label=label, zorder=1)
        return 2 * harmonic(max(ks))
    ks = {r.get("k") for r in group}
    if len(ks) == 1:
        (k,) = ks
        if k is not None and k >= 1:
            for label, f, style in curves:
                ax.axhline(f(k), linestyle=style, color="dimgray", linewidth=1, label=f"{label} (k={k})", zorder=1)
            return float(max(k, 2 * harmonic(k)))
    return 0.0


def _constant_params(group: Sequence[Mapping], x: str) -> str:
    """The parameters that one panel's records share (for its title)."""
    shared = None
    for record in group:
        items = {
            key: value for key, value in record.get("params", {}).items() if key != x and not isinstance(value, list)
        }
        shared = items if shared is None else {k: v for k, v in shared.items() if items.get(k) == v}
    return ", ".join(f"{k}={v}" for k, v in (shared or {}).items())


# -- miss-ratio curves --------------------------------------------------------------------------------------
MRC_Y = {"miss-ratio": "miss ratio (misses / tokens)", "hit-rate": "hit rate (hits / tokens)"}


def plot_mrc(
    result: Mapping,
    path: str | Path,
    *,
    y: str = "miss-ratio",
    workload: str | None = None,
    batch: int | None = None,
    seeds: int | None = None,
    kv_bytes_per_token: int | None = None,
    hardware: str | None = None,
    gpu_budget: int | None = None,
) -> None:
    """Draw a miss-ratio curve (``result`` of :func:`kvtheory.experiments.mrc.miss_ratio_curve`) to ``path``.

    ``y``: ``miss-ratio`` (default) or ``hit-rate``. The title names the workload, beta, the seeds and the
    budgets. With ``kv_bytes_per_token`` (the cost model's), a second x axis on top gives the budget in GiB
    of KV cache, and ``gpu_budget``, the tokens that fit on ``hardware``, is marked.
    """
    figure_format(path)
    fig = mrc_figure(
        result, y=y, workload=workload, batch=batch, seeds=seeds, kv_bytes_per_token=kv_bytes_per_token,
        hardware=hardware, gpu_budget=gpu_budget,
    )  # fmt: skip
    save_figure(fig, path)


def mrc_figure(
    result: Mapping,
    *,
    y: str = "miss-ratio",
    workload: str | None = None,
    batch: int | None = None,
    seeds: int | None = None,
    kv_bytes_per_token: int | None = None,
    hardware: str | None = None,
    gpu_budget: int | None = None,
):
    """The figure of :func:`plot_mrc`, not saved."""
    if y not in MRC_Y:
        raise InputError(f"unknown y {y!r}; known: {', '.join(MRC_Y)}")
    budgets = list(result["budgets"])
    with figure_style() as plt:
        fig, ax = plt.subplots(figsize=(6.4, 4.6))
        for name, rates in result["hit_rate"].items():
            values = _mrc_values(result, name, rates, y)
            points = [(b, v) for b, v in zip(budgets, values) if v is not None]
            if not points:
                continue
            optimum = name in OPT_NAMES
            xs, ys = zip(*points)
            ax.plot(xs, ys, markersize=4, linewidth=2.0 if optimum else 1.4, label="OPT" if optimum else name,
                    zorder=4 if optimum else 3, **policy_style(name))  # fmt: skip
            band = _mrc_band(result, name, y)
            if band:
                series_band(ax, *band, policy_style(name)["color"])
        ax.set_xscale("log")
        log_axis(ax.xaxis, min(budgets), max(budgets))
        ax.set_xlabel("budget B (tokens)")
        ax.set_ylabel(MRC_Y[y])
        if kv_bytes_per_token:
            per = kv_bytes_per_token / 2**30
            top = ax.secondary_xaxis("top", functions=(lambda b: b * per, lambda g: g / per))
            top.set_xscale("log")
            lo, hi = min(budgets) * per, max(budgets) * per
            log_axis(top.xaxis, lo, hi)
            from matplotlib.ticker import EngFormatter

            top.xaxis.set_major_formatter(EngFormatter(unit="", sep="", places=None))
            top.set_xlabel(f"KV cache (GiB){f', {hardware}' if hardware else ''}")
            if gpu_budget and min(budgets) <= gpu_budget <= max(budgets) * 1.5:
                ax.axvline(gpu_budget, color="gray", linewidth=1, linestyle=":",
                           label=f"B that fits: {span_text([gpu_budget])} tokens")  # fmt: skip
        ax.set_title(
            f"{'miss' if y == 'miss-ratio' else 'hit'}-ratio curve: {workload or 'workload'}\n"
            + setting_text(
                B=span_text(budgets),
                beta=batch,
                seeds=f"{seeds} per randomized policy" if seeds and seeds > 1 else seeds,
            )
            + (f", online policies evict the {result['evict_amount']}" if result.get("evict_amount") else "")
            + _infeasible_text(result.get("infeasible"))
        )
        ax.grid(True, which="both", alpha=0.25)
        # curves fall (miss ratio) or rise (hit rate) towards a plateau at large B: the opposite corner is free
        ax.legend(loc="upper right" if y == "miss-ratio" else "lower right")
        fig.tight_layout()
    return fig


def _mrc_values(result: Mapping, name: str, rates: Sequence, y: str) -> list:
    """Per budget, the miss ratio (``result["miss_ratio"]`` where given, else 1 - hit rate) or the hit rate;
    None where the budget has no value (an infeasible budget)."""
    if y == "hit-rate":
        return [r if _finite(r) else None for r in rates]
    given = (result.get("miss_ratio") or {}).get(name)
    if given is not None:
        return [r if _finite(r) else None for r in given]
    return [1 - r if _finite(r) else None for r in rates]


def _infeasible_text(infeasible) -> str:
    """The budgets left out of a curve because they cannot serve the workload (a line of the title)."""
    if not infeasible:
        return ""
    budgets = [entry["budget"] for entry in infeasible]
    shown = ", ".join(f"{b:,}" for b in budgets[:4]) + (", ..." if len(budgets) > 4 else "")
    return f"\nleft out, too small for the workload: B = {shown}"


def _mrc_band(result: Mapping, name: str, y: str):
    """(budgets, low, high): a seeded policy's 95% interval (``misses_ci95``) in the plot's unit, or None.
    misses / T is the miss ratio, so an interval of misses scales by miss_ratio / misses."""
    intervals = (result.get("misses_ci95") or {}).get(name)
    ratios = (result.get("miss_ratio") or {}).get(name)
    if not intervals or not ratios:
        return None
    rows = [
        (b, lo * r / m, hi * r / m)
        for b, c, r, m in zip(result["budgets"], intervals, ratios, result["misses"][name])
        if c is not None and r is not None and m
        for lo, hi in [c]
    ]
    if len(rows) < 2:
        return None
    budgets, low, high = (np.array(column, dtype=float) for column in zip(*rows))
    return (budgets, low, high) if y == "miss-ratio" else (budgets, 1 - high, 1 - low)
