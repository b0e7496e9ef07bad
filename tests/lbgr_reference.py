"""The oracle the lbgr-calibrated and lbgr-full routers are compared with route for route
(tests/cluster/test_lbgr_fast_path.py): the routers' arithmetic as it was before their fast path (kvtheory 8f570e8),
verbatim for ``learn=bias`` and ``learn=none`` (numpy on one-element arrays: single products and sums, rounded alike
on every machine), and for ``learn=full`` the fixed-order arithmetic of docs/cluster.md §lbgr-full written
out independently of kvtheory/cluster/routers/rls.py: nested lists, the products and left-to-right sums of
:func:`dot`, every operation rounded on its own (no numpy, whose BLAS rounds ``w @ x`` and ``P @ x`` as the
machine's kernel does)."""

from __future__ import annotations

import math

import numpy as np

from kvtheory.cluster.routers.approx_tree import ApproxTrees
from kvtheory.cluster.routers.base import Router, argmin
from kvtheory.cluster.routers.lbgr_calibrated import LBGRCalibrated


def dot(a, b) -> float:
    """a . b = (...((a_0 b_0 + a_1 b_1) + a_2 b_2) + ...), every product and sum rounded on its own."""
    total = a[0] * b[0]
    for k in range(1, len(a)):
        total = total + a[k] * b[k]
    return total


def identity(n: int, scale: float) -> list[list[float]]:
    return [[float(scale) if r == c else 0.0 for c in range(n)] for r in range(n)]


def rls_step(w: list[float], P: list[list[float]], x: list[float], error: float, lam: float, cap: float) -> bool:
    """The RLS step of learn=full on lists updated in place (skipped, False, when it would not be finite)."""
    n = len(x)
    px = [dot(P[r], x) for r in range(n)]
    denominator = lam + dot(x, px)
    if not math.isfinite(denominator) or denominator <= 0 or not math.isfinite(error):
        return False
    gain = [px[r] / denominator for r in range(n)]
    for r in range(n):
        w[r] = w[r] + gain[r] * error
    for r in range(n):
        for c in range(n):
            P[r][c] = (P[r][c] - gain[r] * px[c]) / lam
    for k in range(n - 1):
        w[k] = 0.0 if w[k] < 0.0 else w[k]
    trace = P[0][0]
    for k in range(1, n):
        trace = trace + P[k][k]
    if trace > cap:
        for r in range(n):
            for c in range(n):
                P[r][c] = P[r][c] * (cap / trace)
    return True


class ReferenceLBGRCalibrated(Router):
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
    """

    name = "lbgr-calibrated"
    OPTIONS = LBGRCalibrated.OPTIONS  # the router's; the tests give valid ones only (the router checks them)

    def __init__(self, view, *, seed=None, options=None) -> None:
        super().__init__(view, seed=seed, options=options)
        o = self.opts
        limit = int(o["max_tree_tokens"])
        self.trees = ApproxTrees(view.trie, self.m, limit if limit > 0 else None)
        self._log_rho = math.log(o["rho"])
        self._load = [0.0] * self.m
        self._tick = [0] * self.m
        self._pending: dict[int, tuple[float, int, list[float] | float]] = {}
        if o["learn"] == "full":
            self._w = [[1.0, 1.0, 1.0, 1.0, 0.0] for _ in range(self.m)]
            self._P = [identity(5, o["p0"]) for _ in range(self.m)]
        else:
            self._w = [np.zeros(1) for _ in range(self.m)]
            self._P = [np.eye(1) * o["p0"] for _ in range(self.m)]
        self._updates = 0
        self._last = None

    # -- the load estimate --------------------------------------------------------------------------
    def _ticks(self, now: float) -> int:
        return math.floor(now / self.opts["dt"] + 1e-9)

    def _decayed(self, i: int, now: float) -> float:
        n = self._ticks(now) - self._tick[i]
        if n > 0:
            self._load[i] *= math.exp(self._log_rho * n)
            self._tick[i] += n
        return self._load[i]

    def loads(self, now: float) -> list[float]:
        if self.opts["oracle"]:
            return [self.view.true_backlog(i, now) for i in range(self.m)]
        return [self._decayed(i, now) for i in range(self.m)]

    # -- routing ------------------------------------------------------------------------------------
    def choose(self, j: int, now: float) -> int:
        view = self.view
        if self.opts["oracle"]:
            cached = [view.true_cached(i, j) for i in range(self.m)]
        else:
            cached = self.trees.match_all(j)
        loads = self.loads(now)
        length, output = view.lengths[j], view.outputs[j]
        features, predictions, costs = [], [], []
        full = self.opts["learn"] == "full"
        for i in range(self.m):
            w = view.cluster[i]
            miss = w.a_miss * (length - cached[i])
            hit = w.a_cached * cached[i]
            out = w.output_time(length, output)
            costs.append(miss + hit + out)
            if full:
                x = [miss, hit, out, loads[i], 1.0]
                features.append(x)
                predictions.append(dot(self._w[i], x))
            else:
                features.append(miss + hit + out + loads[i])
                predictions.append(miss + hit + out + loads[i] + float(self._w[i][0]))
        i = argmin(predictions)
        self._last = (j, costs[i], features[i] if full else features[i])
        return i

    def routed(self, j: int, i: int, now: float) -> None:
        _, cost, feature = self._last
        self._decayed(i, now)
        self._load[i] += cost
        self._pending[j] = (cost, self._tick[i], feature)
        self.trees.insert(i, j)

    def finished(self, j: int, i: int, now: float, latency: float, ttft: float) -> None:
        cost, tick, feature = self._pending.pop(j)
        learn = self.opts["learn"]
        self._decayed(i, now)
        if self.in_flight[i] == 0:
            self._load[i] = 0.0
            if self.opts["reset_idle"]:
                self._w[i][-1] = 0.0
                if learn == "full":
                    self._P[i] = identity(5, self.opts["p0"])
                else:
                    self._P[i] = np.eye(1) * self.opts["p0"]
                return
        else:
            share = cost * math.exp(self._log_rho * (self._tick[i] - tick))
            self._load[i] = max(self._load[i] - share, 0.0)
        if learn == "none":
            return
        lam, w, P = self.opts["forgetting"], self._w[i], self._P[i]
        if learn == "full":
            self._updates += rls_step(w, P, feature, latency - dot(w, feature), lam, self.opts["p0"] * 5)
            return
        x = np.ones(1)
        error = (latency - feature) - float(w[0])
        px = P @ x
        denominator = lam + float(x @ px)
        if not math.isfinite(denominator) or denominator <= 0 or not math.isfinite(error):
            return
        gain = px / denominator
        w += gain * error
        P -= np.outer(gain, px)
        P /= lam
        self._updates += 1

    def state(self) -> dict:
        if self.opts["learn"] == "full":
            return {"weights": np.round(np.array(self._w), 6).tolist(), "updates": self._updates}
        return {"theta": [round(float(w[0]), 6) for w in self._w], "updates": self._updates}


class ReferenceLBGRFull(ReferenceLBGRCalibrated):
    """LBGR learning the hit, miss, output and load coefficients and the bias (``learn=full``)."""

    name = "lbgr-full"
    OPTIONS = {**ReferenceLBGRCalibrated.OPTIONS, "learn": "full", "p0": 1.0}
