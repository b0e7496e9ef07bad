"""Plug-in policies that break the model, each in one way (tests/policies/test_engine_checks.py): loaded with
``kvtheory --plugin`` they must be refused by ``evict`` and ``ratio`` with exit status 2 and one line, and
by :func:`kvtheory.testing.check_policy` with an AssertionError naming the rule."""

from __future__ import annotations

import sys
from pathlib import Path

import kvtheory as kv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from legacy_mru import MostRecentLeaf  # noqa: E402


@kv.register_policy
class Boaster(MostRecentLeaf):
    """Reports 10^6 hits per query."""

    name = "boaster"

    def serve(self, batch):
        super().serve(batch)
        return [10**6] * len(batch)


@kv.register_policy
class Hoarder(MostRecentLeaf):
    """Never evicts: the cache grows past the budget."""

    name = "hoarder"

    def serve(self, batch):
        hits = [self.cached_prefix(j) for j in batch]
        for j in batch:
            for v in self.trie.path(j):
                self.size += self.trie.edge_len[v] - self._kept.get(v, 0)
                self._kept[v] = self.trie.edge_len[v]
        return hits


@kv.register_policy
class OneHitTooMany(MostRecentLeaf):
    """Reports one hit more than it had."""

    name = "one-hit-too-many"

    def serve(self, batch):
        return [h + 1 for h in super().serve(batch)]


@kv.register_policy
class NotPrefixClosed(MostRecentLeaf):
    """Drops an inner edge from what it says it caches."""

    name = "not-prefix-closed"

    def kept(self):
        kept = super().kept()
        parents = {self.trie.parent[v] for v in kept}
        inner = sorted(v for v in kept if v in parents and v)
        if inner:
            del kept[inner[0]]
        return kept
