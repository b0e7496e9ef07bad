"""Miss-ratio curves (docs/formats.md §Miss-ratio curves): hit rate against the budget B for every policy and
the optimum, one (budget, policy) pair per task on a process pool or Dask, like sweeps.

For each budget B and policy P the value is exactly that of the single run: ``run_policy(workload, B, P,
batch=beta, seed=s, evict_amount=a)`` (misses averaged over the seeds of a randomized policy), and for OPT
(listed as ``fif``) FIF's misses at beta = 1 and the exact solver's (:func:`kvtheory.optimum.exact.solve_optimum`) at
beta >= 2. The hit rate is hits / T (for OPT 1 - misses / T), as those runs report it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kvtheory.errors import InputError
from kvtheory.experiments.executors import make_executor
from kvtheory.experiments.sweep import progress_bar
from kvtheory.model.batches import validate
from kvtheory.model.workload import Workload
from kvtheory.optimum.exact import solve_optimum
from kvtheory.optimum.fif import run_fif
from kvtheory.policies import policy_class
from kvtheory.policies.base import check_evict_amount
from kvtheory.simulate import run_policy

OPT = "fif"


def budget_range(text: str) -> list[int]:
    """``LO:HI:N``: N budgets from LO to HI, evenly spaced on a log scale, rounded (repeats dropped).

    >>> budget_range("100:10000:3")
    [100, 1000, 10000]
    """
    parts = text.split(":")
    try:
        low, high, count = (int(p) for p in parts)
    except ValueError:
        raise InputError(f"--budget-range expects LO:HI:N (integers), got {text!r}") from None
    if not (len(parts) == 3 and 1 <= low <= high and count >= 1):
        raise InputError(f"--budget-range {text!r}: need 1 <= LO <= HI and N >= 1")
    if count == 1:
        return [low]
    points = np.geomspace(low, high, count)
    return sorted({int(round(b)) for b in points} | {low, high})


def _cell(task: tuple) -> tuple[int, str, float, float, str | None]:
    """(budget index, policy, misses, hit rate, OPT's status) of one budget and policy, computed as the
    single ``evict`` (hits / T, its mean over seeds) and ``opt`` (1 - misses / T) runs compute them."""
    workload, index, budget, policy, batch, seeds, time_limit, evict_amount = task
    if policy == OPT:
        if batch == 1:
            misses, status = run_fif(workload, budget).misses, "optimal"
        else:
            result = solve_optimum(workload, budget, batch=batch, time_limit=time_limit)
            misses, status = result.misses, result.status
        return index, policy, misses, 1 - misses / workload.total_tokens, status
    runs = [run_policy(workload, budget, policy, batch=batch, seed=s, evict_amount=evict_amount) for s in seeds]
    if len(runs) == 1:
        return index, policy, runs[0].misses, runs[0].hit_rate, None
    return index, policy, float(np.mean([r.misses for r in runs])), float(np.mean([r.hit_rate for r in runs])), None


def miss_ratio_curve(
    workload: Workload,
    budgets: Sequence[int],
    policies: Sequence[str],
    *,
    batch: int = 1,
    seeds: int = 1,
    executor: str = "local",
    workers: int | None = None,
    progress: bool | None = None,
    time_limit: float | None = None,
    evict_amount: str = "shortfall",
) -> dict:
    """``{"budgets", "hit_rate": {policy: [...]}, "misses": {policy: [...]}}`` over ``budgets`` (sorted); with OPT
    among the policies, ``opt_status`` says per budget whether its value is proven optimal.

    Randomized policies run with seeds 0..seeds-1 and report the mean misses; deterministic ones run once.
    ``time_limit`` (seconds) bounds each exact solve at beta >= 2, as ``kvtheory opt --time-limit`` does.
    ``evict_amount``: the online policies evict the shortfall or the whole allocation (the result records
    it); OPT evicts the shortfall.
    Every budget is validated first (each must hold the longest query, and every batch's footprint).
    """
    budgets = sorted(set(budgets))
    if not budgets or not policies:
        raise InputError("a miss-ratio curve needs at least one budget and one policy")
    if seeds < 1:
        raise InputError(f"--seeds must be at least 1, got {seeds}")
    check_evict_amount(evict_amount)
    for name in policies:
        if name != OPT:
            policy_class(name)
    for budget in budgets:
        validate(workload, budget, batch)
    _ = workload.trie  # built once here, shipped with the workload to every task
    tasks = []
    for index, budget in enumerate(budgets):
        for name in policies:
            randomized = name != OPT and policy_class(name).randomized
            seeds_here = range(seeds if randomized else 1)
            tasks.append((workload, index, budget, name, batch, seeds_here, time_limit, evict_amount))
    misses: dict[str, list] = {name: [None] * len(budgets) for name in policies}
    hit_rate: dict[str, list] = {name: [None] * len(budgets) for name in policies}
    status: list = [None] * len(budgets)
    runner = make_executor(executor, workers=workers)
    try:
        with progress_bar(len(tasks), 0, progress) as bar:
            futures = [runner.submit(_cell, task, f"mrc-{task[1]}-{task[3]}") for task in tasks]
            for future in runner.as_completed(futures):
                index, name, value, rate, opt_status = future.result()
                misses[name][index] = value
                hit_rate[name][index] = rate
                if name == OPT:
                    status[index] = opt_status
                bar.update(1)
    finally:
        runner.close()
    result = {"budgets": budgets, "evict_amount": evict_amount, "hit_rate": hit_rate, "misses": misses}
    if OPT in policies:
        result["opt_status"] = status
    return result


def plot_mrc(result: dict, path: str | Path, title: str | None = None) -> None:
    """Hit rate against the budget (log x) per policy, OPT dashed on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name, rates in result["hit_rate"].items():
        optimum = name == OPT
        ax.plot(
            result["budgets"],
            rates,
            linestyle="--" if optimum else "-",
            marker="" if optimum else "o",
            markersize=4,
            color="black" if optimum else None,
            linewidth=2.0 if optimum else 1.3,
            label="OPT" if optimum else name,
            zorder=3 if optimum else 2,
        )
    ax.set_xscale("log")
    ax.set_xlabel("budget B (tokens)")
    ax.set_ylabel("hit rate")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the plot ({exc.strerror})") from None
    finally:
        plt.close(fig)


__all__ = ["OPT", "budget_range", "miss_ratio_curve", "plot_mrc"]
