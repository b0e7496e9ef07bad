"""FIF (furthest in future): the exact offline optimum for one worker, in O(T log T).

To make room, evict the cached leaf token whose next request is furthest in the future (never again
counts as infinity); ties go to the deeper token, then to the larger trie node id.

Why this runs per edge. All tokens of a radix edge share their next request time, and next(parent) <=
next(child). Let T* be the largest next time among cached tokens off the current batch's paths: every
cached token with next = T* has only such tokens below it, so FIF removes that whole group before any
other, deepest first, lowering the tops of the group's edges together like a water level. One eviction
therefore costs a heap operation per edge it touches, whatever the number of tokens.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

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
        self._never = len(self._schedule)
        self._step = 0
        requests: dict[int, list[int]] = {}
        for t, batch in enumerate(self._schedule):
            for v in {v for j in batch for v in trie.path(j)}:
                requests.setdefault(v, []).append(t)
        self._requests = requests
        self._cursor = dict.fromkeys(requests, 0)
        self._kept = [0] * trie.n_nodes
        self._next = [self._never] * trie.n_nodes
        self._group_size: dict[int, int] = {}
        self._group_heap: dict[int, list] = {}
        self._times: list[int] = []

    def cached_prefix(self, j: int) -> int:
        kept = self._kept
        return sum(kept[v] for v in self.trie.path(j))

    def kept(self) -> dict[int, int]:
        return {v: k for v, k in enumerate(self._kept) if k}

    def serve(self, batch: Sequence[int]) -> list[int]:
        t = self._step
        if t >= self._never or tuple(batch) != self._schedule[t]:
            raise ValueError("FIF must be served its schedule's batches in order")
        self._step += 1
        trie = self.trie
        paths = [trie.path(j) for j in batch]
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        kept, edge_len = self._kept, trie.edge_len
        for v in on_paths:
            if kept[v]:
                self._group_size[t] -= 1
        overflow = self.size + sum(edge_len[v] - kept[v] for v in on_paths) - self.budget
        if overflow > 0:
            self._evict(overflow)
        for v in on_paths:
            self.size += edge_len[v] - kept[v]
            kept[v] = edge_len[v]
            self._cursor[v] += 1
            occurrences = self._requests[v]
            nxt = occurrences[self._cursor[v]] if self._cursor[v] < len(occurrences) else self._never
            self._next[v] = nxt
            self._enter_group(v, nxt)
        return hits

    def _enter_group(self, v: int, nxt: int) -> None:
        size = self._group_size.get(nxt, 0)
        if size == 0:
            heapq.heappush(self._times, -nxt)
            self._group_heap[nxt] = []
        self._group_size[nxt] = size + 1
        heapq.heappush(self._group_heap[nxt], (-self.trie.depth[v], -v))

    def _evict(self, tokens: int) -> None:
        while tokens > 0:
            if not self._times:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            nxt = -self._times[0]
            if self._group_size.get(nxt, 0) == 0:
                heapq.heappop(self._times)
                self._group_heap.pop(nxt, None)
                continue
            tokens -= self._drain(nxt, tokens)

    def _drain(self, nxt: int, tokens: int) -> int:
        """Evict up to ``tokens`` tokens of group ``nxt``, deepest first; return how many went.

        The active edges share one top level; between events (an edge's top joining the level, or the
        level reaching an active edge's floor) each level step evicts one token per active edge.
        """
        depth, parent = self.trie.depth, self.trie.parent
        kept, heap = self._kept, self._group_heap[nxt]
        active: set[int] = set()
        floors: list[tuple[int, int]] = []
        evicted = 0

        def take_entering(at: int) -> None:
            while heap:
                top, neg_v = heap[0]
                v = -neg_v
                if kept[v] == 0 or self._next[v] != nxt or depth[parent[v]] + kept[v] != -top:
                    heapq.heappop(heap)
                    continue
                if -top != at:
                    return
                heapq.heappop(heap)
                active.add(v)
                heapq.heappush(floors, (-depth[parent[v]], v))

        def next_entering() -> int | None:
            while heap:
                top, neg_v = heap[0]
                v = -neg_v
                if kept[v] == 0 or self._next[v] != nxt or depth[parent[v]] + kept[v] != -top:
                    heapq.heappop(heap)
                    continue
                return -top
            return None

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
                    self._group_size[nxt] -= 1
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
                    self._group_size[nxt] -= 1
            active = set()
        for v in active:
            kept[v] = level - depth[parent[v]]
            heapq.heappush(heap, (-level, -v))
        self.size -= evicted
        return evicted
