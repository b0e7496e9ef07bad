"""blind-oracle: follow the predictions, FIF on predicted next-request times (docs/policies.md §blind-oracle).

When edge v is requested at step t it is told p(v), the predicted time of its next request
(:mod:`kvtheory.model.predictions`). A token is needed whenever a token below it is, so the policy keys the
edge by K(v) = min(p(v), K(c) over v's cached child edges c), children first; a key changes only when its edge
is requested, and every request of a child requests its parent, so K(parent) <= K(child) holds for every
cached pair. To make room the policy evicts the cached leaf token of the largest key, deepest first, ties to
the larger trie node id: FIF's rule with the prediction in place of the true next request
(:class:`~kvtheory.policies.furthest.FurthestKeyCache`, a step per edge; the order of the keys keeps every
evicted token a leaf). True next requests already satisfy next(parent) <= next(child), so with the oracle
predictor K = p, and at batch size 1 its evictions are FIF's, token for token: it pays OPT exactly
(1-consistent). It has no robustness bound: predictions that reverse the true order make it evict what is
needed soonest.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvtheory.policies import register_predictive_policy
from kvtheory.policies.furthest import FurthestKeyCache
from kvtheory.policies.predicted import FollowsPredictions


def tree_keys(trie, told: dict[int, float], cached_key) -> dict[int, float]:
    """K(v) = min(p(v), K(c) over v's child edges c that are requested now or cached) for the edges ``told`` (their
    predictions p, the batch's edges), children first; ``cached_key(c)`` is a cached child's key, None when c is
    not cached. A token is needed whenever one below it is, so the key of a parent never exceeds a cached
    child's: evicting in decreasing key order (deepest first among equal keys) takes leaves only."""
    keys: dict[int, float] = {}
    for v in sorted(told, key=trie.depth.__getitem__, reverse=True):  # children before parents
        below = [keys[c] if c in keys else cached_key(c) for c in trie.children[v]]
        keys[v] = min([told[v], *(key for key in below if key is not None)])
    return keys


@register_predictive_policy
class BlindOracle(FollowsPredictions, FurthestKeyCache):
    """Evict by the latest predicted next request; ``predictions`` (a
    :class:`~kvtheory.model.predictions.Predictions` made for the schedule served) is required."""

    name = "blind-oracle"
    compiled_core = True
    core_class = "compiled.switch:CompiledBlindOracle"
    #: "auto" runs the compiled core from this many tokens in all (kvtheory.policies.dispatch): the per-edge class
    #: takes a heap step per edge (0.12 s on the paper-size GSP, 12.8 M tokens), less than loading numba and a core
    compiled_min_tokens = 50_000_000

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        self._predictions = self.required(predictions)
        self._step = 0
        self._told: dict[int, float] = {}

    @classmethod
    def compiled_told(cls, trie, budget: int, predictions, *, seed: int | None = None, evict_amount: str = "shortfall"):
        """The compiled core (:class:`~kvtheory.policies.compiled.switch.CompiledBlindOracle`) told ``predictions``,
        the same hits, where the rule opted in (``compiled_core`` on the class itself, or on the class a predictor
        is bound to); None otherwise."""
        rule = cls if cls.predictor is None else cls.__base__
        if not rule.__dict__.get("compiled_core", False):
            return None
        from kvtheory.policies.compiled.switch import CompiledBlindOracle  # numba, for the runs that use it

        return CompiledBlindOracle(cls, trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)

    def serve(self, batch: Sequence[int]) -> list[int]:
        self._step += 1
        told = self._predictions.told(self._step, {v for j in batch for v in self.trie.path(j)}, self.name)
        self._told = tree_keys(self.trie, told, lambda c: self._group_of[c] if self.kept_of(c) else None)
        return super().serve(batch)

    def _next_key(self, v: int) -> float:
        return self._told[v]
