"""A router's approximate prefix trees: per worker, what the router itself sent there.

SGLang's router keeps one radix tree of request texts with a tenant (worker) set per node. Here the
tree is laid over the workload's compressed prefix trie: routing query j to worker i marks every trie
node on j's path as held by i (``owners[v]`` is a bit mask of workers). A trie node is a point where
two queries of the workload diverge or one ends, so the longest prefix of q_j the router has sent to
worker i always ends at a node of j's path: ``match_all(j)`` walks j's path once (a step per radix
edge, never per token) and returns, for every worker, that length. Matching touches nothing.

Every insert stamps the nodes of the inserted path with a clock (re-inserting a path refreshes its
stamps). :meth:`trim` drops whole least-recently-stamped leaf edges of one worker's tree until it holds
at most a given number of tokens (SGLang drops least-recently-used leaves per tenant on a timer,
``evict_tenant_by_size``; this is the same rule on radix edges). With ``max_tokens`` every insert is
followed by such a trim that spares the path just inserted.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection

from kvtheory.model.trie import PrefixTrie


class ApproxTrees:
    def __init__(self, trie: PrefixTrie, m: int, max_tokens: int | None = None) -> None:
        self.trie = trie
        self.m = m
        self.owners = [0] * trie.n_nodes
        self.size = [0] * m
        self.max_tokens = max_tokens
        self._stamp: list[dict[int, int]] = [dict() for _ in range(m)]
        self._children: list[dict[int, int]] = [dict() for _ in range(m)]
        self._heaps: list[list[tuple[int, int]]] = [[] for _ in range(m)]
        self._clock = 0

    def match_all(self, j: int) -> list[int]:
        """For each worker, the number of leading tokens of q_j its tree holds."""
        depth, owners, parent = self.trie.depth, self.owners, self.trie.parent
        matched = [0] * self.m
        alive = (1 << self.m) - 1
        for v in self.trie.path(j):
            held = owners[v] & alive
            if held != alive:
                lost = alive & ~held
                stop = depth[parent[v]]
                for _ in range(lost.bit_count()):  # each worker that lost q_j here, lowest bit first
                    low = lost & -lost
                    matched[low.bit_length() - 1] = stop
                    lost ^= low
                alive = held
                if not alive:
                    return matched
        end = depth[self.trie.end[j]]
        for _ in range(alive.bit_count()):
            low = alive & -alive
            matched[low.bit_length() - 1] = end
            alive ^= low
        return matched

    def insert(self, i: int, j: int) -> None:
        """Record that q_j was sent to worker i (again: its path's stamps are refreshed)."""
        bit = 1 << i
        owners, edge_len, parent = self.owners, self.trie.edge_len, self.trie.parent
        self._clock += 1
        stamp, children = self._stamp[i], self._children[i]
        path = self.trie.path(j)
        for v in path:
            if not owners[v] & bit:
                owners[v] |= bit
                self.size[i] += edge_len[v]
                p = parent[v]
                children[p] = children.get(p, 0) + 1
            stamp[v] = self._clock
        heapq.heappush(self._heaps[i], (self._clock, path[-1]))
        if self.max_tokens is not None and self.size[i] > self.max_tokens:
            self.trim(i, self.max_tokens, keep=set(path))

    def trim(self, i: int, limit: int, keep: Collection[int] = ()) -> None:
        """Drop worker i's least recently stamped leaf edges (never one in ``keep``) until size <= limit."""
        bit = 1 << i
        heap, stamp, children = self._heaps[i], self._stamp[i], self._children[i]
        owners, edge_len, parent = self.owners, self.trie.edge_len, self.trie.parent
        aside = []
        while self.size[i] > limit and heap:
            time, v = heapq.heappop(heap)
            if not owners[v] & bit or children.get(v) or stamp.get(v) != time:
                continue
            if v in keep:
                aside.append((time, v))
                continue
            owners[v] &= ~bit
            self.size[i] -= edge_len[v]
            del stamp[v]
            p = parent[v]
            children[p] -= 1
            if p and not children[p]:
                heapq.heappush(heap, (stamp[p], p))
        for entry in aside:
            heapq.heappush(heap, entry)


def grid_ticks(now: float, interval: float) -> int:
    """The number of instants k * interval (k >= 1) of a fixed timer grid started at 0 that are <= now.

    A timer that fires at such an instant acts before a router event at the same instant. The 1e-9
    guards against float division: 0.06 / 0.02 is 2.9999999999999996, and 0.06 s holds the third tick.
    """
    return int(now / interval + 1e-9)


class PeriodicTrim:
    """SGLang's eviction thread: every ``interval`` seconds (from 0) each worker's tree is trimmed to
    ``limit`` tokens (LRU leaf edges first, :meth:`ApproxTrees.trim`).

    The simulation has no timer events, so the router calls :meth:`advance` at each of its events:
    between two router events the trees do not change, so trimming once for all the instants passed since
    the last event gives exactly the trees the timer would have left.
    """

    def __init__(self, trees: ApproxTrees, interval: float, limit: int) -> None:
        self.trees = trees
        self.interval = interval
        self.limit = limit
        self.fired = 0  # timer instants passed
        self.trimmed = 0  # trims that removed something

    def advance(self, now: float) -> None:
        due = grid_ticks(now, self.interval)
        if due <= self.fired:
            return
        self.fired = due
        trees = self.trees
        for i in range(trees.m):
            if trees.size[i] > self.limit:
                trees.trim(i, self.limit)
                self.trimmed += 1
