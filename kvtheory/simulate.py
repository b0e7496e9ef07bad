"""Running one worker: an eviction policy over a workload (docs/model.md §Serving); ``drive`` serves any policy,
the offline FIF included (:func:`kvtheory.optimum.fif.run_fif`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.batches import batches, slack, slack_fields, validate
from kvtheory.model.blocks import block_budget, block_workload
from kvtheory.model.predictions import predict
from kvtheory.model.workload import Workload
from kvtheory.policies import PREDICTIVE_POLICIES, EvictionPolicy, policy_class
from kvtheory.policies.base import KernelServed
from kvtheory.policies.dispatch import compiled_hits, streamed_hits, told_object
from kvtheory.policies.ledger import built_in, served_checked


@dataclass(frozen=True)
class RunResult:
    """Outcome of serving a workload on one worker: hits + misses = tokens; cost = misses.
    ``evict_amount``: how much each eviction was asked to free (shortfall or allocation). ``block_size``: the
    cache's block size b (docs/model.md §Blocks); budget, tokens, hits and misses are in tokens whatever b is,
    while k is the slack in blocks, B / b - beta * L_max + 1 with L_max in full blocks (k in tokens at b = 1)."""

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
    block_size: int = 1
    #: every query's hits; None for a run streamed over a flat trace (:func:`~kvtheory.policies.dispatch.streamed_hits`)
    query_hits: np.ndarray = field(default=None, repr=False, compare=False)
    #: for a policy that follows predictions: the predictor, its noise strength and the error eta
    #: (:mod:`kvtheory.model.predictions`); None otherwise, and then left out of :meth:`to_dict`
    predictor: str | None = None
    noise: float | None = None
    eta: float | None = None

    def to_dict(self) -> dict:
        """The fields as JSON; k is null with a ``k_reason`` when it is < 1
        (:func:`~kvtheory.model.batches.slack_fields`; L_max = (B' - k + 1) / beta, as k = B' - beta * L_max + 1,
        with B' = B / b the budget in blocks)."""
        record = asdict(self)
        del record["query_hits"]
        if self.predictor is None:
            for key in ("predictor", "noise", "eta"):
                del record[key]
        slots = self.budget // self.block_size
        result = {}
        for key, value in record.items():
            if key == "k":
                result.update(slack_fields(slots, (slots - self.k + 1) // self.batch, self.batch))
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
    workload: Workload,
    budget: int,
    name: str,
    batch: int,
    seed,
    hits: np.ndarray | int,
    *,
    evict_amount: str = "shortfall",
    block_size: int = 1,
) -> RunResult:
    """The RunResult of a run whose per-query hits (in tokens) are ``hits``, with blocks of ``block_size`` tokens;
    ``hits`` may be the total alone (a streamed run, :func:`~kvtheory.policies.dispatch.streamed_hits`), and
    ``query_hits`` is then None."""
    total_hits = int(hits.sum()) if isinstance(hits, np.ndarray) else int(hits)
    tokens = workload.total_tokens
    b = block_size
    return RunResult(
        policy=name,
        budget=budget,
        batch=batch,
        k=slack(budget // b, workload.max_length // b, batch),
        queries=len(workload),
        tokens=tokens,
        hits=total_hits,
        misses=tokens - total_hits,
        hit_rate=total_hits / tokens,
        seed=seed,
        evict_amount=evict_amount,
        block_size=b,
        query_hits=hits if isinstance(hits, np.ndarray) else None,
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
    block_size: int = 1,
    predictor: str | None = None,
    noise: float | None = None,
) -> RunResult:
    """Serve ``workload`` with an online eviction policy on one worker of ``budget`` tokens, evicting the
    shortfall or the whole allocation (``evict_amount``, :class:`~kvtheory.policies.EvictionPolicy`), on the
    engine ``backend`` chooses (:mod:`kvtheory.policies.dispatch`).

    ``block_size`` b (docs/model.md §Blocks): the cache holds whole blocks of b tokens and B must be a multiple
    of b. The policy runs unchanged on the block-level workload (:func:`~kvtheory.model.blocks.block_workload`)
    with B / b slots, and its block hits count b tokens each; validity and k are in blocks. At b = 1 this is the
    token model itself, the same code path. A policy with ``block_engine`` set handles blocks itself: it is
    built on the token-level trie with ``block_size=b`` and its hits are tokens already (validity in tokens).

    ``check``: serve batch by batch through the engine's books (:class:`~kvtheory.policies.ledger.CacheLedger`):
    the hits are the engine's own count and a decision that breaks the model raises
    :class:`~kvtheory.policies.ledger.ModelViolation`. By default (None) a user's policy is checked and a
    built-in one (:func:`~kvtheory.policies.ledger.built_in`) is not.

    ``predictor`` and ``noise``: for a policy that follows predictions (``uses_predictions``, docs/predictions.md),
    the predictor that makes them for the schedule served (:func:`~kvtheory.model.predictions.predict`, drawn
    under ``seed``); required for such a policy, an InputError for any other.

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> run_policy(w, 2, "lru").misses   # LRU on a cycle over k+1 = 3 pages misses every request
    6
    """
    if block_size == 1:
        validate(workload, budget, batch)
    cls = policy_class(policy) if isinstance(policy, str) else policy
    if noise is not None and predictor is None:
        raise InputError("noise is the strength of a predictor: give the predictor too")
    if predictor is not None and not cls.uses_predictions:
        known = ", ".join(PREDICTIVE_POLICIES)
        raise InputError(f"policy {cls.name!r} does not follow predictions; --predictor is for {known}")
    if cls.block_engine:
        return _run_block_engine(workload, budget, cls, batch, seed, evict_amount, check, block_size)
    if block_size != 1:
        return _run_in_blocks(
            workload, budget, cls, batch, seed, evict_amount, backend, check, block_size, predictor, noise
        )
    checked = not built_in(cls) if check is None else check
    if cls.uses_predictions:
        told = (predictor, noise, backend)
        return _run_with_predictions(workload, budget, cls, batch, seed, evict_amount, checked, *told)
    if not checked:
        total = streamed_hits(cls, workload, budget, batch, evict_amount, backend, seed)
        if total is not None:
            return result_of(workload, budget, cls.name, batch, seed, total, evict_amount=evict_amount)
        hits = compiled_hits(cls, workload.trie, budget, batch, seed, evict_amount, backend)
        if hits is not None:
            return result_of(workload, budget, cls.name, batch, seed, hits, evict_amount=evict_amount)
    policy_run = cls.create(workload.trie, budget, seed=seed, evict_amount=evict_amount, backend=backend)
    policy_run = served_checked(policy_run, cls, budget, evict_amount, checked)
    return drive(workload, budget, policy_run, cls.name, batch, seed, evict_amount=evict_amount)


def _run_in_blocks(
    workload, budget, cls, batch, seed, evict_amount, backend, check, block_size, predictor, noise
) -> RunResult:
    """:func:`run_policy` at block size b > 1: the same run on the block-level workload, its hits times b (a
    policy that follows predictions is told them for the block-level schedule, and its eta is in blocks)."""
    block_run = {}

    def run(blocks: Workload, slots: int) -> np.ndarray:
        options = {"seed": seed, "evict_amount": evict_amount, "backend": backend, "check": check}
        block_run["result"] = run_policy(blocks, slots, cls, batch=batch, predictor=predictor, noise=noise, **options)
        return block_run["result"].query_hits

    result = run_in_blocks(workload, budget, batch, block_size, run, cls.name, seed, evict_amount=evict_amount)
    told = block_run.get("result")
    if told is None or told.predictor is None:
        return result
    return replace(result, predictor=told.predictor, noise=told.noise, eta=told.eta)


def _run_with_predictions(
    workload, budget, cls, batch, seed, evict_amount, checked, predictor, noise, backend
) -> RunResult:
    """A run of a policy that follows predictions (``cls.uses_predictions``), made by ``predictor`` (or the one
    bound to ``cls``) for the schedule served, on the engine ``backend`` chooses (:func:`told_object`); an
    InputError when no predictor is given, or two."""
    if cls.predictor is not None:
        if predictor is not None:
            raise InputError(f"policy {cls.name!r} names its predictor already; drop --predictor {predictor}")
        predictor, noise = cls.predictor, cls.noise
    if predictor is None:
        raise InputError(f"policy {cls.name!r} follows predictions: give a predictor (--predictor NAME)")
    predictions = predict(workload.trie, batches(len(workload), batch), predictor, noise=noise, seed=seed)
    options = {"seed": seed, "evict_amount": evict_amount, "backend": backend}
    policy_run = told_object(cls, workload.trie, budget, predictions, **options)
    if not checked and isinstance(policy_run, KernelServed):
        hits = policy_run.serve_all(batch)
        result = result_of(workload, budget, cls.name, batch, seed, hits, evict_amount=evict_amount)
    else:
        policy_run = served_checked(policy_run, cls, budget, evict_amount, checked)
        result = drive(workload, budget, policy_run, cls.name, batch, seed, evict_amount=evict_amount)
    return replace(result, predictor=predictor, noise=predictions.noise, eta=predictions.eta)


def run_in_blocks(
    workload: Workload,
    budget: int,
    batch: int,
    block_size: int,
    run: Callable[[Workload, int], np.ndarray],
    name: str,
    seed=None,
    *,
    evict_amount: str = "shortfall",
) -> RunResult:
    """The RunResult, in tokens, of a run at block size b = ``block_size`` (docs/model.md §Blocks): the workload is
    validated in blocks, ``run(block-level workload, B / b)`` gives the block hits of each query that has a full
    block, and each block hit counts b tokens; a query without a full block hits nothing."""
    view = block_workload(workload, block_size)
    view.validate(budget, batch)
    hits = np.zeros(len(workload), dtype=np.int64)
    if view.workload is not None:
        hits = view.token_hits(run(view.workload, budget // block_size))
    return result_of(workload, budget, name, batch, seed, hits, evict_amount=evict_amount, block_size=block_size)


def _run_block_engine(workload, budget, cls, batch, seed, evict_amount, check, block_size) -> RunResult:
    """:func:`run_policy` for a policy that handles blocks itself (``block_engine``): built on the token-level trie
    as ``cls(trie, B, seed=, evict_amount=, block_size=b)``, served batch by batch; its hits are tokens. Checked,
    it is served through the engine's block books (:mod:`kvtheory.policies.block_ledger`)."""
    block_budget(budget, block_size)
    validate(workload, budget, batch)
    made = cls(workload.trie, budget, seed=seed, evict_amount=evict_amount, block_size=block_size)
    engine = served_checked(made, cls, budget, evict_amount, check)
    hits = np.zeros(len(workload), dtype=np.int64)
    for group in batches(len(workload), batch):
        hits[group.start : group.stop] = engine.serve(group)
    return result_of(workload, budget, cls.name, batch, seed, hits, evict_amount=evict_amount, block_size=block_size)


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
    block_size: int = 1,
    predictor: str | None = None,
    noise: float | None = None,
) -> list[RunResult]:
    """One run per seed (for randomized policies, or a noisy predictor); ``backend``, ``check``, ``block_size``,
    ``predictor`` and ``noise`` as for :func:`run_policy`."""
    return [
        run_policy(
            workload,
            budget,
            policy,
            batch=batch,
            seed=s,
            evict_amount=evict_amount,
            backend=backend,
            check=check,
            block_size=block_size,
            predictor=predictor,
            noise=noise,
        )
        for s in seeds
    ]
