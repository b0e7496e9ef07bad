"""The embedded default job: every policy and the exact optimum, on a realistic shared-prefix workload
and on an adversarial one."""

from __future__ import annotations

from dataclasses import dataclass

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
        for name in ONLINE_POLICIES
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
    """One panel per scenario: each policy's ratio to OPT with its 95% confidence interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4))
    for ax, result in zip(axes, results):
        dicts = [r.to_dict() for r in result.reports]
        means = [d["ratio_mean"] for d in dicts]
        below = [m - d["ratio_ci95"][0] for m, d in zip(means, dicts)]
        above = [d["ratio_ci95"][1] - m for m, d in zip(means, dicts)]
        ax.bar([d["policy"] for d in dicts], means, yerr=[below, above], capsize=4, color="#4C72B0")
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="OPT (FIF)")
        ax.set_yscale("log" if max(means) > 20 else "linear")
        ax.set_ylabel("misses / OPT misses")
        ax.set_title(result.scenario.title, fontsize=9)
        ax.tick_params(axis="x", labelrotation=30)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
