"""Running one worker: an eviction policy over a workload (docs/model.md §Serving); ``drive`` serves any policy,
the offline FIF included (:func:`kvtheory.optimum.fif.run_fif`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from kvtheory.model.batches import batches, slack, slack_fields, validate
from kvtheory.model.workload import Workload
from kvtheory.policies import EvictionPolicy, policy_class
from kvtheory.policies.dispatch import compiled_hits
from kvtheory.policies.ledger import built_in, served_checked


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
        """The fields as JSON; k is null with a ``k_reason`` when it is < 1
        (:func:`~kvtheory.model.batches.slack_fields`; L_max = (B - k + 1) / beta, as k = B - beta * L_max + 1)."""
        record = asdict(self)
        del record["query_hits"]
        result = {}
        for key, value in record.items():
            if key == "k":
                result.update(slack_fields(self.budget, (self.budget - self.k + 1) // self.batch, self.batch))
            else:
                result[key] = value
        return result


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
    backend: str = "auto",
    check: bool | None = None,
) -> RunResult:
    """Serve ``workload`` with an online eviction policy on one worker of ``budget`` tokens, evicting the
    shortfall or the whole allocation (``evict_amount``, :class:`~kvtheory.policies.EvictionPolicy`), on the
    engine ``backend`` chooses (:mod:`kvtheory.policies.dispatch`).

    ``check``: serve batch by batch through the engine's books (:class:`~kvtheory.policies.ledger.CacheLedger`):
    the hits are the engine's own count and a decision that breaks the model raises
    :class:`~kvtheory.policies.ledger.ModelViolation`. By default (None) a user's policy is checked and a
    built-in one (:func:`~kvtheory.policies.ledger.built_in`) is not.

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> run_policy(w, 2, "lru").misses   # LRU on a cycle over k+1 = 3 pages misses every request
    6
    """
    validate(workload, budget, batch)
    cls = policy_class(policy) if isinstance(policy, str) else policy
    checked = not built_in(cls) if check is None else check
    if not checked:
        hits = compiled_hits(cls, workload.trie, budget, batch, seed, evict_amount, backend)
        if hits is not None:
            return result_of(workload, budget, cls.name, batch, seed, hits, evict_amount=evict_amount)
    policy_run = cls.create(workload.trie, budget, seed=seed, evict_amount=evict_amount, backend=backend)
    policy_run = served_checked(policy_run, cls, budget, evict_amount, checked)
    return drive(workload, budget, policy_run, cls.name, batch, seed, evict_amount=evict_amount)


def run_seeds(
    workload: Workload,
    budget: int,
    policy: str | type[EvictionPolicy],
    seeds: Sequence[int],
    *,
    batch: int = 1,
    evict_amount: str = "shortfall",
    backend: str = "auto",
    check: bool | None = None,
) -> list[RunResult]:
    """One run per seed (for randomized policies); ``backend`` and ``check`` as for :func:`run_policy`."""
    return [
        run_policy(
            workload, budget, policy, batch=batch, seed=s, evict_amount=evict_amount, backend=backend, check=check
        )
        for s in seeds
    ]
