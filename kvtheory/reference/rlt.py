"""Reference RLT (randomized leaf token, a marking algorithm), one token and one draw at a time.

Every token node of a served query is marked. To make room, evict a token chosen uniformly at random
among the unmarked cached leaf tokens (those of the batch are marked); a parent whose last cached child
went becomes a candidate if unmarked. When room is needed and no candidate is left, a new phase starts:
every mark is cleared except those on the current batch's paths. Randomness: numpy default_rng(seed).
"""

from __future__ import annotations

import numpy as np

from kvtheory.reference.core import LeafPool, ReferencePolicy, register_reference


@register_reference
class ReferenceRLT(ReferencePolicy):
    name = "rlt"
    randomized = True

    def __init__(self, queries, budget: int, *, seed: int | None = None) -> None:
        super().__init__(queries, budget, seed=seed)
        self.rng = np.random.default_rng(seed)
        self.marked: set[int] = set()
        self.candidates = LeafPool()  # exactly the unmarked cached leaf tokens
        self.phases = 1

    def _serve(self, batch, paths, protected, missing) -> None:
        tree, pool = self.tree, self.candidates
        for v in protected:
            self.marked.add(v)
            pool.discard(v)
        while tree.size + missing > self.budget:
            if not pool:
                cleared = self.marked - protected
                if not cleared:
                    raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
                self.phases += 1
                self.marked -= cleared
                for v in sorted(cleared):
                    if tree.is_leaf(v):
                        pool.add(v)
                continue
            v = pool.choose(self.rng)
            pool.discard(v)
            became_leaf = tree.remove(v)
            if became_leaf is not None and became_leaf not in self.marked:
                pool.add(became_leaf)
        self._fill(paths)
