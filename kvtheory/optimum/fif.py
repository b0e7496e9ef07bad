"""FIF (furthest in future): the exact offline optimum for one worker, in O(T log T).

To make room, evict the cached leaf token whose next request is furthest in the future (never again
counts as infinity); ties go to the token that the fewest queries of that next batch contain (its
multiplicity m: every one of them will miss it), then to the deeper token, then to the larger trie
node id. At batch size 1 every m is 1 and this is MODEL.md's rule word for word. At batch size >= 2,
MODEL.md's rule (depth before multiplicity) is not optimal: with B = 7 and batches
{[1,2,3,4], [1,2,3,5], [6,7]}, {[9], [10], [11]}, {[1,2,3,4], [1,2,3,5], [6,7]}, it evicts token
(1,2,3), shared by two queries of the third batch, instead of (6,7), and pays 17 misses against the
optimum's 16. Within one next batch, the evicted tokens cost the sum of their m; since m never grows
from a node to its child, the set of the r smallest (m, -depth) tokens is itself a set of leaves to
peel, so the order above takes the cheapest r tokens of the group.

Why this runs per edge. All tokens of a radix edge share their next request time and multiplicity,
next(parent) <= next(child), and a parent's m is at least its child's. Let (T*, m*) be the first group
in that order among cached tokens off the current batch's paths: every such token has only tokens of
the same group below it, so FIF removes that whole group before any other, deepest first, lowering the
tops of the group's edges together like a water level. One eviction therefore costs a heap operation
per edge it touches, whatever the number of tokens.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import EvictionPolicy


class FurthestInFuture(EvictionPolicy):
    """Offline FIF over a known schedule: ``schedule[t]`` is the batch (trie sequence indices) of step t.

    ``serve`` must be called with the batches of the schedule, in order.
    """

    name = "fif"

    def __init__(self, trie: PrefixTrie, budget: int, schedule: Sequence[Sequence[int]], *, seed=None) -> None:
        super().__init__(trie, budget, seed=seed)
        self._schedule = [tuple(batch) for batch in schedule]
        self._step = 0
        # A group key orders (next step T, multiplicity m): larger T first, then smaller m.
        self._width = max(len(batch) for batch in self._schedule) + 2
        self._never = self._group_key(len(self._schedule), 0)
        requests: dict[int, list[int]] = {}
        for t, batch in enumerate(self._schedule):
            multiplicity = Counter(v for j in batch for v in trie.path(j))
            for v, m in multiplicity.items():
                requests.setdefault(v, []).append(self._group_key(t, m))
        self._requests = requests
        self._cursor = dict.fromkeys(requests, 0)
        self._kept = [0] * trie.n_nodes
        self._next = [self._never] * trie.n_nodes
        self._group_size: dict[int, int] = {}
        self._group_heap: dict[int, list] = {}
        self._groups: list[int] = []

    def _group_key(self, step: int, multiplicity: int) -> int:
        return step * self._width + (self._width - 1 - multiplicity)

    def cached_prefix(self, j: int) -> int:
        kept = self._kept
        return sum(kept[v] for v in self.trie.path(j))

    def kept(self) -> dict[int, int]:
        return {v: k for v, k in enumerate(self._kept) if k}

    def serve(self, batch: Sequence[int]) -> list[int]:
        t = self._step
        if t >= len(self._schedule) or tuple(batch) != self._schedule[t]:
            raise ValueError("FIF must be served its schedule's batches in order")
        self._step += 1
        trie = self.trie
        paths = [trie.path(j) for j in batch]
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        kept, edge_len = self._kept, trie.edge_len
        for v in on_paths:
            if kept[v]:
                self._group_size[self._next[v]] -= 1
        overflow = self.size + sum(edge_len[v] - kept[v] for v in on_paths) - self.budget
        if overflow > 0:
            self._evict(overflow)
        for v in on_paths:
            self.size += edge_len[v] - kept[v]
            kept[v] = edge_len[v]
            self._cursor[v] += 1
            occurrences = self._requests[v]
            group = occurrences[self._cursor[v]] if self._cursor[v] < len(occurrences) else self._never
            self._next[v] = group
            self._enter_group(v, group)
        return hits

    def _enter_group(self, v: int, group: int) -> None:
        size = self._group_size.get(group, 0)
        if size == 0:
            heapq.heappush(self._groups, -group)
            self._group_heap[group] = []
        self._group_size[group] = size + 1
        heapq.heappush(self._group_heap[group], (-self.trie.depth[v], -v))

    def _evict(self, tokens: int) -> None:
        while tokens > 0:
            if not self._groups:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            group = -self._groups[0]
            if self._group_size.get(group, 0) == 0:
                heapq.heappop(self._groups)
                self._group_heap.pop(group, None)
                continue
            tokens -= self._drain(group, tokens)

    def _drain(self, group: int, tokens: int) -> int:
        """Evict up to ``tokens`` tokens of group ``group``, deepest first; return how many went.

        The active edges share one top level; between events (an edge's top joining the level, or the
        level reaching an active edge's floor) each level step evicts one token per active edge.
        """
        depth, parent = self.trie.depth, self.trie.parent
        kept, heap = self._kept, self._group_heap[group]
        active: set[int] = set()
        floors: list[tuple[int, int]] = []
        evicted = 0

        def next_entering() -> int | None:
            """The highest top among the group's edges not yet active (stale heap entries dropped)."""
            while heap:
                top, neg_v = heap[0]
                v = -neg_v
                if kept[v] and self._next[v] == group and depth[parent[v]] + kept[v] == -top:
                    return -top
                heapq.heappop(heap)
            return None

        def take_entering(at: int) -> None:
            """Make active every edge whose top is ``at``."""
            while next_entering() == at:
                _, neg_v = heapq.heappop(heap)
                active.add(-neg_v)
                heapq.heappush(floors, (-depth[parent[-neg_v]], -neg_v))

        level = 0
        while evicted < tokens:
            if not active:
                level = next_entering()
                if level is None:
                    break
                take_entering(level)
            lowest = max(-floors[0][0], next_entering() or 0)
            width = len(active)
            room = width * (level - lowest)
            if tokens - evicted >= room:
                evicted += room
                level = lowest
                while floors and -floors[0][0] == level:
                    _, v = heapq.heappop(floors)
                    active.remove(v)
                    kept[v] = 0
                    self._group_size[group] -= 1
                take_entering(level)
                continue
            steps, extra = divmod(tokens - evicted, width)
            level -= steps
            evicted = tokens
            ordered = sorted(active, reverse=True)
            for v in ordered[:extra]:
                kept[v] = level - 1 - depth[parent[v]]
            for v in ordered[extra:]:
                kept[v] = level - depth[parent[v]]
            for v in ordered:
                if kept[v]:
                    heapq.heappush(heap, (-(depth[parent[v]] + kept[v]), -v))
                else:
                    self._group_size[group] -= 1
            active = set()
        for v in active:
            kept[v] = level - depth[parent[v]]
            heapq.heappush(heap, (-level, -v))
        self.size -= evicted
        return evicted
