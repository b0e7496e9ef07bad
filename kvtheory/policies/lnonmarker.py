"""lnonmarker: Rohatgi's LNonMarker (SODA 2020, "Near-optimal bounds for online caching with machine learned
advice"), lifted to the prefix tree (docs/policies.md §lnonmarker).

Marks, keys, requests and k are those of :mod:`kvtheory.policies.predicted_marking`. **Phases.** A phase ends
once k distinct tokens have been requested in it: a batch that arrives with ``phase_tokens`` >= k starts a new
phase, clearing every mark (and, as RLT's, a new phase starts when room is needed and no unmarked leaf is off the
batch's paths; never on paging, where fewer than k pages are marked then). **Stale** tokens are those cached at
the phase start: token (v, p) is stale iff p <= the number of tokens v held then (a per-edge snapshot, taken the
first time v changes in the phase). A missing stale token was evicted in this phase, and the rule remembers with
each evicted token whether the request that evicted it was stale.

Each eviction, caused by the request of token x, takes one leaf token off the batch's paths:

- x stale, evicted by a clean request: a uniformly random cached leaf, **marked or not** (LNonMarker's step
  that leaves the marking family);
- x stale, evicted by a stale request: a uniformly random candidate (unmarked cached leaf);
- x clean: the furthest-predicted candidate (the unmarked cached leaf of the largest key).

Random choices are one ``integers`` draw of a seeded numpy Generator over the pool in ascending edge order.

On paging (one-token queries, k = B) this is LNonMarker step for step; Rohatgi proves it
O(1 + min((eta/OPT)/k, 1) log k)-competitive (eta the l1 error of the predicted next-request times), so
O(1)-consistent and O(log k)-robust, with no constant stated. The checks hold it to the concrete stand-ins 2
(consistency, claim P4) and :func:`robust_stand_in` (robustness, claim P5); on trees no bound is proven.
"""

from __future__ import annotations

import math

from kvtheory.policies import register_predictive_policy
from kvtheory.policies.predicted_marking import PredictedMarking
from kvtheory.policies.predictive_marker import harmonic


def robust_stand_in(k: int) -> float:
    """2 (max(1, log2 k) + H_k): the concrete ratio the checks hold lnonmarker to with adversarial predictions,
    a stand-in for Rohatgi's O(log k) robustness (which states no constant), not a proven bound."""
    return 2 * (max(1.0, math.log2(k)) + harmonic(k))


@register_predictive_policy
class LNonMarker(PredictedMarking):
    """Rohatgi's LNonMarker on the prefix tree (module docstring); ``predictions`` is required. Its compiled core
    (``compiled_told``, the same hits and draws): :class:`~kvtheory.policies.compiled.marking.CompiledLNonMarker`."""

    name = "lnonmarker"
    compiled_core = True
    core_class = "compiled.marking:CompiledLNonMarker"

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)
        n = trie.n_nodes
        self._snapshot_phase = [0] * n  # the phase in which v's count at the phase start was recorded
        self._snapshot = [0] * n
        self._batch_edges: set[int] = set()

    def _stale(self, v: int) -> int:
        """How many tokens edge v held when the phase started."""
        return self._snapshot[v] if self._snapshot_phase[v] == self.phases else int(self._kept[v])

    def _touch(self, v: int) -> None:
        """Record v's count at the phase start before v changes (once per phase)."""
        if self._snapshot_phase[v] != self.phases:
            self._snapshot_phase[v] = self.phases
            self._snapshot[v] = int(self._kept[v])

    def _batch_started(self) -> None:
        if self.phase_tokens >= self.k:
            self._new_phase(set())

    def _phase_started(self) -> None:
        for v in self._batch_edges:  # a phase started mid-batch: the batch's edges are about to be filled
            self._touch(v)

    def _requested(self, requests: list[tuple[int, int]]) -> None:
        self._batch_edges = {v for v, _ in requests}
        for v in self._batch_edges:
            self._touch(v)

    def _choose(self, cause: tuple[int, int], on_paths: set[int]) -> tuple[int, int]:
        edge, position = cause
        stale = position <= self._stale(edge)
        if not stale:
            v = self._furthest(self._candidates)
        elif self._evicted[cause]:
            v = self._uniform(self._candidates)
        else:
            v = self._uniform(self._leaves - on_paths)
        self._touch(v)
        return v, int(stale)
