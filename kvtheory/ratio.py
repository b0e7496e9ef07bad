"""Competitive ratios on one worker: an online policy's misses over the exact optimum's.

OPT is :func:`kvtheory.optimum.exact.solve_optimum`: FIF at batch size 1, and at batch size >= 2 FIF
checked against a flow bound and, where they differ, a MIP. When a time limit stops the MIP, OPT is
only known to lie in [bound, misses], and the report gives the ratio's bracket.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kvtheory.errors import InputError
from kvtheory.model.batches import slack_fields
from kvtheory.model.blocks import block_workload
from kvtheory.model.workload import Workload
from kvtheory.optimum.exact import Optimum, solve_optimum
from kvtheory.policies import policy_class
from kvtheory.simulate import RunResult, run_seeds
from kvtheory.stats import summarize

#: seconds the exact optimum may take inside a ratio measurement (only a batched MIP can need them)
OPT_TIME_LIMIT = 60.0


def harmonic(k: int) -> float:
    """H_k = 1 + 1/2 + ... + 1/k (H_0 = 0).

    >>> round(harmonic(4), 4)
    2.0833
    """
    return math.fsum(1.0 / i for i in range(1, k + 1))


def steady_ratio(misses: float, opt_misses: int, compulsory: int) -> float:
    """The steady ratio (ALG - D) / (OPT - D), D the compulsory misses: the number of distinct token nodes
    the workload requests (``workload.trie.distinct_tokens``); 0/0 = 1 (both pay only D) and x/0 = inf.

    Every algorithm, the optimum included, misses each distinct token node the first time it is
    requested, so D is an additive constant of both costs; the asymptotic competitive ratio c of
    ALG <= c * OPT + b is the limit of this quantity, and it converges much faster than ALG / OPT
    when D is large compared with OPT's other misses (``yao`` at large k).

    >>> steady_ratio(12, 7, 3)   # LRU's 12 misses on a 3-page cycle of 12 requests, Belady's 7, D = 3
    2.25
    """
    if opt_misses - compulsory <= 0:
        return 1.0 if misses - compulsory <= 0 else float("inf")
    return (misses - compulsory) / (opt_misses - compulsory)


def ratio_of(misses: int, opt_misses: int) -> float:
    """ALG / OPT as a float (exact numbers, such as sympy rationals, divided first), with 0/0 = 1 (both
    free) and x/0 = inf."""
    if opt_misses == 0:
        return 1.0 if misses == 0 else float("inf")
    return float(misses / opt_misses)


@dataclass(frozen=True)
class RatioReport:
    """A policy's ratio against the optimum on one instance, over one or more seeds.

    ``ratios`` divide by the optimum's incumbent ``opt_misses``; when the optimum is not proven
    (``optimum.status`` is not ``optimal``) they are lower ends, and ``to_dict``'s ``ratio_bracket``
    also divides by the proven bound.

    ``compulsory`` is D, the distinct token nodes of the workload (None: unknown, no steady ratio).
    ``steady_ratios`` are the per-seed :func:`steady_ratio` (ALG_s - D) / (OPT - D); ``to_dict``'s
    ``steady_ratio`` is (mean_s ALG_s - D) / (OPT - D), which, OPT and D being the same for every seed,
    is also the mean of the per-seed steady ratios (given, with several seeds, as ``steady_ratio_mean``
    beside ``steady_ratios``). As ``ratios``, they divide by the incumbent when OPT is not proven.
    A slack k < 1 is reported as ``k: null`` with a ``k_reason`` (:func:`~kvtheory.model.batches.slack_fields`).
    ``block_size``: the cache's block size b (docs/model.md §Blocks): misses and D in tokens, k in blocks.
    """

    policy: str
    budget: int
    batch: int
    k: int
    optimum: Optimum
    runs: tuple[RunResult, ...]
    compulsory: int | None = None
    block_size: int = 1

    @property
    def steady_ratios(self) -> list[float]:
        if self.compulsory is None:
            return []
        return [steady_ratio(run.misses, self.opt_misses, self.compulsory) for run in self.runs]

    @property
    def opt_misses(self) -> int:
        return self.optimum.misses

    @property
    def ratios(self) -> list[float]:
        return [ratio_of(run.misses, self.opt_misses) for run in self.runs]

    def to_dict(self) -> dict:
        ratios = self.ratios
        ratio = summarize(ratios)
        upper = summarize([ratio_of(run.misses, self.optimum.bound) for run in self.runs])
        misses = summarize([run.misses for run in self.runs])
        worst = max(range(len(ratios)), key=ratios.__getitem__)
        slots = self.budget // self.block_size  # B / b: the budget in blocks (B at b = 1)
        max_length = (slots - self.k + 1) // self.batch  # k = B / b - beta * L_max + 1, L_max in blocks
        record = {
            "policy": self.policy,
            "budget": self.budget,
            "batch": self.batch,
            **slack_fields(slots, max_length, self.batch),
            "evict_amount": self.runs[0].evict_amount,
            "block_size": self.block_size,
            "queries": self.runs[0].queries,
            "tokens": self.runs[0].tokens,
            "opt_misses": self.opt_misses,
            "opt_status": self.optimum.status,
            "opt_solver": self.optimum.solver,  # fif, or mip:cbc / mip:highs where the MIP decided
            "opt_bound": self.optimum.bound,
            "misses_mean": misses.mean,
            "ratio_mean": ratio.mean,
            "ratio_std": ratio.std,
            "ratio_ci95": list(ratio.ci),
            "ratio_bracket": [ratio.mean, upper.mean],
            "seeds": [run.seed for run in self.runs],
            "ratios": ratios,
            "worst_seed": self.runs[worst].seed,
            "worst_ratio": ratios[worst],
        }
        if self.runs[0].predictor is not None:  # a policy that follows predictions: their error, per seed
            etas = [run.eta for run in self.runs]
            record.update(predictor=self.runs[0].predictor, noise=self.runs[0].noise, etas=etas)
            record["eta_mean"] = math.fsum(etas) / len(etas)
            record["eta_over_opt"] = record["eta_mean"] / self.opt_misses if self.opt_misses else math.inf
        if self.compulsory is not None:
            record["compulsory_misses"] = self.compulsory
            record["steady_ratio"] = steady_ratio(misses.mean, self.opt_misses, self.compulsory)
            if len(self.runs) > 1:
                steady = self.steady_ratios
                finite = all(math.isfinite(v) for v in steady)
                record["steady_ratio_mean"] = math.fsum(steady) / len(steady) if finite else float("inf")
                record["steady_ratios"] = steady
        return record


def competitive_ratio(
    workload: Workload,
    budget: int,
    policy: str | type,
    *,
    batch: int = 1,
    seeds: Sequence[int] = (0,),
    optimum: Optimum | None = None,
    opt_time_limit: float | None = OPT_TIME_LIMIT,
    evict_amount: str = "shortfall",
    backend: str = "auto",
    block_size: int = 1,
) -> RatioReport:
    """Measure ALG/OPT for ``policy`` on ``workload``; a deterministic policy runs once. ``evict_amount``:
    the policy evicts the shortfall or the whole allocation (:class:`~kvtheory.policies.EvictionPolicy`);
    OPT always evicts the shortfall (demand paging loses nothing for an offline optimum). ``backend``: the
    policy's engine (:mod:`kvtheory.policies.dispatch`); a user's policy is served through the engine's
    checks (:func:`kvtheory.simulate.run_policy`), so no ratio rests on hits the policy reported itself.

    ``optimum``: the instance's optimum if already solved (several policies share one), else it is
    solved here within ``opt_time_limit`` seconds. ``block_size`` b: the policy and the optimum both in blocks
    of b tokens (docs/model.md §Blocks); D is then the misses of serving every distinct block once, in tokens.

    >>> w = Workload.from_token_lists([[1], [2], [3]] * 4)
    >>> competitive_ratio(w, 2, "lru").ratios   # 12 misses against Belady's 7
    [1.7142857142857142]
    """
    if optimum is None:
        optimum = solve_optimum(workload, budget, batch=batch, time_limit=opt_time_limit, block_size=block_size)
    elif (optimum.batch, optimum.budget, optimum.block_size) != (batch, budget, block_size):
        raise InputError(
            f"the optimum given is for B = {optimum.budget}, beta = {optimum.batch}, b = {optimum.block_size}, not "
            f"B = {budget}, beta = {batch}, b = {block_size}"
        )
    cls = policy_class(policy) if isinstance(policy, str) else policy
    seeds = list(seeds) if cls.randomized else list(seeds)[:1]
    options = {"batch": batch, "evict_amount": evict_amount, "backend": backend, "block_size": block_size}
    runs = tuple(run_seeds(workload, budget, cls, seeds, **options))
    return RatioReport(cls.name, budget, batch, runs[0].k, optimum, runs, _compulsory(workload, block_size), block_size)


def _compulsory(workload: Workload, block_size: int) -> int:
    """D in tokens: the distinct token nodes at b = 1; at block size b, the tokens missed by serving each distinct
    block once and no partial block ever (T - b (sum n_j - distinct blocks))."""
    if block_size == 1:
        return workload.trie.distinct_tokens
    view = block_workload(workload, block_size)
    return view.token_misses(0 if view.workload is None else view.workload.trie.distinct_tokens)
