"""cache-aware: SGLang's router (sgl-router's cache_aware policy), as docs/cluster.md §cache-aware states it."""

from __future__ import annotations

from kvtheory.cluster.routers import register_router
from kvtheory.cluster.routers.approx_tree import ApproxTrees, PeriodicTrim
from kvtheory.cluster.routers.base import Router, argmin
from kvtheory.cluster.routers.characters import CHARS_PER_TOKEN, MAX_TREE_CHARS, TRIM_INTERVAL, check_tree_options


@register_router
class CacheAware(Router):
    """SGLang's cache-aware routing over the router's approximate trees (one shared tree with a worker
    set per node, as SGLang keeps it).

    Load = queries in flight. If (max_load - min_load) > ``balance_abs`` and max_load >
    ``balance_rel`` * min_load, send to the least-loaded worker. Otherwise, if the best match rate
    (characters of q's longest prefix in the tree / characters of q) exceeds ``cache_threshold``, send
    to a worker holding that prefix (ties: fewer in flight, then lower index); else to the worker whose
    tree holds the fewest characters (ties: lower index). The query then joins the chosen worker's tree.
    Characters are ``chars_per_token`` per token (routers/characters.py), so the rate equals the token
    rate and the smallest tree is the one with the fewest tokens. Every ``trim_interval`` seconds each
    worker's tree is trimmed to ``max_tree_chars`` characters (LRU leaves first). Defaults are the
    paper's baseline (0.5, 32, 1.0001; current SGLang: 0.3, 64, 1.5) and SGLang's 2^24 characters
    every 60 s. ``balance_abs=inf`` with ``cache_threshold=0`` is pure cache affinity (claim 9);
    ``oracle=true`` matches against the workers' true caches instead.
    """

    name = "cache-aware"
    OPTIONS = {
        "cache_threshold": 0.5,
        "balance_abs": 32.0,
        "balance_rel": 1.0001,
        "chars_per_token": CHARS_PER_TOKEN,
        "max_tree_chars": MAX_TREE_CHARS,
        "trim_interval": TRIM_INTERVAL,
        "oracle": False,
    }

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        o = self.opts
        limit = check_tree_options(self.name, o["chars_per_token"], o["max_tree_chars"], o["trim_interval"])
        self.trees = ApproxTrees(view.trie, self.m)
        self.trim = PeriodicTrim(self.trees, float(o["trim_interval"]), limit)
        self.decisions = {"balance": 0, "match": 0, "smallest_tree": 0}

    def balance_abs(self) -> float:
        return float(self.opts["balance_abs"])

    def matches(self, j: int) -> list[int]:
        if self.opts["oracle"]:
            return [self.view.true_cached(i, j) for i in range(self.m)]
        return self.trees.match_all(j)

    def choose(self, j: int, now: float) -> int:
        self.trim.advance(now)
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
        return {"decisions": dict(self.decisions), "trims": self.trim.trimmed}
