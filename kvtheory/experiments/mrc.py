"""Miss-ratio curves (docs/formats.md §Miss-ratio curves): hit rate against the budget B for every policy and
the optimum, one (budget, policy) pair per task on a process pool or Dask, like sweeps.

For each budget B and policy P the value is exactly that of the single run: ``run_policy(workload, B, P,
batch=beta, seed=s, evict_amount=a)`` (misses averaged over the seeds of a randomized policy), and for OPT
(listed as ``opt`` or ``fif``) FIF's misses at beta = 1 and the exact solver's
(:func:`kvtheory.optimum.exact.solve_optimum`) at beta >= 2, the solver that ran named per budget in
``opt_solver``. The hit rate is hits / T (for OPT 1 - misses / T), as those runs report it, and the miss
ratio is misses / T = 1 - hit rate. A budget that cannot serve the workload (a query longer than B, a batch
footprint over B) is left out of the curve and listed in ``infeasible`` with the reason. With blocks of b tokens
(docs/model.md §Blocks) every budget must be a multiple of b, and every run is the run at block size b: the tasks
serve the block-level workload once built, with B / b slots, and their misses are converted to tokens.

How each policy's curve is computed is chosen in one place, :func:`curve_methods`: ``one-pass`` (every budget
from one traversal by stack distances, :mod:`kvtheory.experiments.stack_mrc`; OPT's by FIF's priority stack on
one-token queries, :mod:`kvtheory.experiments.fif_stack`) where that is proven exact for the policy on this
workload, else ``per-budget`` (one task per budget, on the executor). Both give the same values.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

from kvtheory.errors import InputError
from kvtheory.experiments.executors import default_workers, make_executor, resolve
from kvtheory.experiments.stack_mrc import one_pass_blocker, stack_hits
from kvtheory.model.batches import validate
from kvtheory.model.blocks import block_budget, block_workload
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import run_fif
from kvtheory.policies import policy_class
from kvtheory.policies.base import check_evict_amount
from kvtheory.policies.dispatch import PREFER_COMPILED, job_backend
from kvtheory.simulate import run_policy
from kvtheory.stats import summarize

OPT = "fif"
#: the names that stand for the optimum in a list of policies
OPT_NAMES = ("fif", "opt")
#: how a curve is computed: ``auto`` (one pass where exact, else per budget), or either one for every policy
METHODS = ("auto", "one-pass", "per-budget")


def budget_range(text: str, multiple: int = 1) -> list[int]:
    """``LO:HI:N``: N budgets from LO to HI, evenly spaced on a log scale, rounded to the nearest multiple of
    ``multiple`` (the block size; LO and HI must be multiples of it), repeats dropped.

    >>> budget_range("100:10000:3")
    [100, 1000, 10000]
    >>> budget_range("16:1024:3", multiple=16)
    [16, 128, 1024]
    """
    parts = text.split(":")
    try:
        low, high, count = (int(p) for p in parts)
    except ValueError:
        raise InputError(f"--budget-range expects LO:HI:N (integers), got {text!r}") from None
    if not (len(parts) == 3 and 1 <= low <= high and count >= 1):
        raise InputError(f"--budget-range {text!r}: need 1 <= LO <= HI and N >= 1")
    if low % multiple or high % multiple:
        raise InputError(f"--budget-range {text!r}: LO and HI must be multiples of the block size {multiple}")
    if count == 1:
        return [low]
    points = np.geomspace(low, high, count)
    return sorted({multiple * int(round(b / multiple)) for b in points} | {low, high})


def _cell(task: tuple) -> tuple[int, str, float, float, tuple[str, str] | list[int] | None]:
    """(budget index, policy, misses, hit rate, OPT's (status, solver) or a seeded policy's misses per seed) of
    one budget and policy, computed as the single ``evict`` (hits / T, its mean over seeds) and ``opt``
    (1 - misses / T) runs compute them, on the job's engine ``backend`` (the same hits on either). ``block_size``
    is handed only to a policy that handles blocks itself, on the token workload; every other task's workload is
    already the block-level one."""
    shared, index, budget, policy, batch, seeds, time_limit, evict_amount, block_size, backend = task
    workload = resolve(shared)
    if policy in OPT_NAMES:
        if batch == 1:
            misses, status, solver = run_fif(workload, budget, backend=backend).misses, "optimal", "fif"
        else:
            from kvtheory.optimum.exact import solve_optimum  # the MIP's imports, for the batched runs alone

            result = solve_optimum(workload, budget, batch=batch, time_limit=time_limit)
            misses, status, solver = result.misses, result.status, result.solver
        return index, policy, misses, 1 - misses / workload.total_tokens, (status, solver)
    options = {"batch": batch, "evict_amount": evict_amount, "block_size": block_size, "backend": backend}
    runs = [run_policy(workload, budget, policy, seed=s, **options) for s in seeds]
    if len(runs) == 1:
        return index, policy, runs[0].misses, runs[0].hit_rate, None
    # several seeds: their misses in the last slot, for the 95% interval (misses_ci95, the plot's band)
    per_seed = [r.misses for r in runs]
    return index, policy, float(np.mean(per_seed)), float(np.mean([r.hit_rate for r in runs])), per_seed


def _in_tokens(cell: tuple, tokens_of, tokens: int) -> tuple:
    """A :func:`_cell` result of the block-level workload in tokens: misses through ``tokens_of``, the hit rate as
    the token run reports it (hits / T for a policy, their mean over seeds; 1 - misses / T for OPT)."""
    index, name, value, rate, extra = cell
    if tokens_of is None:
        return cell
    value = tokens_of(value)
    if name in OPT_NAMES:
        return index, name, value, 1 - value / tokens, extra
    if extra is None:
        return index, name, value, (tokens - value) / tokens, None
    per_seed = [tokens_of(m) for m in extra]
    return index, name, value, float(np.mean([(tokens - m) / tokens for m in per_seed])), per_seed


def curve_methods(served: Workload | None, policies: Sequence[str], method: str, batch: int, evict_amount: str) -> dict:
    """``{policy: "one-pass" | "per-budget"}``: ``auto`` takes the one pass exactly where it is proven exact
    (:func:`~kvtheory.experiments.stack_mrc.one_pass_blocker`), ``per-budget`` never, and ``one-pass`` for every
    policy, a policy where it is not exact being an InputError that says why."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    chosen = {}
    for name in policies:
        blocker = (
            "no query has a full block" if served is None else one_pass_blocker(name, served.trie, batch, evict_amount)
        )
        if method == "one-pass" and blocker:
            raise InputError(f"--method one-pass is not exact for {name}: {blocker}; use --method auto")
        chosen[name] = "one-pass" if method != "per-budget" and blocker is None else "per-budget"
    return chosen


