"""Running one worker: an eviction policy over a workload (docs/model.md §Serving); ``drive`` serves any policy,
the offline FIF included (:func:`kvtheory.optimum.fif.run_fif`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from kvtheory.model.batches import batches, slack, validate
from kvtheory.model.workload import Workload
from kvtheory.policies import EvictionPolicy, policy_class


@dataclass(frozen=True)
class RunResult:
    """Outcome of serving a workload on one worker: hits + misses = tokens; cost = misses.
    ``evict_amount``: how much each eviction was asked to free (shortfall or allocation)."""

    policy: str
    budget: int
    batch: int
    k: int
    queries: int
    tokens: int
    hits: int
    misses: int
    hit_rate: float
    seed: int | None = None
    evict_amount: str = "shortfall"
    query_hits: np.ndarray = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        record = asdict(self)
        del record["query_hits"]
        return record


def drive(
    workload: Workload,
    budget: int,
    policy: EvictionPolicy,
    name: str,
    batch: int,
    seed,
    *,
    evict_amount: str = "shortfall",
) -> RunResult:
    hits = np.zeros(len(workload), dtype=np.int64)
    for group in batches(len(workload), batch):
        hits[group.start : group.stop] = policy.serve(group)
    return result_of(workload, budget, name, batch, seed, hits, evict_amount=evict_amount)


def result_of(
    workload: Workload, budget: int, name: str, batch: int, seed, hits: np.ndarray, *, evict_amount: str = "shortfall"
) -> RunResult:
    """The RunResult of a run whose per-query hits are ``hits``."""
    total_hits = int(hits.sum())
    tokens = workload.total_tokens
    return RunResult(
        policy=name,
        budget=budget,
        batch=batch,
        k=slack(budget, workload.max_length, batch),
        queries=len(workload),
        tokens=tokens,
        hits=total_hits,
        misses=tokens - total_hits,
        hit_rate=total_hits / tokens,
        seed=seed,
        evict_amount=evict_amount,
        query_hits=hits,
    )


def run_policy(
    workload: Workload,
    budget: int,
    policy: str | type[EvictionPolicy],
    *,
    batch: int = 1,
    seed: int | None = None,
    evict_amount: str = "shortfall",
) -> RunResult:
    """Serve ``workload`` with an online eviction policy on one worker of ``budget`` tokens, evicting the
    shortfall or the whole allocation (``evict_amount``, :class:`~kvtheory.policies.EvictionPolicy`).

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> run_policy(w, 2, "lru").misses   # LRU on a cycle over k+1 = 3 pages misses every request
    6
    """
    validate(workload, budget, batch)
    cls = policy_class(policy) if isinstance(policy, str) else policy
    hits = cls.run_compiled(workload.trie, budget, batch, seed, evict_amount)
    if hits is not None:
        return result_of(workload, budget, cls.name, batch, seed, hits, evict_amount=evict_amount)
    policy_run = cls.instantiate(workload.trie, budget, seed=seed, evict_amount=evict_amount)
    return drive(workload, budget, policy_run, cls.name, batch, seed, evict_amount=evict_amount)


def run_seeds(
    workload: Workload,
    budget: int,
    policy: str | type[EvictionPolicy],
    seeds: Sequence[int],
    *,
    batch: int = 1,
    evict_amount: str = "shortfall",
) -> list[RunResult]:
    """One run per seed (for randomized policies)."""
    return [run_policy(workload, budget, policy, batch=batch, seed=s, evict_amount=evict_amount) for s in seeds]
