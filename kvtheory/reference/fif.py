"""Reference FIF (furthest in future), token by token: the offline optimum of docs/model.md §The offline optimum.

To make room, evict the cached leaf token (off the batch's paths) whose next request is furthest in the
future, where a token's next request is the first later step (batch index of the schedule) whose batch
contains it, and never again counts as after every step. Ties: the token contained by the fewest queries
of that next batch first (each of them will miss it), then the deeper token, then the token on the larger
trie node id (kvtheory's PrefixTrie numbering of radix edges, the fixed order fif.py uses). At batch size
1 the multiplicity is always 1 and this is the rule of docs/model.md §The offline optimum;
kvtheory/optimum/fif.py explains why the depth-first rule is not optimal with batches.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from kvtheory.reference.core import EdgeNumbering, LeafHeap, ReferencePolicy


class ReferenceFIF(ReferencePolicy):
    """``schedule[t]`` is the batch (query indices) of step t; by default one query per step in order.
    ``serve`` must be called with the schedule's batches in order."""

    name = "fif"

    def __init__(
        self, queries, budget: int, schedule: Sequence[Sequence[int]] | None = None, *, seed: int | None = None
    ) -> None:
        super().__init__(queries, budget, seed=seed)
        tree = self.tree
        if schedule is None:
            schedule = [[j] for j in range(len(self.queries))]
        self.schedule = [list(b) for b in schedule]
        self.t = 0
        never = len(self.schedule)
        self.requests: dict[int, list[int]] = {}
        self.multiplicity: dict[tuple[int, int], int] = {}
        for t, b in enumerate(self.schedule):
            for j in b:
                for v in tree.ids[j]:
                    self.multiplicity[v, t] = self.multiplicity.get((v, t), 0) + 1
            for v in {v for j in b for v in tree.ids[j]}:
                self.requests.setdefault(v, []).append(t)
        self.next = [never] * len(tree.parent)
        self.never = never
        edge = EdgeNumbering(tree, self.queries).edge
        depth = tree.depth
        # a smaller key goes first: furthest next request, then fewest requesters, deepest, larger edge id
        self.leaves = LeafHeap(
            lambda v: (-self.next[v], self.multiplicity.get((v, self.next[v]), 0), -depth[v], -edge[v])
        )

    def _serve(self, batch, paths, protected, missing) -> None:
        t = self.t
        if t >= len(self.schedule) or batch != self.schedule[t]:
            raise ValueError("FIF must be served its schedule's batches in order")
        tree = self.tree
        aside: list = []
        while tree.size + missing > self.budget:
            v = self.leaves.pop(tree, protected, aside)
            became_leaf = tree.remove(v)
            if became_leaf is not None:
                self.leaves.push(became_leaf)
        self.leaves.restore(aside)
        self._fill(paths)
        for v in protected:
            times = self.requests[v]
            i = bisect_right(times, t)
            self.next[v] = times[i] if i < len(times) else self.never
            if tree.is_leaf(v):
                self.leaves.push(v)  # the key changed: push the new one
        self.t += 1
