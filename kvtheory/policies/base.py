"""The one small interface every eviction policy implements (docs/policies.md §Interface)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.dispatch import policy_object


class EvictionPolicy(ABC):
    """One worker's cache of at most B token nodes, kept prefix-closed, under one eviction rule.

    The cache lives on the radix edges of a :class:`PrefixTrie` over every query the policy may be
    asked to serve. ``serve(batch)`` serves the queries (trie sequence indices) of one batch: each
    query's hits h are counted against the cache as it was before the batch, the union of the batch's
    token nodes is resident afterwards, and only leaves off the batch's paths are evicted, only to make
    room. ``size`` is the number of cached token nodes.

    ``evict_amount`` (docs/policies.md §How much is evicted): when a batch's ``missing`` uncached tokens
    overflow the budget by ``overflow`` > 0, ``"shortfall"`` (the model's demand paging) evicts exactly
    ``overflow`` tokens; ``"allocation"`` (SGLang's alloc_token_slots) asks the policy to free ``missing``
    tokens, stopping early only when nothing is left to evict (an error if that is before ``overflow``).
    See :meth:`tokens_to_free`.
    """

    name: ClassVar[str]
    randomized: ClassVar[bool] = False
    #: backend "auto" runs the compiled core from this many tokens in all, besides its query threshold
    #: (:mod:`kvtheory.policies.dispatch`); None: the query threshold alone
    compiled_min_tokens: ClassVar[int | None] = None
    #: evicts a whole radix leaf node at a time (L-LRU), rather than a token: the engine's demand-paging check
    #: then allows the last node to free more than was due (:mod:`kvtheory.policies.ledger`)
    whole_node: ClassVar[bool] = False
    #: follows predictions of the next request (registered in ``PREDICTIVE_POLICIES``): the runner builds them
    #: (:mod:`kvtheory.model.predictions`) and passes ``predictions=`` to the constructor
    uses_predictions: ClassVar[bool] = False
    #: handles the cache's blocks itself (docs/model.md §Blocks): at block size b the runner builds it on the
    #: token-level trie as ``cls(trie, B, seed=..., evict_amount=..., block_size=b)`` (b = 1 included) and takes
    #: its hits as tokens, instead of running it on the block-level workload as every other policy
    block_engine: ClassVar[bool] = False
    #: the compiled core's object of the rule's family, ``"module:Class"`` with the module under
    #: :mod:`kvtheory.policies` (``compiled.edge_cache``, ``radix_core``), which runs only the classes that opt in
    #: themselves with ``compiled_core = True`` (:func:`kvtheory.policies.dispatch.compiled_object`)
    core_class: ClassVar[str] = ""

    def __init__(
        self, trie: PrefixTrie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall"
    ) -> None:
        if budget <= 0:
            raise ValueError(f"budget must be positive, got {budget}")
        self.trie = trie
        self.budget = budget
        self.size = 0
        self.evict_amount = check_evict_amount(evict_amount)

    @classmethod
    def create(
        cls,
        trie: PrefixTrie,
        budget: int,
        *,
        seed: int | None = None,
        evict_amount: str = "shortfall",
        backend: str = "auto",
    ) -> EvictionPolicy:
        """A fresh object of this policy served batch by batch (the cluster simulation's workers), from the
        engine ``backend`` chooses (:mod:`kvtheory.policies.dispatch`): the compiled core's object, or ``cls``
        itself. Both give the same hits, batch for batch, from the same seed. The one way in besides the
        constructor, which builds the per-edge class itself."""
        return policy_object(cls, trie, budget, seed=seed, evict_amount=evict_amount, backend=backend)

    def tokens_to_free(self, overflow: int, missing: int) -> int:
        """How many tokens an eviction is asked to free when a batch of ``missing`` uncached tokens
        overflows the budget by ``overflow`` > 0: ``overflow`` (shortfall) or ``missing`` (allocation)."""
        return missing if self.evict_amount == "allocation" else overflow

    @abstractmethod
    def serve(self, batch: Sequence[int]) -> list[int]:
        """Serve one batch of sequence indices; return each query's hits against the pre-batch cache."""

    @abstractmethod
    def cached_prefix(self, j: int) -> int:
        """Hits query j would get now (length of its longest cached prefix); changes nothing."""

    @abstractmethod
    def kept(self) -> dict[int, int]:
        """The cache as {trie node v: tokens of edge v cached, counted from the edge's head}, zeros left out."""

    # -- exact analysis (kvtheory.game) --------------------------------------------------------------------
    def state_key(self):
        """A canonical, hashable key of this object's state, or None where the policy gives none (the default).

        Contract: two objects of the same class over the same trie and budget with equal keys behave alike on
        every future sequence of batches: a deterministic policy gives the same hits batch for batch, and its
        keys stay equal; a randomized one has the same distribution of future hits and keys (its generator's
        state is left out). :mod:`kvtheory.game` merges the states of its exact search by this key; without
        one it keeps each served sequence apart (exact, no merging)."""
        return None


def kept_of_array(kept: np.ndarray) -> dict[int, int]:
    """:meth:`EvictionPolicy.kept` of a cache held as an array of tokens kept per trie node."""
    return {int(v): int(kept[v]) for v in np.flatnonzero(kept)}


class KernelServed(EvictionPolicy):
    """A compiled core's cache as a policy object: :meth:`_serve` runs the kernel (:meth:`_run`) over the
    queries that end at trie nodes ``ends``, in batches of ``batch``, and returns their hits. ``_ends`` holds
    each trie sequence's end node; the kernel keeps the tokens cached of each trie node in row
    ``_KEPT_ROW`` of ``_state`` and the cache's size in cell ``_SIZE_CELL`` of ``_scalars``."""

    _ends: np.ndarray
    _state: np.ndarray
    _scalars: np.ndarray
    _KEPT_ROW: int
    _SIZE_CELL: int

    @classmethod
    def for_rule(cls, rule: type, trie: PrefixTrie, budget: int, **options) -> KernelServed:
        """This core's object for the policy class ``rule``."""
        return cls(rule, trie, budget, **options)

    def serve_all(self, batch: int) -> np.ndarray:
        """Serve every sequence of the trie in order, in batches of ``batch``; return each one's hits."""
        return self._serve(self._ends, batch)

    def serve(self, batch: Sequence[int]) -> list[int]:
        return self._serve(self._ends[np.asarray(batch, dtype=np.int64)], len(batch)).tolist()

    def kept(self) -> dict[int, int]:
        return kept_of_array(self._state[self._KEPT_ROW])

    def _serve(self, ends: np.ndarray, batch: int) -> np.ndarray:
        """Hits of the queries ending at ``ends``, served in batches of ``batch``."""
        hits = np.zeros(ends.size, dtype=np.int64)
        try:
            self._run(ends, batch, hits)
        except RuntimeError as exc:  # raised inside the kernel: its message, without numba's frames
            raise RuntimeError(str(exc)) from None
        self.size = int(self._scalars[self._SIZE_CELL])
        return hits

    @abstractmethod
    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        """Run the kernel over the queries ending at ``ends`` in batches of ``batch``, writing their hits."""


EVICT_AMOUNTS = ("shortfall", "allocation")


def check_evict_amount(evict_amount: str) -> str:
    """``evict_amount`` itself if it is one of :data:`EVICT_AMOUNTS`, else an InputError naming them."""
    if evict_amount not in EVICT_AMOUNTS:
        raise InputError(f"unknown eviction amount {evict_amount!r}; known: {', '.join(EVICT_AMOUNTS)}")
    return evict_amount


def union_misses(trie: PrefixTrie, paths: Sequence[Sequence[int]], matched: Sequence[int]) -> int:
    """Token nodes of a batch that are not cached: |union of the batch's nodes| - |cached ones|.

    ``matched[i]`` is the cached prefix length of query i; since the cache is prefix-closed, the cached
    part of every edge is the same from whichever query it is seen.
    """
    if len(paths) == 1:
        return trie.depth[paths[0][-1]] - matched[0]
    depth, parent, edge_len = trie.depth, trie.parent, trie.edge_len
    missing: dict[int, int] = {}
    for path, m in zip(paths, matched):
        for v in path:
            if v not in missing:
                cached = min(max(m - depth[parent[v]], 0), edge_len[v])
                missing[v] = edge_len[v] - cached
    return sum(missing.values())
