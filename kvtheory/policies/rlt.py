"""RLT: randomized leaf-token eviction, a marking algorithm (the paper's logarithmic policy)."""

from __future__ import annotations

from collections.abc import Collection

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies import register_policy
from kvtheory.policies.edge_cache import LeafTokenSampler


@register_policy
class RandomizedLeafToken(LeafTokenSampler):
    """RLT (docs/policies.md §RLT): every token node of a served query is marked; to make room, evict a leaf token
    chosen uniformly at random among unmarked cached leaf tokens (never on the current path), one token
    at a time. When no unmarked leaf is left a new phase starts: all marks are cleared except the
    current batch's paths. Randomness: ``numpy.random.default_rng(seed)``.
    """

    name = "rlt"
    compiled_core = True
    marking = True

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self._marked_nodes: set[int] = set()
        self.phases = 1

    def _mark(self, v: int) -> None:
        super()._mark(v)
        self._marked_nodes.add(v)

    def _no_candidates(self, on_paths: Collection[int]) -> bool:
        """A new phase, unless every marked edge is on the batch's paths (then there is nothing to unmark)."""
        survivors = self._marked_nodes & set(on_paths)
        cleared = self._marked_nodes - survivors
        if not cleared:
            return False
        self.phases += 1
        self._marked_nodes = survivors
        for v in sorted(cleared):  # ascending ids: the pool's order is reproducible
            self._unmark(v)
        return True
