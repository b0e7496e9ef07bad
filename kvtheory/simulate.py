"""Running one worker: an eviction policy, or the offline optimum, over a workload (MODEL.md §1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.records import MAX_TOKENS
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import FurthestInFuture
from kvtheory.policies import EvictionPolicy, policy_class
from kvtheory.policies.base import footprint


@dataclass(frozen=True)
class RunResult:
    """Outcome of serving a workload on one worker: hits + misses = tokens; cost = misses."""

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
    query_hits: np.ndarray = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        record = asdict(self)
        del record["query_hits"]
        return record


def batches(n_queries: int, batch: int) -> list[range]:
    """Consecutive groups of ``batch`` query indices (the last one may be shorter)."""
    return [range(start, min(start + batch, n_queries)) for start in range(0, n_queries, batch)]


def slack(budget: int, max_length: int, batch: int = 1) -> int:
    """k = B - beta * L_max + 1: the slots left for everything but the current batch's paths."""
    return budget - batch * max_length + 1


def validate(workload: Workload, budget: int, batch: int = 1) -> None:
    """Raise InputError unless every batch of ``workload`` fits in a cache of ``budget`` tokens."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or not 0 < budget <= MAX_TOKENS:
        raise InputError(f"budget must be a positive number of tokens (at most 2^40), got {budget}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not 0 < batch <= MAX_TOKENS:
        raise InputError(f"batch size must be a positive integer (at most 2^40), got {batch}")
    for j, query in enumerate(workload):
        if query.length > budget:
            raise InputError(f"{workload.where(j)}: query has {query.length} tokens, more than the budget B = {budget}")
    if batch > 1:
        trie = workload.trie
        for number, group in enumerate(batches(len(workload), batch)):
            need = footprint(trie, [trie.path(j) for j in group])
            if need > budget:
                raise InputError(
                    f"{workload.where(group[0])}: batch {number} ({len(group)} queries) needs {need} token "
                    f"nodes resident at once, more than the budget B = {budget}"
                )


def _drive(workload: Workload, budget: int, policy: EvictionPolicy, name: str, batch: int, seed) -> RunResult:
    hits = np.zeros(len(workload), dtype=np.int64)
    for group in batches(len(workload), batch):
        hits[group.start : group.stop] = policy.serve(group)
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
        query_hits=hits,
    )


def run_policy(
    workload: Workload, budget: int, policy: str | type[EvictionPolicy], *, batch: int = 1, seed: int | None = None
) -> RunResult:
    """Serve ``workload`` with an online eviction policy on one worker of ``budget`` tokens.

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> run_policy(w, 2, "lru").misses   # LRU on a cycle over k+1 = 3 pages misses every request
    6
    """
    validate(workload, budget, batch)
    cls = policy_class(policy) if isinstance(policy, str) else policy
    return _drive(workload, budget, cls(workload.trie, budget, seed=seed), cls.name, batch, seed)


def run_fif(workload: Workload, budget: int, *, batch: int = 1) -> RunResult:
    """The exact offline optimum (FIF) on one worker.

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> run_fif(w, 2).misses   # Belady: 3 compulsory misses, then one miss per two requests
    4
    """
    validate(workload, budget, batch)
    schedule = batches(len(workload), batch)
    fif = FurthestInFuture(workload.trie, budget, schedule)
    return _drive(workload, budget, fif, "fif", batch, None)


def run_seeds(
    workload: Workload, budget: int, policy: str | type[EvictionPolicy], seeds: Sequence[int], *, batch: int = 1
) -> list[RunResult]:
    """One run per seed (for randomized policies)."""
    return [run_policy(workload, budget, policy, batch=batch, seed=s) for s in seeds]
