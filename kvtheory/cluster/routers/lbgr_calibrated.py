"""lbgr-calibrated: LBGR on the cost model's seconds (docs/cluster.md §lbgr-calibrated), and lbgr-full, which
learns every coefficient. The authors' own rules are the router ``lbgr`` (routers/lbgr.py)."""

from __future__ import annotations

import math

import numpy as np

from kvtheory.cluster.routers import register_router, rls
from kvtheory.cluster.routers.approx_tree import ApproxTrees
from kvtheory.cluster.routers.base import Router, argmin
from kvtheory.errors import InputError
from kvtheory.policies.dispatch import long_enough


@register_router
class LBGRCalibrated(Router):
    """Route to the worker of least predicted end-to-end latency, predicted with the cluster's cost model.

    For worker i and query j the prediction is

        a_miss_i * u_ij + a_cached_i * c_ij + O_ij + P~_i + theta_i,

    where c_ij is the part of q_j the router's approximate tree of worker i holds (the true cache
    with ``oracle=true``), u_ij = |q_j| - c_ij, O_ij the output time from the worker's cost model (the
    same for every worker of a homogeneous cluster), P~_i the estimated outstanding work and theta_i a
    learned residual. Ties go to the lowest index.

    P~_i: the chosen worker's estimate grows by the query's predicted cost a_miss*u + a_cached*c + O;
    every estimate decays by ``rho`` at each multiple of ``dt`` seconds (reference: 31/32 every 20 ms);
    when a query finishes, its remaining share (its predicted cost times rho^(ticks since dispatch)) is
    subtracted (and the estimate is exactly 0 once nothing is in flight). ``rho=1`` keeps the sum of
    the predicted costs of the queries in flight (least-load's ``work``).

    theta_i: recursive least squares with forgetting factor ``forgetting`` (0.992) and P0 = ``p0``
    (1e6) on observed latency minus the linear prediction, learned per worker on each completion
    (``learn=bias``, as the reference router does). ``learn=full`` (router ``lbgr-full``) learns the weights of
    all five terms instead, features (a_miss*u, a_cached*c, O, P~, 1) from w0 = (1, 1, 1, 1, 0), with
    the four coefficients kept non-negative, P0 = 1 (features are in seconds, weights dimensionless)
    and the trace of the covariance capped at 5 * P0 against windup in directions the data do not
    excite (c and O are nearly constant on many workloads). ``learn=none`` keeps theta = 0.

    With ``learn=full`` the prediction and the RLS step are the fixed-order arithmetic of
    :mod:`kvtheory.cluster.routers.rls` (every product and sum rounded on its own, sums left to right), so
    the routes do not depend on the machine; they run compiled (:mod:`kvtheory.cluster.routers.compiled.rls`)
    where a compiled core pays off (:func:`~kvtheory.policies.dispatch.long_enough`), else as plain Python,
    with the same bits.
    """

    name = "lbgr-calibrated"
    OPTIONS = {
        "rho": 31.0 / 32.0,
        "dt": 0.02,
        "forgetting": 0.992,
        "p0": 1e6,
        "learn": "bias",
        "max_tree_tokens": 0,
        "reset_idle": False,
        "oracle": False,
    }

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        o = self.opts
        if not 0 < o["rho"] <= 1:
            raise InputError(f"{self.name}: rho must lie in (0, 1], got {o['rho']}")
        if not o["dt"] > 0:
            raise InputError(f"{self.name}: dt must be positive, got {o['dt']}")
        if not 0 < o["forgetting"] <= 1:
            raise InputError(f"{self.name}: forgetting must lie in (0, 1], got {o['forgetting']}")
        if not o["p0"] > 0:
            raise InputError(f"{self.name}: p0 must be positive, got {o['p0']}")
        if o["learn"] not in ("bias", "full", "none"):
            raise InputError(f"{self.name}: learn={o['learn']!r} is not bias, full or none")
        limit = int(o["max_tree_tokens"])
        self.trees = ApproxTrees(view.trie, self.m, limit if limit > 0 else None)
        self._learn, self._oracle, self._dt = o["learn"], bool(o["oracle"]), o["dt"]
        self._lam, self._p0, self._cap = float(o["forgetting"]), o["p0"], float(o["p0"] * 5)
        self._log_rho = math.log(o["rho"])
        self._load = [0.0] * self.m
        self._tick = [0] * self.m
        self._pending: dict[int, tuple[float, int, float | tuple[float, ...]]] = {}
        workers = view.cluster.workers
        self._a_miss = [w.a_miss for w in workers]
        self._a_cached = [w.a_cached for w in workers]
        self._same_model = [workers.index(w) for w in workers]  # O_ij is that of the first equal worker
        # learn=bias: theta_i and its (scalar) covariance; learn=full: weights w_i (M x 5) and covariances P_i
        # (M x 25, row by row), lists for the Python arithmetic, arrays for the compiled one
        self._theta = [0.0] * self.m
        self._p = [float(o["p0"])] * self.m
        self._identity = [float(o["p0"]) if r == c else 0.0 for r in range(5) for c in range(5)]
        self._weights = [[1.0, 1.0, 1.0, 1.0, 0.0] for _ in range(self.m)]
        self._covariance = [list(self._identity) for _ in range(self.m)]
        self._predict, self._rls_update = rls.predict, rls.rls_update
        self._compiled = self._learn == "full" and long_enough(len(view.lengths))
        if self._compiled:
            from kvtheory.cluster.routers.compiled import rls as compiled  # numba, loaded when it pays off

            self._predict, self._rls_update = compiled.predict, compiled.rls_update
            self._weights, self._covariance = np.array(self._weights), np.array(self._covariance)
        self._updates = 0
        self._last = None

    # -- the load estimate --------------------------------------------------------------------------
    def _ticks(self, now: float) -> int:
        return math.floor(now / self._dt + 1e-9)

    def _decay_to(self, i: int, ticks: int) -> float:
        """Worker i's estimate decayed to the tick count ``ticks`` (rho per tick since its last decay)."""
        n = ticks - self._tick[i]
        if n > 0:
            self._load[i] *= math.exp(self._log_rho * n)
            self._tick[i] = ticks
        return self._load[i]

    def loads(self, now: float) -> list[float]:
        if self._oracle:
            return [self.view.true_backlog(i, now) for i in range(self.m)]
        ticks = self._ticks(now)
        return [self._decay_to(i, ticks) for i in range(self.m)]

    # -- routing ------------------------------------------------------------------------------------
    def choose(self, j: int, now: float) -> int:
        view, m = self.view, self.m
        if self._oracle:
            cached = [view.true_cached(i, j) for i in range(m)]
        else:
            cached = self.trees.match_all(j)
        loads = self.loads(now)
        length, output = view.lengths[j], view.outputs[j]
        workers, same, a_miss, a_cached = view.cluster.workers, self._same_model, self._a_miss, self._a_cached
        outs: list[float] = []
        for i in range(m):
            outs.append(outs[same[i]] if same[i] < i else workers[i].output_time(length, output))
        misses = [a_miss[i] * (length - cached[i]) for i in range(m)]
        hits = [a_cached[i] * cached[i] for i in range(m)]
        costs = [misses[i] + hits[i] + outs[i] for i in range(m)]
        if self._learn != "full":
            theta = self._theta
            i = argmin([costs[i] + loads[i] + theta[i] for i in range(m)])
            self._last = (costs[i], costs[i] + loads[i])
            return i
        predict, weights = self._predict, self._weights
        i = argmin([predict(weights, i, misses[i], hits[i], outs[i], loads[i]) for i in range(m)])
        self._last = (costs[i], (misses[i], hits[i], outs[i], loads[i]))
        return i

    def routed(self, j: int, i: int, now: float) -> None:
        cost, feature = self._last
        self._decay_to(i, self._ticks(now))
        self._load[i] += cost
        self._pending[j] = (cost, self._tick[i], feature)
        self.trees.insert(i, j)

    def finished(self, j: int, i: int, now: float, latency: float, ttft: float) -> None:
        cost, tick, feature = self._pending.pop(j)
        self._decay_to(i, self._ticks(now))
        if self.in_flight[i] == 0:
            self._load[i] = 0.0
            if self.opts["reset_idle"]:
                self._theta[i] = 0.0
                self._p[i] = float(self._p0)
                self._weights[i][4] = 0.0
                self._covariance[i][:] = self._identity
                return
        else:
            share = cost * math.exp(self._log_rho * (self._tick[i] - tick))
            self._load[i] = max(self._load[i] - share, 0.0)
        if self._learn == "bias":
            self._updates += self._learn_bias(i, (latency - feature) - self._theta[i])
        elif self._learn == "full":
            self._updates += self._learn_full(i, feature, latency)

    def _learn_bias(self, i: int, error: float) -> bool:
        """RLS on the bias alone (x = 1): gain g = p / (lambda + p), theta += g * error, p <- (p - g p) / lambda."""
        lam, p = self._lam, self._p[i]
        denominator = lam + p
        if not math.isfinite(denominator) or denominator <= 0 or not math.isfinite(error):
            return False
        gain = p / denominator
        self._theta[i] += gain * error
        self._p[i] = (p - gain * p) / lam
        return True

    def _learn_full(self, i: int, feature: tuple[float, ...], latency: float) -> bool:
        """RLS on all five weights (:func:`~kvtheory.cluster.routers.rls.rls_update` states the step)."""
        error = latency - self._predict(self._weights, i, *feature)
        return self._rls_update(self._weights, self._covariance, i, *feature, error, self._lam, self._cap)

    def state(self) -> dict:
        if self._learn == "full":
            return {"weights": np.round(np.asarray(self._weights), 6).tolist(), "updates": self._updates}
        return {"theta": [round(float(t), 6) for t in self._theta], "updates": self._updates}


@register_router
class LBGRFull(LBGRCalibrated):
    """LBGR learning the hit, miss, output and load coefficients and the bias (``learn=full``)."""

    name = "lbgr-full"
    OPTIONS = {**LBGRCalibrated.OPTIONS, "learn": "full", "p0": 1.0}
