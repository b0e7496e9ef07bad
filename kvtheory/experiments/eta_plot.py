"""The figure of learning-augmented caching: each policy's ratio against the error of its predictions, eta / OPT
(docs/predictions.md), from a sweep's results (``kvtheory plot RESULTS -o FIG --x eta``).

One panel per workload family and setting (:func:`~kvtheory.experiments.plot.facets`). A policy that follows
predictions (records with ``eta_over_opt``) is one line through its cells told by the oracle and the noisy
predictors (x = the mean eta / OPT over the cell's seeds, y = the mean ratio with its 95% interval), and a
filled cross where the adversarial predictor told it. A policy without predictions (L-LRU, RLT, ...) does not
move with eta: it is a dotted horizontal line at its mean ratio; OPT is the black dashed line at 1. The x axis
is linear up to eta / OPT = 1 and logarithmic beyond (the oracle's eta is 0, a strong noise's is thousands).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from kvtheory.errors import InputError
from kvtheory.experiments.plot import (
    MAX_PANELS,
    facets,
    figure_format,
    figure_style,
    policy_style,
    save_figure,
    select,
)
from kvtheory.policies.predicted import SEPARATOR

ADVERSARIAL = "adversarial"


def base_name(record: Mapping) -> str:
    """The policy's registered name, without ``@predictor=noise``."""
    return record["policy"].split(SEPARATOR)[0]


def plot_eta(records: Iterable[Mapping], path: str | Path, *, families=None, where=None) -> dict:
    """Write the figure to ``path``; return {"panels", "series", "points", "lines"}."""
    figure_format(path)
    chosen = select(list(records), families=families, where=where)
    if not any("eta_over_opt" in r for r in chosen):
        raise InputError("no results to plot against eta: no record of a policy that follows predictions")
    panels = facets(chosen, "eta_over_opt")
    if len(panels) > MAX_PANELS:
        raise InputError(f"{len(panels)} panels are too many: choose with --family NAME and --where KEY=VALUE")
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    summary = {"panels": [], "series": 0, "points": 0, "lines": 0}
    with figure_style() as plt:
        fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.6 * rows), squeeze=False)
        for index, (panel, group) in enumerate(panels.items()):
            ax = axes[index // columns][index % columns]
            followed: dict[str, list[Mapping]] = defaultdict(list)
            plain: dict[str, list[float]] = defaultdict(list)
            for record in group:
                if "eta_over_opt" in record:
                    followed[base_name(record)].append(record)
                else:
                    plain[record["policy"]].append(record["ratio_mean"])
            for name, cells in sorted(followed.items()):
                style = policy_style(name) | {"markerfacecolor": "none"}
                for adversarial in (False, True):
                    points = sorted(
                        (r for r in cells if (r.get("predictor") == ADVERSARIAL) == adversarial),
                        key=lambda r: r["eta_over_opt"],
                    )
                    if not points:
                        continue
                    xs = [r["eta_over_opt"] for r in points]
                    ys = [r["ratio_mean"] for r in points]
                    low = [y - r["ratio_ci95"][0] for y, r in zip(ys, points)]
                    high = [r["ratio_ci95"][1] - y for y, r in zip(ys, points)]
                    look = style | {"linestyle": "none", "marker": "X", "markerfacecolor": style["color"]}
                    ax.errorbar(
                        xs, ys, yerr=[low, high], capsize=3,
                        label=f"{name}{SEPARATOR}{ADVERSARIAL}" if adversarial else name,
                        **(look if adversarial else style),
                    )  # fmt: skip
                    summary["series"] += 1
                    summary["points"] += len(xs)
            for name, ratios in sorted(plain.items()):
                style = policy_style(name)
                mean = sum(ratios) / len(ratios)
                ax.axhline(mean, color=style["color"], linestyle=":", linewidth=1.4, label=f"{name} (no predictions)")
                summary["lines"] += 1
            ax.axhline(1.0, color="black", linestyle="--", linewidth=1.2, label="OPT")
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_xlim(left=-0.2)  # eta >= 0: no negative decades
            ax.set_title(panel)
            ax.set_xlabel("\u03b7 / OPT (error of the predictions per optimal miss)")
            ax.set_ylabel("misses / OPT misses")
            ax.legend(fontsize=7, ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
            summary["panels"].append(panel)
        for index in range(len(panels), rows * columns):
            axes[index // columns][index % columns].set_visible(False)
        fig.tight_layout()
    save_figure(fig, path)
    return summary
