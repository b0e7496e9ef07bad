"""A user's policy written against the subclass API of kvtheory 0.1 (``serve``, ``cached_prefix``, ``kept``,
keeping its own books): MRU-leaf, as examples/custom_policy.py wrote it before policies became rules. It
must keep working, checked by the engine like any plug-in, with exactly the misses of the rule version
(tests/policies/test_engine_checks.py)."""

from __future__ import annotations

from collections.abc import Sequence

import kvtheory as kv


class MostRecentLeaf(kv.EvictionPolicy):
    """MRU-leaf: the cache as tokens kept per radix edge (a prefix of each edge's tokens); to make room,
    remove the last token of the cached leaf edge whose latest request is the most recent (ties: the
    larger trie node id), skipping the current batch's edges."""

    name = "legacy-mru-leaf"

    def __init__(self, trie: kv.PrefixTrie, budget: int, *, seed: int | None = None) -> None:
        super().__init__(trie, budget, seed=seed)
        self._kept: dict[int, int] = {}  # edge -> tokens cached, counted from its head
        self._used: dict[int, int] = {}  # edge -> the last step whose batch contained it
        self._step = 0

    def cached_prefix(self, j: int) -> int:
        return sum(self._kept.get(v, 0) for v in self.trie.path(j))

    def kept(self) -> dict[int, int]:
        return dict(self._kept)

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie = self.trie
        self._step += 1
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = {v for j in batch for v in trie.path(j)}
        missing = sum(trie.edge_len[v] - self._kept.get(v, 0) for v in on_paths)
        while self.size + missing > self.budget:
            parents = {trie.parent[v] for v in self._kept}
            leaves = [v for v in self._kept if v not in parents and v not in on_paths]
            victim = max(leaves, key=lambda v: (self._used[v], v))
            self._kept[victim] -= 1
            self.size -= 1
            if self._kept[victim] == 0:
                del self._kept[victim]
        for v in on_paths:
            self.size += trie.edge_len[v] - self._kept.get(v, 0)
            self._kept[v] = trie.edge_len[v]
            self._used[v] = self._step
        return hits
