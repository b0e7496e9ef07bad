"""guard: blind-oracle inside Guard's framework ("Toward a lightweight and robust design for caching with
predictions", arXiv 2507.16242, 2025), lifted to the prefix tree (docs/policies.md §guard).

Marks, phases, keys, requests and k are those of :mod:`kvtheory.policies.predicted_marking`: a marked edge has
been requested in the phase, so the candidates (unmarked cached leaves) hold the tokens of Guard's
``old_unvisited`` set (cached at the phase start, neither requested nor evicted since), and a phase starts when
room is needed and none is left, as Guard's does when ``old_unvisited`` is empty. Each eviction, caused by the
request of token x, takes one leaf token off the batch's paths:

- x evicted in this phase (an error of the predictions detected): x is **guarded**, and the eviction takes a
  uniformly random candidate (a seeded numpy Generator, one ``integers`` draw over the candidates in ascending
  edge order);
- otherwise blind-oracle's choice among the unguarded tokens: the furthest-predicted cached leaf, marked or not,
  whose last token is not guarded (if every such leaf's last token is guarded, which cannot happen on paging,
  the furthest-predicted cached leaf).

A guarded token stays guarded until the phase ends, and so is never evicted by blind-oracle's choice (a
candidate is unmarked and so never guarded).

On paging (one-token queries) this is Guard around BlindOracle step for step: the paper proves it 1-consistent
(with exact predictions FIF evicts no page requested again in its phase, so no error is ever detected and guard
pays OPT) and (2 H_{k-1} + 2)-robust. On trees no bound is proven; claim P7 checks the ratios.
"""

from __future__ import annotations

from kvtheory.policies import register_predictive_policy
from kvtheory.policies.predicted_marking import PredictedMarking


@register_predictive_policy
class Guard(PredictedMarking):
    """Guard around blind-oracle on the prefix tree (module docstring); ``predictions`` is required. Its compiled
    core (``compiled_told``, the same hits and draws): :class:`~kvtheory.policies.compiled.marking.CompiledGuard`."""

    name = "guard"
    compiled_core = True
    core_class = "compiled.marking:CompiledGuard"

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)
        self._guarded: set[tuple[int, int]] = set()  # (edge, position) of the tokens guarded in this phase

    def _phase_started(self) -> None:
        self._guarded.clear()

    def _choose(self, cause: tuple[int, int], on_paths: set[int]) -> tuple[int, int]:
        kept = self._kept
        if cause in self._evicted:
            self._guarded.add(cause)
            return self._uniform(self._candidates), 0
        cached = self._leaves - on_paths
        unguarded = {u for u in cached if (u, int(kept[u])) not in self._guarded}
        v = self._furthest(unguarded or cached)
        self._guarded.discard((v, int(kept[v])))
        return v, 0
