"""Plots of sweep results: competitive ratio against k (or B, or any parameter) per policy.

One panel per workload family; per policy, the mean ratio at each x with its 95% interval (the per-run
ratios of every cell at that x pooled: policy seeds and instance seeds), and, for randomized policies,
every per-seed ratio as a faint dot (the seed-stability picture). The theoretical curves of docs/claims.md
are drawn in: k (deterministic lower bound, claims 2-3), 2 * H_k (RLT's upper bound, claim 5) and H_k
(the randomized lower bound, claim 6), against k when x is k, and as horizontal lines when the panel
has a single k. Matplotlib with the Agg backend: no display is needed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.records import show
from kvtheory.ratio import harmonic

METRICS = {"ratio": "ratios", "steady": "steady_ratios"}
_ALIASES = {"B": "budget", "beta": "batch"}
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")
_STYLES = ("-", "--", "-.", ":")


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
) -> dict:
    """Write the figure to ``path``; return {"panels": [...], "series": n, "points": n}.

    ``metric``: ``ratio`` (ALG / OPT) or ``steady`` ((ALG - D) / (OPT - D), D the compulsory misses).
    ``scale``: ``auto`` (log x when x spans >= 8x, log y when the ratios span >= 20x), ``linear``, ``log``.
    """
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    from kvtheory.stats import summarize

    panels = facets(chosen, x)
    if len(panels) > MAX_PANELS:
        raise InputError(
            f"{len(panels)} panels (one per family and setting of the parameters that vary besides x = {x!r}) "
            f"are too many: choose with --family NAME and --where KEY=VALUE, or another --x"
        )
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.0 * rows), squeeze=False)
    summary = {"panels": [], "series": 0, "points": 0}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (family, group) in enumerate(panels.items()):
        ax = axes[index // columns][index % columns]
        policies = sorted({r["policy"] for r in group}, key=_policy_order)
        all_x, all_y = [], []
        top = 0.0
        for number, policy in enumerate(policies):
            color = colors[number % len(colors)]
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
            low = means - np.array([s.ci[0] for s in stats])
            high = np.array([s.ci[1] for s in stats]) - means
            ax.errorbar(
                xs,
                means,
                yerr=[low, high],
                marker=_MARKERS[number % len(_MARKERS)],
                markersize=5,
                capsize=3,
                color=color,
                alpha=0.85,
                linestyle=_STYLES[number % len(_STYLES)],
                label=policy,
            )
            if randomized:
                dots_x = [v for v in xs for _ in by_x[v]]
                dots_y = [y for v in xs for y in by_x[v]]
                ax.scatter(dots_x, dots_y, s=6, alpha=0.25, color=color, linewidths=0)
            all_x.extend(xs)
            all_y.extend(means.tolist())
            top = max(top, float(np.max(means + high)))
            summary["series"] += 1
            summary["points"] += len(xs)
        reference = _theory(ax, group, x, all_x)
        log_x = scale == "log" or (scale == "auto" and _auto_log(all_x, 8))
        log_y = scale == "log" or (scale == "auto" and _auto_log(all_y, 20))
        if log_x and all(v > 0 for v in all_x):
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(ScalarFormatter())
        if log_y and all(v > 0 for v in all_y):
            ax.set_yscale("log", base=2)
            ax.yaxis.set_major_formatter(ScalarFormatter())
        if top > 0 and math.isfinite(top):
            # Keep the data in view: a theory curve far above every measured point (k on yao) runs off.
            bottom = ax.get_ylim()[0] if ax.get_yscale() == "log" else max(ax.get_ylim()[0], 0.0)
            ax.set_ylim(bottom, max(top, reference) * 1.12)
        constant = "" if family.endswith(")") else _constant_params(group, x)
        title = family + (f" ({constant})" if constant else "")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel({"k": "k = B - beta * L_max + 1", "budget": "B (tokens)", "B": "B (tokens)"}.get(x, x))
        ax.set_ylabel("misses / OPT misses" if metric == "ratio" else "(misses - D) / (OPT - D)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        summary["panels"].append(family)
    for index in range(len(panels), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot write the figure ({exc})") from None
    finally:
        plt.close(fig)
    return summary


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
    if _ALIASES.get(x, x) == "k":
        ks = [int(v) for v in xs if v >= 1]
        if not ks:
            return 0.0
        grid = (
            np.unique(np.geomspace(min(ks), max(ks), 64).round().astype(int)) if max(ks) > min(ks) else np.array(ks[:1])
        )
        for label, f, style in curves:
            ax.plot(grid, [f(int(k)) for k in grid], style, color="black", linewidth=1, alpha=0.7, label=label)
        return 2 * harmonic(max(ks))
    ks = {r.get("k") for r in group}
    if len(ks) == 1:
        (k,) = ks
        if k is not None and k >= 1:
            for label, f, style in curves:
                ax.axhline(f(k), linestyle=style, color="black", linewidth=1, alpha=0.7, label=f"{label} (k={k})")
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
