"""Reference LFU-leaf, token by token.

The definition (kvtheory/policies/lfu.py): evict, one token at a time, the cached leaf token requested
the fewest times so far, counting every request of every served query since the start (cached or not,
once per query even inside one batch); ties go to the least recently requested (by batch), then to the
token on the larger trie node id (kvtheory's PrefixTrie numbering of radix edges).
"""

from __future__ import annotations

from kvtheory.reference.core import EdgeNumbering, LeafHeap, ReferencePolicy, register_reference


@register_reference
class ReferenceLFU(ReferencePolicy):
    name = "lfu"

    def __init__(self, queries, budget: int, *, seed: int | None = None) -> None:
        super().__init__(queries, budget, seed=seed)
        n = len(self.tree.parent)
        self.count = [0] * n
        self.last = [0] * n
        self.step = 0
        edge = EdgeNumbering(self.tree, self.queries).edge
        # (count, last) only grow, so a leaf needs one entry (see LeafHeap).
        self.leaves = LeafHeap(lambda v: (self.count[v], self.last[v], -edge[v]))

    def _serve(self, batch, paths, protected, missing) -> None:
        tree = self.tree
        self.step += 1
        aside: list = []
        while tree.size + missing > self.budget:
            v = self.leaves.pop(tree, protected, aside)
            became_leaf = tree.remove(v)
            if became_leaf is not None:
                self.leaves.push(became_leaf)
        self.leaves.restore(aside)
        self._fill(paths)
        for nodes in paths:
            for v in nodes:
                self.count[v] += 1
                self.last[v] = self.step
        for v in protected:
            if tree.is_leaf(v):
                self.leaves.push(v)
