"""least-load: send each query to the worker with the least outstanding load (greedy list scheduling)."""

from __future__ import annotations

from kvtheory.cluster.routers import register_router
from kvtheory.cluster.routers.base import Router, argmin
from kvtheory.errors import InputError

LOADS = ("work", "requests", "tokens")


@register_router
class LeastLoad(Router):
    """Greedy least-load routing; ties go to the lowest worker index.

    ``load=work`` (default): the worker's outstanding work as the router estimates it, the sum over
    the queries it routed there and has not seen finish of their predicted service time
    a_miss * |q| + O (the router knows no cache, so every token is predicted a miss; with
    a_cached = a_miss the prediction is exact). When every query arrives at once this is Graham's list
    scheduling on the P_i of docs/cluster.md §Workers and service time, the greedy of claim 8.
    ``load=requests``: queries in flight (SGLang's shortest queue). ``load=tokens``: prompt tokens in
    flight. With ``oracle=true`` and ``load=work`` the load is the worker's true backlog instead.
    """

    name = "least-load"
    OPTIONS = {"load": "work", "oracle": False}

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        if self.opts["load"] not in LOADS:
            raise InputError(f"least-load: load={self.opts['load']!r} is not one of {', '.join(LOADS)}")
        self._load = [0.0] * self.m
        self._size: dict[int, float] = {}

    def _weight(self, i: int, j: int) -> float:
        kind = self.opts["load"]
        if kind == "work":
            return self.view.predicted_cost(i, j, 0)
        if kind == "tokens":
            return float(self.view.lengths[j])
        return 1.0

    def choose(self, j: int, now: float) -> int:
        if self.opts["oracle"] and self.opts["load"] == "work":
            loads = [self.view.true_backlog(i, now) for i in range(self.m)]
        else:
            loads = self._load
        return argmin(loads)

    def routed(self, j: int, i: int, now: float) -> None:
        weight = self._weight(i, j)
        self._size[j] = weight
        self._load[i] += weight

    def finished(self, j: int, i: int, now: float, latency: float, ttft: float) -> None:
        self._load[i] = 0.0 if self.in_flight[i] == 0 else self._load[i] - self._size.pop(j)
        self._size.pop(j, None)
