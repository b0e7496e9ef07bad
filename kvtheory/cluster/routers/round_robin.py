"""round-robin: worker 0, 1, ..., M-1, 0, ... in arrival order."""

from __future__ import annotations

from kvtheory.cluster.routers import register_router
from kvtheory.cluster.routers.base import Router


@register_router
class RoundRobin(Router):
    """Query number n (in arrival order) goes to worker n mod M."""

    name = "round-robin"

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        self._next = 0

    def choose(self, j: int, now: float) -> int:
        i = self._next
        self._next = (i + 1) % self.m
        return i
