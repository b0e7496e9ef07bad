"""Evict the cached token whose next request is furthest in the future, as a key per radix edge says: the one
engine of FIF (the keys come from the known schedule, :mod:`kvtheory.optimum.fif`) and of blind-oracle (they
come from predictions, :mod:`kvtheory.policies.blind_oracle`).

Each cached edge v carries the key K(v) it was given when it was last requested: the later its next request
(by the schedule, or as predicted), the larger the key. Edges of equal key form a group. To make room the
engine drains the group of the largest key, deepest token first, ties at equal depth to the larger trie node
id (:class:`~kvtheory.policies.water_level.WaterLevel`, a step per edge that joins or leaves the level, not
per token), then the group of the next largest key, and so on. Since every token of an edge shares its key,
and a parent edge is requested whenever its child is (so its key is never larger than the child's, when the
keys are true next requests), this evicts the cached leaf token of the largest key, one token at a time.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from kvtheory.policies.base import EvictionPolicy
from kvtheory.policies.water_level import WaterLevel


class FurthestKeyCache(EvictionPolicy):
    """Leaf eviction by the largest key K(v), deepest token first. Subclasses define :meth:`_next_key`."""

    def __init__(self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall") -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        self._group_of: list = [None] * trie.n_nodes  # the key an edge is cached under, None if none
        self._groups: dict = {}
        self._order: list = []  # the keys of _groups, negated: a max-heap (an emptied group stays until drained)

    def _next_key(self, v: int):
        """K(v) after v's request in the batch being served (numbers: a larger one is evicted first)."""
        raise NotImplementedError

    def kept_of(self, v: int) -> int:
        """Tokens of edge v cached now, counted from the edge's head."""
        group = self._groups.get(self._group_of[v])
        return 0 if group is None else group.kept_of(v)

    def cached_prefix(self, j: int) -> int:
        return sum(self.kept_of(v) for v in self.trie.path(j))

    def kept(self) -> dict[int, int]:
        kept = {v: group.kept_of(v) for group in self._groups.values() for v in group.members()}
        return {v: k for v, k in kept.items() if k}

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie = self.trie
        paths = [trie.path(j) for j in batch]
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        cached = {}
        for v in on_paths:  # requested now: out of their groups, so never evicted in this step
            group = self._groups.get(self._group_of[v])
            cached[v] = 0 if group is None else group.remove(v)
        edge_len = trie.edge_len
        missing = sum(edge_len[v] - cached[v] for v in on_paths)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            self._evict(self.tokens_to_free(overflow, missing), overflow)
        for v in on_paths:
            self.size += edge_len[v] - cached[v]
            key = self._next_key(v)
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = WaterLevel(trie.depth, trie.parent)
                heapq.heappush(self._order, -key)
            group.add(v, edge_len[v])
            self._group_of[v] = key
        return hits

    def _evict(self, tokens: int, need: int) -> None:
        """Drain the group of the largest key first; a group that frees nothing is empty and is dropped. With
        nothing left, stop if ``need`` tokens (the shortfall) went, else raise. Every round drops a group or
        frees a token, so the rounds end, by return or by the error, within tokens + (groups) + 1 of them."""
        freed = 0
        for _ in range(tokens + len(self._order) + 1):
            if tokens <= 0:
                return
            if not self._order:
                if freed >= need:
                    return
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            key = -self._order[0]
            evicted = self._groups[key].drain(tokens)
            if not evicted:
                heapq.heappop(self._order)
                del self._groups[key]
                continue
            self.size -= evicted
            tokens -= evicted
            freed += evicted
        raise AssertionError(f"evicting {tokens} more tokens did not end within its bound on the rounds")
