"""A router's approximate prefix trees: per worker, what the router itself sent there.

SGLang's router keeps one radix tree of request texts with a tenant (worker) set per node. Here the
tree is laid over the workload's compressed prefix trie: routing query j to worker i marks every trie
node on j's path as held by i (``owners[v]`` is a bit mask of workers). A trie node is a point where
two queries of the workload diverge or one ends, so the longest prefix of q_j the router has sent to
worker i always ends at a node of j's path: ``match_all(j)`` walks j's path once (a step per radix
edge, never per token) and returns, for every worker, that length.

With ``max_tokens`` each worker's tree is bounded: after an insert, whole least-recently-inserted-or-
matched leaf edges are dropped until the tree fits (SGLang drops least-recently-used leaves per tenant
on a timer, character by character; this is the same rule on radix edges, applied at once).
"""

from __future__ import annotations

import heapq

from kvtheory.model.trie import PrefixTrie


class ApproxTrees:
    def __init__(self, trie: PrefixTrie, m: int, max_tokens: int | None = None) -> None:
        self.trie = trie
        self.m = m
        self.owners = [0] * trie.n_nodes
        self.size = [0] * m
        self.max_tokens = max_tokens
        if max_tokens is not None:
            self._stamp = [dict() for _ in range(m)]
            self._children = [dict() for _ in range(m)]
            self._heaps: list[list] = [[] for _ in range(m)]
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
                while lost:
                    low = lost & -lost
                    matched[low.bit_length() - 1] = stop
                    lost ^= low
                alive = held
                if not alive:
                    return matched
        end = depth[self.trie.end[j]]
        while alive:
            low = alive & -alive
            matched[low.bit_length() - 1] = end
            alive ^= low
        return matched

    def insert(self, i: int, j: int) -> None:
        """Record that q_j was sent to worker i."""
        bit = 1 << i
        owners, edge_len = self.owners, self.trie.edge_len
        bounded = self.max_tokens is not None
        if bounded:
            self._clock += 1
            stamp, children, heap = self._stamp[i], self._children[i], self._heaps[i]
            parent = self.trie.parent
        path = self.trie.path(j)
        for v in path:
            if not owners[v] & bit:
                owners[v] |= bit
                self.size[i] += edge_len[v]
                if bounded:
                    p = parent[v]
                    children[p] = children.get(p, 0) + 1
            if bounded:
                stamp[v] = self._clock
        if bounded:
            heapq.heappush(heap, (self._clock, path[-1]))
            if self.size[i] > self.max_tokens:
                self._shrink(i, set(path))

    def _shrink(self, i: int, keep: set[int]) -> None:
        bit = 1 << i
        heap, stamp, children = self._heaps[i], self._stamp[i], self._children[i]
        owners, edge_len, parent = self.owners, self.trie.edge_len, self.trie.parent
        aside = []
        while self.size[i] > self.max_tokens and heap:
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
