"""lbgr: learning-based greedy routing with the rules of the authors' router (docs/cluster.md §lbgr)."""

from __future__ import annotations

import math

from kvtheory.cluster.routers import register_router
from kvtheory.cluster.routers.approx_tree import ApproxTrees, PeriodicTrim, grid_ticks
from kvtheory.cluster.routers.base import Router
from kvtheory.cluster.routers.characters import CHARS_PER_TOKEN, MAX_TREE_CHARS, TRIM_INTERVAL, check_tree_options
from kvtheory.errors import InputError

#: the load estimate is multiplied by DECAY_NUM / DECAY_DEN (integer division) every DECAY_INTERVAL s
DECAY_NUM, DECAY_DEN, DECAY_INTERVAL = 31, 32, 0.02
#: ms per uncached character; the floor of the base cost and of the score; the incumbent's margin;
#: the floor of the residual's target (all in ms)
MS_PER_CHAR = FLOOR_MS = MARGIN_MS = TARGET_FLOOR_MS = 1.0


def round_half_up(x: float) -> int:
    """x rounded to the nearest integer, halves away from zero (Rust's ``f64::round``), for x >= 0."""
    return math.floor(x + 0.5)


@register_router
class LBGR(Router):
    """The authors' LBGR (sgl-router, policy ``eta_online_3d``), every time in milliseconds.

    For query j (C_j = ``chars_per_token`` * |q_j| characters) and worker i, with c_ij the characters
    of q_j's longest prefix in the router's tree of worker i and u_ij = C_j - c_ij:

    * base_ij = max(1 ms * u_ij, 1 ms); cached characters cost nothing; no output term;
    * P~_i, an integer: + round(base) when a query is routed to i; P~_i <- floor(P~_i * 31 / 32) at
      every multiple of 20 ms of the clock (a fixed timer grid); when a query finishes,
      - round(round(base) * (31/32)^floor(elapsed / 20 ms)), elapsed since its routing, floored at 0;
      never reset;
    * score_ij = max(base_ij + P~_i + theta_i, 1 ms); the workers are scanned in order and one
      replaces the incumbent only if its score + 1 ms < the incumbent's;
    * theta_i: recursive least squares on a bias alone (forgetting ``forgetting``, P0 = ``p0``),
      at each completion on i with target y = max(e2e_ms - (base + P~_i at routing), 1.0), e2e_ms the
      query's latency; ``learn=none`` keeps theta = 0;
    * the tree: the query's path is inserted at routing and again at completion (refreshing its
      recency); every ``trim_interval`` s each worker's tree is trimmed to ``max_tree_chars``
      characters, least recently inserted leaves first.

    ``oracle=true`` takes c_ij from worker i's true cache instead of the router's tree.
    """

    name = "lbgr"
    OPTIONS = {
        "chars_per_token": CHARS_PER_TOKEN,
        "forgetting": 0.992,
        "p0": 1e6,
        "learn": "bias",
        "max_tree_chars": MAX_TREE_CHARS,
        "trim_interval": TRIM_INTERVAL,
        "oracle": False,
    }

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        o = self.opts
        if not 0 < o["forgetting"] <= 1:
            raise InputError(f"lbgr: forgetting must lie in (0, 1], got {o['forgetting']}")
        if not o["p0"] > 0:
            raise InputError(f"lbgr: p0 must be positive, got {o['p0']}")
        if o["learn"] not in ("bias", "none"):
            raise InputError(f"lbgr: learn={o['learn']!r} is not bias or none")
        limit = check_tree_options(self.name, o["chars_per_token"], o["max_tree_chars"], o["trim_interval"])
        self.chars_per_token = float(o["chars_per_token"])
        self.trees = ApproxTrees(view.trie, self.m)
        self.trim = PeriodicTrim(self.trees, float(o["trim_interval"]), limit)
        self.load = [0] * self.m
        self.theta = [0.0] * self.m
        self._p = [float(o["p0"])] * self.m
        self._decays = 0  # timer instants applied to the loads
        self._pending: dict[int, tuple[int, float, float, int]] = {}  # j -> (increment, routed at, base, load)
        self._chosen: tuple[float, int] | None = None
        self._updates = 0

    # -- timers -------------------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Apply the decay instants and tree trims due by ``now`` (timers fire before router events)."""
        due = grid_ticks(now, DECAY_INTERVAL)
        load = self.load
        while self._decays < due and any(load):
            for i in range(self.m):
                load[i] = load[i] * DECAY_NUM // DECAY_DEN
            self._decays += 1
        self._decays = max(self._decays, due)
        self.trim.advance(now)

    # -- routing ------------------------------------------------------------------------------------
    def cached_chars(self, j: int) -> list[float]:
        if self.opts["oracle"]:
            cached = [self.view.true_cached(i, j) for i in range(self.m)]
        else:
            cached = self.trees.match_all(j)
        return [self.chars_per_token * c for c in cached]

    def choose(self, j: int, now: float) -> int:
        self.advance(now)
        total = self.chars_per_token * self.view.lengths[j]
        best = best_score = None
        for i, cached in enumerate(self.cached_chars(j)):
            base = max(MS_PER_CHAR * (total - cached), FLOOR_MS)
            score = max(base + self.load[i] + self.theta[i], FLOOR_MS)
            if best is None or score + MARGIN_MS < best_score:
                best, best_score, best_base = i, score, base
        self._chosen = (best_base, self.load[best])
        return best

    def routed(self, j: int, i: int, now: float) -> None:
        base, load = self._chosen
        increment = round_half_up(base)
        self.load[i] += increment
        self._pending[j] = (increment, now, base, load)
        self.trees.insert(i, j)

    def finished(self, j: int, i: int, now: float, latency: float, ttft: float) -> None:
        self.advance(now)
        increment, routed_at, base, load = self._pending.pop(j)
        ticks = grid_ticks(now - routed_at, DECAY_INTERVAL)
        remaining = round_half_up(increment * (DECAY_NUM / DECAY_DEN) ** ticks)
        self.load[i] = max(self.load[i] - remaining, 0)
        if self.opts["learn"] == "bias":
            target = max(1000.0 * float(latency) - (base + load), TARGET_FLOOR_MS)
            lam, p = self.opts["forgetting"], self._p[i]
            gain = p / (lam + p)
            self.theta[i] += gain * (target - self.theta[i])
            self._p[i] = (p - gain * p) / lam
            self._updates += 1
        self.trees.insert(i, j)

    def state(self) -> dict:
        return {
            "theta_ms": [round(t, 6) for t in self.theta],
            "load_ms": list(self.load),
            "updates": self._updates,
            "tree_chars": [self.chars_per_token * s for s in self.trees.size],
            "trims": self.trim.trimmed,
        }
