"""The embedded default job: every policy and the exact optimum, on a realistic shared-prefix workload
and on an adversarial one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvtheory.optimum.exact import solve_optimum
from kvtheory.policies import ONLINE_POLICIES
from kvtheory.ratio import RatioReport, competitive_ratio
from kvtheory.workloads.registry import generate


@dataclass(frozen=True)
class Scenario:
    """A generated workload and its budget: ``budget`` tokens, or None for a quarter of its distinct tokens."""

    title: str
    generator: str
    params: dict
    budget: int | None = None


SCENARIOS = (
    Scenario("realistic: GSP, random order, B = 1/4 of the distinct tokens", "gsp",
             {"groups": 24, "prompts": 8, "lengths": [256, 512, 1024, 2048], "order": "random"}),
    Scenario("adversarial: imbalanced (claim 4), B = 256, k = 2", "imbalanced", {"B": 256, "k": 2, "n": 600}, 256),
)  # fmt: skip


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    budget: int
    total_tokens: int
    distinct_tokens: int
    opt_misses: int
    reports: tuple[RatioReport, ...]


def run_scenario(
    scenario: Scenario, *, seed: int = 0, seeds: int = 10, evict_amount: str = "shortfall"
) -> ScenarioResult:
    """Every online policy (randomized ones over ``seeds`` seeds, evicting ``evict_amount``) against FIF on
    one scenario."""
    workload = generate(scenario.generator, scenario.params, seed=seed)
    distinct = workload.trie.distinct_tokens
    budget = scenario.budget or max(distinct // 4, workload.max_length)
    opt = solve_optimum(workload, budget)
    reports = tuple(
        competitive_ratio(
            workload, budget, name, seeds=range(seed, seed + seeds), optimum=opt, evict_amount=evict_amount
        )
        for name, cls in ONLINE_POLICIES.items()
        if not cls.block_engine  # vllm is no rule of section 1, whose optimum this compares with
    )
    return ScenarioResult(scenario, budget, workload.total_tokens, distinct, opt.misses, reports)


def run_demo(*, seed: int = 0, seeds: int = 10, evict_amount: str = "shortfall") -> list[ScenarioResult]:
    return [run_scenario(s, seed=seed, seeds=seeds, evict_amount=evict_amount) for s in SCENARIOS]


def demo_table(result: ScenarioResult) -> str:
    """A readable table: one row per policy, the optimum last."""
    lines = [
        result.scenario.title,
        f"  {result.total_tokens} tokens, {result.distinct_tokens} distinct, budget B = {result.budget}, "
        f"online policies evict the {result.reports[0].runs[0].evict_amount}",
        f"  {'policy':<12} {'seeds':>5} {'misses':>12} {'hit rate':>9} {'ratio/OPT':>10} {'95% CI':>20}",
    ]
    for report in result.reports:
        d = report.to_dict()
        hit_rate = 1 - d["misses_mean"] / d["tokens"]
        ci = f"[{d['ratio_ci95'][0]:.3f}, {d['ratio_ci95'][1]:.3f}]"
        lines.append(
            f"  {d['policy']:<12} {len(d['seeds']):>5} {d['misses_mean']:>12.1f} {hit_rate:>9.3f} "
            f"{d['ratio_mean']:>10.3f} {ci:>20}"
        )
    opt_hit_rate = 1 - result.opt_misses / result.total_tokens
    lines.append(f"  {'fif (OPT)':<12} {'':>5} {result.opt_misses:>12} {opt_hit_rate:>9.3f} {1.0:>10.3f}")
    return "\n".join(lines)


def demo_plot(results: list[ScenarioResult], path: str) -> None:
    """Write :func:`demo_figure` to ``path`` (PNG, PDF or SVG by its suffix)."""
    from kvtheory.experiments.plot import figure_format, save_figure

    figure_format(path)
    save_figure(demo_figure(results), path)


def demo_figure(results: list[ScenarioResult]):
    """One panel per scenario: each policy's ratio to OPT as a horizontal bar from OPT = 1, in the policy's
    colour, with its 95% confidence interval (a policy with seeds) and its value written at its end. The
    ratio axis starts just below 1, where the differences between the policies show (log where the ratios
    span 20x or more)."""
    from kvtheory.experiments.plot import figure_style, log_axis, policy_style, setting_text

    with figure_style() as plt:
        fig, axes = plt.subplots(1, len(results), figsize=(5.8 * len(results), 4.0), squeeze=False)
        for ax, result in zip(axes[0], results):
            dicts = [r.to_dict() for r in result.reports]
            names = [d["policy"] for d in dicts]
            means = np.array([d["ratio_mean"] for d in dicts])
            low = np.array([d["ratio_ci95"][0] for d in dicts])
            high = np.array([d["ratio_ci95"][1] for d in dicts])
            seeded = np.array([len(d["seeds"]) > 1 for d in dicts])
            # an interval only where there are seeds to have one (NaN: no bar, no cap)
            below = np.where(seeded, means - low, np.nan)
            above = np.where(seeded, high - means, np.nan)
            log = means.max() / max(means.min(), 1e-12) >= 20
            bars = ax.barh(
                names,
                means - 1,
                left=1.0,
                xerr=[below, above],
                color=[policy_style(n)["color"] for n in names],
                edgecolor="black",
                linewidth=0.6,
                height=0.7,
                error_kw={"elinewidth": 1.6, "capsize": 5, "capthick": 1.6, "ecolor": "black"},
                zorder=3,
            )
            ax.bar_label(bars, labels=[f"{m:.3f}" for m in means], padding=4, fontsize=8, zorder=4)
            ax.axvline(1.0, color="black", linewidth=1.2, linestyle="--", zorder=2)
            ax.invert_yaxis()  # the registry's order, top to bottom
            top = float(high.max())
            if log:
                ax.set_xscale("log")
                ax.set_xlim(1 / 1.15, top * 2.5)
                log_axis(ax.xaxis, 1 / 1.15, top * 2.5)
            else:
                span = max(top - 1, 1e-3)
                ax.set_xlim(1 - 0.04 * span, top + 0.16 * span)
            ax.set_xlabel("misses / OPT misses" + (" (log scale)" if log else "") + "; OPT (FIF) = 1, dashed")
            seeds = max(len(d["seeds"]) for d in dicts)
            ax.set_title(
                f"{result.scenario.title}\n"
                + setting_text(B=f"{result.budget:,}", beta=1, seeds=f"{seeds} per randomized policy")
                + f"; OPT: {result.opt_misses:,} misses"
            )
            ax.grid(False, axis="y")
        fig.tight_layout()
    return fig
