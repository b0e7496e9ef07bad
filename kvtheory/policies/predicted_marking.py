"""What lnonmarker and guard share (docs/policies.md §lnonmarker, §guard): RLT's marks and phases, blind-oracle's
keys, the batch's requests and the tokens evicted in the current phase, on the per-edge cache.

- **Marks and phases** as RLT's: every edge on a served query's path is marked (its tokens have been requested in
  the phase); the candidates are the unmarked cached leaves (never on the batch's paths, which are marked); when
  room is needed and no candidate is left, a new phase starts and every mark is cleared except the batch's paths.
  A rule may also start a phase when a batch arrives (:meth:`_batch_started`, clearing every mark); the phase's
  requested tokens number ``phase_tokens``, the summed lengths of the marked edges.
- **Keys.** When edge v is requested at step t it is told p(v), the predicted step of its next request; its key
  is blind-oracle's K(v) = min(p(v), K(c) over v's cached child edges c)
  (:func:`~kvtheory.policies.blind_oracle.tree_keys`), so a parent's key never exceeds a cached child's. The
  furthest-predicted leaf of a pool is the one of the largest key, ties to the deeper token, then the larger
  edge id.
- **Requests.** The batch's missing tokens, in the order it asks for them (query by query, root to leaf), are
  its requests; the last ``t`` of them cause its ``t`` evictions (t = the shortfall, or the whole allocation),
  one each, and every evicted token (edge, position) is remembered with what the rule attaches to it until a
  new phase starts.
- **k** is the slack at batch size 1, B - L_max + 1 (L_max the longest query of the workload), at least 1.

The start state (predictions, generator, keys, marks, candidates, k, phases) and the opt-in compiled core
(``compiled_told``) are :class:`MarkingWithPredictions`, which predictive-marker starts from too. A subclass gives
the rule: :meth:`_choose` (the leaf edge whose last token goes, for one cause) and, if it
needs them, :meth:`_batch_started` (before the batch's marks), :meth:`_requested` (the batch's requests, before
its evictions) and :meth:`_phase_started`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import numpy as np

from kvtheory.policies.blind_oracle import tree_keys
from kvtheory.policies.edge_cache import EdgeCache
from kvtheory.policies.predicted import FollowsPredictions


class MarkingWithPredictions(FollowsPredictions, EdgeCache):
    """The state predictive-marker, lnonmarker and guard start from: the predictions, a seeded generator, the
    step, each edge's key (+inf until requested), RLT's marks (flags and the set of marked edges), the candidates,
    k = max(1, B - L_max + 1) and the phases (1); and the compiled core each rule may opt in to."""

    randomized = True
    #: "auto" runs the compiled core from this many tokens in all (kvtheory.policies.dispatch): about what loading
    #: numba and the core costs (about 0.55 s) in per-edge (predictive-marker) or per-token (the others) steps
    compiled_min_tokens = 50_000

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        n = trie.n_nodes
        self._predictions = self.required(predictions)
        self._rng = np.random.default_rng(seed)
        self._step = 0
        self._key = [float("inf")] * n
        self._marked = bytearray(n)
        self._marked_edges: set[int] = set()
        self._candidates: set[int] = set()
        longest = max((trie.depth[end] for end in trie.end), default=1)
        self.k = max(1, budget - longest + 1)
        self.phases = 1

    @classmethod
    def compiled_told(cls, trie, budget: int, predictions, *, seed: int | None = None, evict_amount: str = "shortfall"):
        """The compiled core (``core_class``) told ``predictions``, the same hits and draws from the same seed,
        where the rule opted in (``compiled_core`` on the class itself, or on the class a predictor is bound to:
        binding changes no rule); None otherwise. numba is imported by the runs that use a core alone."""
        rule = cls if cls.predictor is None else cls.__base__
        if not rule.__dict__.get("compiled_core", False):
            return None
        module, name = rule.core_class.split(":")
        core = getattr(importlib.import_module(f"kvtheory.policies.{module}"), name)
        return core(cls, trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)


class PredictedMarking(MarkingWithPredictions):
    """RLT's marking with blind-oracle's keys; a subclass chooses each evicted leaf (module docstring)."""

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)
        self._leaves: set[int] = set()  # cached edges without a cached child
        #: (edge, position on it) of each token evicted in this phase -> what the rule attached to it
        self._evicted: dict[tuple[int, int], int] = {}
        self.phase_tokens = 0

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie, kept, edge_len = self.trie, self._kept, self.trie.edge_len
        self._step += 1
        paths = [trie.path(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        told = self._predictions.told(self._step, on_paths, self.name)
        keys = tree_keys(trie, told, lambda c: self._key[c] if kept[c] else None)
        hits = [self.cached_prefix(j) for j in batch]
        requests, seen = [], set()
        for path in paths:
            for v in path:
                if v not in seen:
                    seen.add(v)
                    requests.extend((v, p) for p in range(int(kept[v]) + 1, edge_len[v] + 1))
        self._batch_started()
        for v in on_paths:
            self._mark(v)
        self._requested(requests)
        overflow = self.size + len(requests) - self.budget
        if overflow > 0:
            tokens = self.tokens_to_free(overflow, len(requests))
            self._evict(requests[len(requests) - tokens :], overflow, on_paths)
        self._fill(paths)
        for v in on_paths:
            self._key[v] = keys[v]
            self._leaves.discard(trie.parent[v])
            if self._cached_children[v] == 0:
                self._leaves.add(v)
        return hits

    # -- the rule's hooks ------------------------------------------------------------------------------
    def _batch_started(self) -> None:
        """A batch has arrived, before its paths are marked (nothing by default)."""

    def _requested(self, requests: list[tuple[int, int]]) -> None:
        """The batch's requests (edge, position), before its evictions: the rule's books (none by default)."""

    def _phase_started(self) -> None:
        """A new phase has just cleared the marks and forgotten the evicted tokens (nothing more by default)."""

    def _choose(self, cause: tuple[int, int], on_paths: set[int]) -> tuple[int, int]:
        """(the leaf edge whose last token goes for ``cause``, the value to remember with that token)."""
        raise NotImplementedError

    # -- choices the rules share -------------------------------------------------------------------------
    def _furthest(self, pool) -> int:
        """The leaf edge of ``pool`` whose key is largest; ties to the deeper token, then the larger edge id."""
        depth, parent, kept = self.trie.depth, self.trie.parent, self._kept
        return max(pool, key=lambda u: (self._key[u], depth[parent[u]] + int(kept[u]), u))

    def _uniform(self, pool) -> int:
        """A uniformly random edge of ``pool``: one ``integers`` draw over it in ascending edge order."""
        ordered = sorted(pool)
        return ordered[int(self._rng.integers(len(ordered)))]

    # -- marks, phases, evictions -------------------------------------------------------------------------
    def _mark(self, v: int) -> None:
        if not self._marked[v]:
            self._marked[v] = 1
            self._marked_edges.add(v)
            self.phase_tokens += self.trie.edge_len[v]
        self._candidates.discard(v)

    def _new_phase(self, on_paths: set[int]) -> bool:
        """Clear every mark off the batch's paths; False if there was none to clear (no new candidates)."""
        cleared = self._marked_edges - on_paths
        if not cleared:
            return False
        self.phases += 1
        self._marked_edges -= cleared
        self.phase_tokens = sum(self.trie.edge_len[v] for v in self._marked_edges)
        self._evicted.clear()
        for v in cleared:
            self._marked[v] = 0
            if v in self._leaves:
                self._candidates.add(v)
        self._phase_started()
        return True

    def _evict(self, causes: list[tuple[int, int]], overflow: int, on_paths: set[int]) -> None:
        """One eviction per cause; with no candidate even after a new phase, stop if ``overflow`` tokens went,
        else raise. One round per cause: at most len(causes) rounds."""
        kept, parent, children = self._kept, self.trie.parent, self._cached_children
        freed = 0
        for cause in causes:
            if not self._candidates and not (self._new_phase(on_paths) and self._candidates):
                if freed >= overflow:
                    return
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            v, attached = self._choose(cause, on_paths)
            self._evicted[(v, int(kept[v]))] = attached
            kept[v] -= 1
            self.size -= 1
            freed += 1
            if kept[v] == 0:
                self._leaves.discard(v)
                self._candidates.discard(v)
                p = parent[v]
                children[p] -= 1
                if p and children[p] == 0:
                    self._leaves.add(p)
                    if not self._marked[p]:
                        self._candidates.add(p)
