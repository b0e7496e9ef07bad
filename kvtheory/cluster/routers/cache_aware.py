"""cache-aware: SGLang's router (sgl-router's cache_aware policy), as docs/cluster.md §cache-aware states it."""

from __future__ import annotations

import math

from kvtheory.cluster.routers import register_router
from kvtheory.cluster.routers.approx_tree import ApproxTrees
from kvtheory.cluster.routers.base import Router, argmin


@register_router
class CacheAware(Router):
    """SGLang's cache-aware routing over the router's own approximate trees.

    Load = queries in flight. If (max_load - min_load) > ``balance_abs`` and max_load >
    ``balance_rel`` * min_load, send to the least-loaded worker. Otherwise, if the best match rate
    (tokens of q in the best worker's tree / |q|) exceeds ``cache_threshold``, send to that worker
    (ties: fewer in flight, then lower index); else to the worker with the smallest tree (ties: lower
    index). The query's tokens then join the chosen worker's tree. Defaults are the paper's baseline
    (0.5, 32, 1.0001); current SGLang uses 0.3, 64, 1.5. ``balance_abs=inf`` with
    ``cache_threshold=0`` is pure cache affinity (claim 9). ``max_tree_tokens`` bounds each worker's
    tree (LRU leaf edges go first); ``oracle=true`` matches against the workers' true caches instead.
    """

    name = "cache-aware"
    OPTIONS = {
        "cache_threshold": 0.5,
        "balance_abs": 32.0,
        "balance_rel": 1.0001,
        "max_tree_tokens": 0,
        "oracle": False,
    }

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        limit = int(self.opts["max_tree_tokens"])
        self.trees = ApproxTrees(view.trie, self.m, limit if limit > 0 else None)
        self.decisions = {"balance": 0, "match": 0, "smallest_tree": 0}

    def balance_abs(self) -> float:
        return float(self.opts["balance_abs"])

    def matches(self, j: int) -> list[int]:
        if self.opts["oracle"]:
            return [self.view.true_cached(i, j) for i in range(self.m)]
        return self.trees.match_all(j)

    def choose(self, j: int, now: float) -> int:
        load = self.in_flight
        high, low = max(load), min(load)
        if high - low > self.balance_abs() and high > self.opts["balance_rel"] * low:
            self.decisions["balance"] += 1
            return argmin(load)
        matched = self.matches(j)
        best = max(matched)
        if best / self.view.lengths[j] > self.opts["cache_threshold"]:
            self.decisions["match"] += 1
            candidates = [i for i in range(self.m) if matched[i] == best]
            return min(candidates, key=lambda i: (load[i], i))
        self.decisions["smallest_tree"] += 1
        return argmin(self.trees.size)

    def routed(self, j: int, i: int, now: float) -> None:
        self.trees.insert(i, j)

    def state(self) -> dict:
        return {"decisions": dict(self.decisions)}


INF = math.inf
