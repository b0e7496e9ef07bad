"""random: a uniformly random worker per query, from a seeded numpy Generator."""

from __future__ import annotations

import numpy as np

from kvtheory.cluster.routers import register_router
from kvtheory.cluster.routers.base import Router


@register_router
class RandomRouter(Router):
    """Each query goes to a worker drawn uniformly at random (``numpy.random.default_rng(seed)``)."""

    name = "random"

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        self._rng = np.random.default_rng(seed)

    def choose(self, j: int, now: float) -> int:
        return int(self._rng.integers(self.m))
