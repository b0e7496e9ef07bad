"""Runs of tokens for the SGLang-style policies (lru, token-lru, fifo), kept per token.

SGLang's RadixCache groups tokens into nodes ("runs"): chains of token nodes whose inner tokens have
exactly one cached child. Here every cached token v simply records ``run[v]``, the creation id of the run
that holds it, and ``stamp[r]`` is run r's time (last access for LRU, insertion for FIFO). A run is a
leaf when its last token is a leaf token, and its key is (stamp, creation id), smallest first.

Serving a query (docs/policies.md §L-LRU): walk its cached prefix token by token; every run entered is
accessed now. If the cached prefix stops inside a run (the query diverges there or ends there), that run
is refreshed and then split after the last matched token: the upper part (the head) becomes a new run
with a new creation id, the lower part (the tail) keeps the original id; both carry the run's stamp.
Then, to make room, runs are evicted leaf first, never one holding a token of the batch; at last the
query's remaining tokens are inserted as one new run. Time advances once per batch.
"""

from __future__ import annotations

from kvtheory.reference.core import ROOT, LeafHeap, ReferencePolicy


class RunPolicy(ReferencePolicy):
    """``refresh``: hits give every run on the path the current time (LRU) or nothing (FIFO).
    ``refresh_split``: the run a query stops inside is refreshed before the split (SGLang does this;
    False gives the variant that only stamps the new head, for showing that the refresh matters).
    ``whole_node``: evict a whole leaf run at a time, else its last token only.
    """

    refresh: bool = True
    refresh_split: bool = True
    whole_node: bool = True

    def __init__(self, queries, budget: int, *, seed: int | None = None) -> None:
        super().__init__(queries, budget, seed=seed)
        self.run = [0] * len(self.tree.parent)
        self.stamp: dict[int, int] = {}
        self.clock = 0
        self.last_id = 0
        self.leaves = LeafHeap(lambda v: (self.stamp[self.run[v]], self.run[v]))

    def _new_run(self, stamp: int) -> int:
        self.last_id += 1
        self.stamp[self.last_id] = stamp
        return self.last_id

    def _access(self, nodes: list[int]) -> None:
        """Match a query against the cache: refresh the runs it enters, split the one it stops inside."""
        tree, run = self.tree, self.run
        entered: list[int] = []
        last = None
        for v in nodes:
            if not tree.cached[v]:
                break
            if not entered or run[v] != entered[-1]:
                entered.append(run[v])
            last = v
        if last is None:
            return
        r = run[last]
        goes_on = any(tree.cached[c] and run[c] == r for c in tree.children[last].values())
        if self.refresh:
            for s in entered:
                if s != r or not goes_on or self.refresh_split:
                    self.stamp[s] = self.clock
        if goes_on:
            head = self._new_run(self.clock if self.refresh else self.stamp[r])
            v = last
            while v != ROOT and run[v] == r:
                run[v] = head
                v = tree.parent[v]

    def _serve(self, batch, paths, protected, missing) -> None:
        tree, run = self.tree, self.run
        self.clock += 1
        for nodes in paths:
            self._access(nodes)
        aside: list = []
        while tree.size + missing > self.budget:
            v = self.leaves.pop(tree, protected, aside)
            r = run[v]
            while True:
                became_leaf = tree.remove(v)
                if became_leaf is not None:
                    self.leaves.push(became_leaf)
                p = tree.parent[v]
                if not self.whole_node or p == ROOT or run[p] != r:
                    break
                v = p
        self.leaves.restore(aside)
        for nodes in paths:
            self._access(nodes)  # a later query of the batch may stop inside a run an earlier one inserted
            m = tree.matched(nodes)
            if m < len(nodes):
                r = self._new_run(self.clock)
                for v in nodes[m:]:
                    tree.add(v)
                    run[v] = r
                self.leaves.push(nodes[-1])
