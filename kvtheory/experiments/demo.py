"""The embedded default job: every policy and the exact optimum on a shared-prefix workload."""

from __future__ import annotations

from dataclasses import dataclass

from kvtheory.policies import ONLINE_POLICIES
from kvtheory.ratio import RatioReport, competitive_ratio
from kvtheory.simulate import run_fif
from kvtheory.workloads.registry import generate

DEMO_WORKLOAD = {"groups": 24, "prompts": 8, "lengths": [256, 512, 1024, 2048], "order": "random"}


@dataclass(frozen=True)
class DemoResult:
    workload: dict
    budget: int
    distinct_tokens: int
    total_tokens: int
    opt_misses: int
    reports: tuple[RatioReport, ...]


def run_demo(*, seed: int = 0, seeds: int = 10, budget_fraction: float = 0.25) -> DemoResult:
    """GSP with ``DEMO_WORKLOAD`` (random order), B = ``budget_fraction`` of its distinct tokens;
    every online policy (randomized ones over ``seeds`` seeds) against FIF."""
    workload = generate("gsp", DEMO_WORKLOAD, seed=seed)
    distinct = workload.trie.distinct_tokens
    budget = max(int(distinct * budget_fraction), workload.max_length)
    opt = run_fif(workload, budget).misses
    reports = tuple(
        competitive_ratio(workload, budget, name, seeds=range(seed, seed + seeds), opt_misses=opt)
        for name in ONLINE_POLICIES
    )
    return DemoResult(DEMO_WORKLOAD, budget, distinct, workload.total_tokens, opt, reports)


def demo_table(result: DemoResult) -> str:
    """A readable table: one row per policy, the optimum last."""
    lines = [
        f"workload: gsp {result.workload}  tokens={result.total_tokens}  distinct={result.distinct_tokens}",
        f"budget B={result.budget} tokens (a quarter of the distinct tokens)",
        "",
        f"{'policy':<12} {'seeds':>5} {'misses':>12} {'hit rate':>9} {'ratio/OPT':>10} {'95% CI':>20}",
    ]
    for report in result.reports:
        d = report.to_dict()
        hit_rate = 1 - d["misses_mean"] / d["tokens"]
        ci = f"[{d['ratio_ci95'][0]:.3f}, {d['ratio_ci95'][1]:.3f}]"
        lines.append(
            f"{d['policy']:<12} {len(d['seeds']):>5} {d['misses_mean']:>12.1f} {hit_rate:>9.3f} "
            f"{d['ratio_mean']:>10.3f} {ci:>20}"
        )
    opt_hit_rate = 1 - result.opt_misses / result.total_tokens
    lines.append(f"{'fif (OPT)':<12} {'':>5} {result.opt_misses:>12} {opt_hit_rate:>9.3f} {1.0:>10.3f}")
    return "\n".join(lines)


def demo_plot(result: DemoResult, path: str) -> None:
    """Bar chart of each policy's ratio to OPT with its 95% confidence interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.policy for r in result.reports]
    dicts = [r.to_dict() for r in result.reports]
    means = [d["ratio_mean"] for d in dicts]
    errors = [
        [m - d["ratio_ci95"][0] for m, d in zip(means, dicts)],
        [d["ratio_ci95"][1] - m for m, d in zip(means, dicts)],
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar(names, means, yerr=errors, capsize=4, color="#4C72B0")
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="OPT (FIF)")
    ax.set_ylabel("misses / OPT misses")
    ax.set_title(f"Eviction policies vs the exact optimum (B = {result.budget} tokens)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