def _one_pass(
    served: Workload, budgets: list[int], name: str, block_size: int, tokens_of, tokens: int, backend
) -> tuple:
    """(misses, hit rates) of ``name`` at every budget from one traversal (compiled when the curve's ``backend``
    is): the stack distances of :mod:`~kvtheory.experiments.stack_mrc`, or for OPT FIF's priority stack
    (:mod:`~kvtheory.experiments.fif_stack`); in tokens as the single runs report them."""
    compiled = backend == PREFER_COMPILED
    slots = [b // block_size for b in budgets]
    if name in OPT_NAMES:
        from kvtheory.experiments.fif_stack import fif_stack_hits

        hits = fif_stack_hits(served.trie, slots, compiled=compiled)
    else:
        hits = stack_hits(served.trie, slots, whole_node=name == "lru", compiled=compiled)
    misses = [int(served.total_tokens - h) for h in hits.tolist()]
    if tokens_of is not None:
        misses = [tokens_of(m) for m in misses]
    if name in OPT_NAMES:  # as _cell and _in_tokens compute OPT's, to the last bit
        return misses, [1 - m / tokens for m in misses]
    return misses, [(tokens - m) / tokens for m in misses]


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
    block_size: int = 1,
    method: str = "auto",
) -> dict:
    """``{"budgets", "hit_rate": {policy: [...]}, "miss_ratio": {policy: [...]}, "misses": {policy: [...]},
    "infeasible": [{"budget", "reason"}, ...]}`` over the feasible ``budgets`` (sorted); with OPT (``opt`` or
    ``fif``) among the policies, ``opt_status`` says per budget whether its value is proven optimal and
    ``opt_solver`` which solver gave it (``fif``, or ``mip:highs`` / ``mip:cbc`` when the MIP decided).

    Randomized policies run with seeds 0..seeds-1 and report the mean misses; deterministic ones run once.
    ``time_limit`` (seconds) bounds each exact solve at beta >= 2, as ``kvtheory opt --time-limit`` does.
    ``evict_amount``: the online policies evict the shortfall or the whole allocation (the result records
    it); OPT evicts the shortfall. ``block_size`` b: the cache holds whole blocks of b tokens (docs/model.md
    §Blocks); a budget that is not a multiple of b is an InputError, and validity is checked in blocks.
    Every budget is validated first (each must hold the longest query, and every batch's footprint): one
    that does not is reported in ``infeasible`` with the reason and left out; none feasible is an InputError.
    ``method`` (:data:`METHODS`): how each policy's curve is computed (:func:`curve_methods`; recorded in the
    result's ``method``); the per-budget tasks run on ``executor``'s ``workers`` processes when ``workers`` >= 2,
    in this process when it is 1, and by default (None) on a local pool of every CPU when the curve's runs are
    long enough to take the compiled engines and are more than one (the workers are forked and inherit the
    workload: no copy is sent), else in this process; on Dask (``executor="dask"``) of ``workers`` processes,
    by default the CPUs.
    """
    budgets = sorted(set(budgets))
    if not budgets or not policies:
        raise InputError("a miss-ratio curve needs at least one budget and one policy")
    if seeds < 1:
        raise InputError(f"--seeds must be at least 1, got {seeds}")
    check_evict_amount(evict_amount)
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    from kvtheory.policies import ONLINE_POLICIES, PREDICTIVE_POLICIES
    from kvtheory.policies.predicted import SEPARATOR

    for name in policies:
        if name in OPT_NAMES:
            continue
        if name not in ONLINE_POLICIES and name.split(SEPARATOR)[0] not in PREDICTIVE_POLICIES:
            raise ONLINE_POLICIES.unknown(name, also=[*PREDICTIVE_POLICIES, *OPT_NAMES])
        policy_class(name)  # a predictor that does not exist, or a noise it does not take: one line
    served, tokens_of, check = workload, None, lambda budget: validate(workload, budget, batch)
    if block_size != 1:
        for budget in budgets:
            block_budget(budget, block_size)
        view = block_workload(workload, block_size)
        served, tokens_of, check = view.workload, view.token_misses, lambda budget: view.validate(budget, batch)
    infeasible = []
    for budget in budgets:
        try:
            check(budget)
        except InputError as exc:
            infeasible.append({"budget": budget, "reason": str(exc)})
    if len(infeasible) == len(budgets):
        raise InputError(f"no budget can serve the workload; B = {budgets[-1]}: {infeasible[-1]['reason']}")
    budgets = [b for b in budgets if b not in {entry["budget"] for entry in infeasible}]
    if served is not None:
        _ = served.trie  # built once here, shipped with the workload to every task
    tokens = workload.total_tokens
    methods = curve_methods(served, policies, method, batch, evict_amount)
    # the engine of every run and traversal: the whole curve's (dispatch.job_backend), not one run's; the hits are
    # the same on either, and a curve long enough to repay loading numba loads it once for all of them. Its size is
    # what the engines step through: the block-level workload (B / b slots), once per run or one-pass traversal.
    randomized = {name for name in policies if name not in OPT_NAMES and policy_class(name).randomized}
    runs = sum(1 if methods[n] == "one-pass" else len(budgets) * (seeds if n in randomized else 1) for n in policies)
    stepped = workload if served is None else served
    backend = job_backend("auto", runs * len(stepped), runs * stepped.total_tokens)
    misses: dict[str, list] = {name: [None] * len(budgets) for name in policies}
    hit_rate: dict[str, list] = {name: [None] * len(budgets) for name in policies}
    status: list = [None] * len(budgets)
    solvers: list = [None] * len(budgets)
    for name in policies:
        if methods[name] == "one-pass":
            misses[name], hit_rate[name] = _one_pass(served, budgets, name, block_size, tokens_of, tokens, backend)
            if name in OPT_NAMES:  # FIF at beta = 1: the optimum
                status, solvers = ["optimal"] * len(budgets), ["fif"] * len(budgets)
    tasks = []
    for index, budget in enumerate(budgets):
        for name in policies:
            if methods[name] == "one-pass":
                continue
            if served is None:  # no query has a full block: every run misses every token, and nothing is served
                misses[name][index], hit_rate[name][index] = tokens, 0.0
                status[index], solvers[index] = "optimal", "fif"
                continue
            engine = name not in OPT_NAMES and policy_class(name).block_engine
            seeds_here = range(seeds if name in randomized else 1)
            common = (name, batch, seeds_here, time_limit, evict_amount)
            if engine:  # it handles blocks itself: the token workload, in tokens
                tasks.append(((workload, index, budget, *common, block_size), None))
            else:
                tasks.append(((served, index, budget // block_size, *common, 1), tokens_of))
    tasks = [((*task, backend), convert) for task, convert in tasks]
    if workers is None and executor == "local":  # a pool's start repays only runs that take the compiled engines
        workers = default_workers() if backend == PREFER_COMPILED and len(tasks) > 1 else 1
    intervals: dict[str, list] = {}
    for index, name, value, rate, opt_status in _run_cells(tasks, tokens, executor, workers, progress):
        misses[name][index] = value
        hit_rate[name][index] = rate
        if name in OPT_NAMES:
            status[index], solvers[index] = opt_status
        elif opt_status is not None:  # a randomized policy's misses per seed
            intervals.setdefault(name, [None] * len(budgets))[index] = list(summarize(opt_status).ci)
    miss_ratio = {name: [value / tokens for value in values] for name, values in misses.items()}
    result = {
        "budgets": budgets,
        "evict_amount": evict_amount,
        "block_size": block_size,
        "method": methods,
        "hit_rate": hit_rate,
        "miss_ratio": miss_ratio,
        "misses": misses,
        "infeasible": infeasible,
    }
    if intervals:
        result["misses_ci95"] = intervals
    if any(name in OPT_NAMES for name in policies):
        result["opt_status"] = status
        result["opt_solver"] = solvers
    return result


def _run_cells(tasks: list, tokens: int, executor: str, workers: int | None, progress: bool | None):
    """Each per-budget task's :func:`_cell` result in tokens (:func:`_in_tokens`), in completion order: on the
    executor, or in this process with the local executor when one worker is asked for (the same values either way:
    each task is a pure function of its arguments)."""
    if not tasks:
        return
    if executor == "local" and (workers == 1 or len(tasks) == 1):
        with _progress(len(tasks), progress) as done:
            for task, convert in tasks:
                yield _in_tokens(_cell(task), convert, tokens)
                done()
        return
    runner = make_executor(executor, workers=workers)
    try:
        shared = {}  # each workload once to every worker, however many cells take it
        for task, _ in tasks:
            if id(task[0]) not in shared:
                shared[id(task[0])] = runner.share(task[0])
        with _progress(len(tasks), progress) as done:
            futures = {
                runner.submit(_cell, (shared[id(task[0])], *task[1:]), f"mrc-{task[1]}-{task[3]}"): convert
                for task, convert in tasks
            }
            for future in runner.as_completed(list(futures)):
                yield _in_tokens(future.result(), futures[future], tokens)
                done()
    finally:
        runner.close()


@contextmanager
def _progress(total: int, progress: bool | None):
    """A function to call per finished task: it advances the sweeps' progress bar over ``total`` tasks when one is
    shown (``progress``; by default when stderr is a terminal), else does nothing, tqdm then never imported."""
    if not (sys.stderr.isatty() if progress is None else progress):
        yield lambda: None
        return
    from kvtheory.experiments.sweep import progress_bar

    with progress_bar(total, 0, True) as bar:
        yield lambda: bar.update(1)


__all__ = ["METHODS", "OPT", "OPT_NAMES", "budget_range", "curve_methods", "miss_ratio_curve"]
