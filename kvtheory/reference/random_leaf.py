"""Reference random-leaf: evict a uniformly random cached leaf token off the batch's paths, one at a time."""

from __future__ import annotations

import numpy as np

from kvtheory.reference.core import LeafPool, ReferencePolicy, register_reference


@register_reference
class ReferenceRandomLeaf(ReferencePolicy):
    name = "random-leaf"
    randomized = True

    def __init__(self, queries, budget: int, *, seed: int | None = None) -> None:
        super().__init__(queries, budget, seed=seed)
        self.rng = np.random.default_rng(seed)
        self.candidates = LeafPool()  # the cached leaf tokens, less the current batch's while it is served

    def _serve(self, batch, paths, protected, missing) -> None:
        tree, pool = self.tree, self.candidates
        for v in protected:
            pool.discard(v)
        while tree.size + missing > self.budget:
            if not pool:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            v = pool.choose(self.rng)
            pool.discard(v)
            became_leaf = tree.remove(v)
            if became_leaf is not None and became_leaf not in protected:
                pool.add(became_leaf)
        self._fill(paths)
        for v in sorted(protected):
            if tree.is_leaf(v):
                pool.add(v)
