"""Predictions of the next request, as data (docs/predictions.md): what a learning-augmented policy is told.

Steps t = 1..T are the batches of a schedule (at batch size beta, step t serves queries (t-1)beta..t beta-1).
A **request** r is a radix edge v requested at step t (on the path of a query of batch t; an edge is requested
once per step however many queries of the batch contain it). Its actual next request a_r is the next step whose
batch requests v, or T + 1 ("never"). A predictor gives each request a predicted time p_r (a real number; only
the order of the predictions a policy compares matters). All tokens of an edge share its requests, so a
prediction per edge is one per token node; the error counts every token node:

    eta = sum over requests r of edge_len(v_r) * |p_r - a_r|,

in the unit of OPT (tokens), so that eta / OPT is the error per unit of optimal cost.

Predictors (``PREDICTORS``; the noisy ones draw from ``numpy.random.default_rng(seed)``, with the gap
g_r = a_r - t_r >= 1 and strength s = ``noise``):

- ``oracle``: p = a (eta = 0);
- ``logdis``: p = t + g * exp(N(0, s)), the gap scaled by a log-normal factor;
- ``dis``: p = t + g + N(0, s) * g;
- ``bin``: with probability s, p is uniform on the integers t + 1 .. T + 1, else p = a;
- ``adversarial``: p = 2 (T + 1) - a, the order of the true next requests reversed: among cached edges,
  the one needed soonest is predicted furthest (eta is then as large as this order-reversing map makes it);
- ``learned``: an online predictor that learns from the trace's own past and nothing later (the length T of
  the trace aside, to write "never" as T + 1). An edge requested before predicts its last gap again,
  p = t + (t - t_prev). A first request predicts the mean of every gap seen so far if at least half of the
  edges seen so far have come back (a conversation's next turn re-requests its prefix), else never. Every
  request updates the counts after its prediction is made (:class:`Learner`; :class:`OnlinePredictions` tells
  it batch by batch to a policy whose schedule is decided as it is served, a worker of a cluster).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.trie import PrefixTrie


@dataclass(frozen=True)
class Requests:
    """Every request of a schedule: request r is edge ``edges[r]`` at step ``steps[r]`` (1..T), its actual next
    request at ``actual[r]`` (T + 1: never); the requests of step t are ``offsets[t-1]:offsets[t]``, in
    ascending edge order."""

    steps: np.ndarray
    edges: np.ndarray
    actual: np.ndarray
    offsets: np.ndarray
    horizon: int

    @classmethod
    def of(cls, trie: PrefixTrie, schedule: Sequence[Sequence[int]]) -> Requests:
        """The requests of serving ``schedule`` (batches of trie sequence indices) over ``trie``."""
        return cls.served([{v for j in batch for v in trie.path(j)} for batch in schedule], len(schedule))

    @classmethod
    def served(cls, requested: Sequence[set[int]], horizon: int) -> Requests:
        """The requests of a schedule whose step t requests the edges ``requested[t-1]``, with "never" written
        as ``horizon`` + 1 (``horizon`` >= the number of steps)."""
        steps, edges = [], []
        offsets = [0]
        for t, on_paths in enumerate(requested, start=1):
            edges.extend(sorted(on_paths))
            steps.extend([t] * len(on_paths))
            offsets.append(len(edges))
        actual = np.full(len(edges), horizon + 1, dtype=np.int64)
        seen: dict[int, int] = {}
        for r in range(len(edges) - 1, -1, -1):
            v = edges[r]
            if v in seen:
                actual[r] = seen[v]
            seen[v] = steps[r]
        return cls(
            np.asarray(steps, dtype=np.int64),
            np.asarray(edges, dtype=np.int64),
            actual,
            np.asarray(offsets, dtype=np.int64),
            horizon,
        )


@dataclass(frozen=True)
class Predictions:
    """A predicted next-request time for every request of a schedule, and its error (module docstring)."""

    requests: Requests
    predicted: np.ndarray
    eta: float
    predictor: str
    noise: float | None

    def at(self, step: int) -> dict[int, float]:
        """{edge v: predicted time of its next request} for the edges requested at ``step`` (1..T)."""
        lo, hi = self.requests.offsets[step - 1], self.requests.offsets[step]
        return dict(zip(self.requests.edges[lo:hi].tolist(), self.predicted[lo:hi].tolist()))

    def told(self, step: int, edges: set[int], policy: str) -> dict[int, float]:
        """:meth:`at` ``step``, for a policy serving a batch of radix ``edges``; an InputError naming ``policy``
        when the schedule is longer, or the batch is not the one the predictions were made for."""
        if step > self.requests.horizon:
            raise InputError(f"policy {policy!r}: more batches served than the predictions were made for")
        told = self.at(step)
        if set(told) != edges:
            raise InputError(f"policy {policy!r}: batch {step} is not the one the predictions were made for")
        return told


def _oracle(requests: Requests, noise: float, rng: np.random.Generator) -> np.ndarray:
    return requests.actual.astype(np.float64)


def _logdis(requests: Requests, noise: float, rng: np.random.Generator) -> np.ndarray:
    gap = (requests.actual - requests.steps).astype(np.float64)
    return requests.steps + gap * np.exp(rng.normal(0.0, noise, gap.size))


def _dis(requests: Requests, noise: float, rng: np.random.Generator) -> np.ndarray:
    gap = (requests.actual - requests.steps).astype(np.float64)
    return requests.steps + gap + rng.normal(0.0, noise, gap.size) * gap


def _bin(requests: Requests, noise: float, rng: np.random.Generator) -> np.ndarray:
    predicted = requests.actual.astype(np.float64)
    replaced = rng.random(predicted.size) < noise
    # uniform on t + 1 .. T + 1: integers(low, high) excludes high
    uniform = rng.integers(requests.steps + 1, requests.horizon + 2)
    predicted[replaced] = uniform[replaced]
    return predicted


def _adversarial(requests: Requests, noise: float, rng: np.random.Generator) -> np.ndarray:
    return (2 * (requests.horizon + 1) - requests.actual).astype(np.float64)


class Learner:
    """``learned``, one request at a time (requests in the order of :class:`Requests`: by step, then by edge),
    with "never" written as ``horizon`` + 1: what a serving system can run, since it reads nothing later."""

    def __init__(self, horizon: int) -> None:
        self.never = float(horizon + 1)
        self._last: dict[int, int] = {}  # edge -> its last request
        self._came_back: set[int] = set()  # edges requested at least twice so far
        self._gap_sum, self._gaps = 0.0, 0

    def predict(self, v: int, t: int) -> float:
        """The predicted next request of edge ``v`` requested at step ``t``; then ``v``'s request is learned."""
        before = self._last.get(v)
        if before is not None:
            predicted = float(t + (t - before))
            self._gap_sum += t - before
            self._gaps += 1
            self._came_back.add(v)
        elif self._gaps and 2 * len(self._came_back) >= len(self._last):
            predicted = t + self._gap_sum / self._gaps
        else:
            predicted = self.never
        self._last[v] = t
        return predicted


def _learned(requests: Requests, noise: float, rng: np.random.Generator) -> np.ndarray:
    learner = Learner(requests.horizon)
    pairs = zip(requests.edges.tolist(), requests.steps.tolist())
    return np.array([learner.predict(v, t) for v, t in pairs], dtype=np.float64)


#: predictor name -> (function of (requests, noise, rng) to predicted times, whether it reads ``noise``)
PREDICTORS: dict[str, tuple[Callable, bool]] = {
    "oracle": (_oracle, False),
    "logdis": (_logdis, True),
    "dis": (_dis, True),
    "bin": (_bin, True),
    "adversarial": (_adversarial, False),
    "learned": (_learned, False),
}


def check_noise(predictor: str, noise: float | None) -> float | None:
    """The noise strength ``predictor`` runs with: ``noise`` for a noisy one (required; >= 0, and <= 1 for
    ``bin``, a probability), None for one that reads none (where giving one is an InputError)."""
    if predictor not in PREDICTORS:
        raise InputError(f"unknown predictor {predictor!r}; known predictors: {', '.join(PREDICTORS)}")
    noisy = PREDICTORS[predictor][1]
    if not noisy:
        if noise is not None:
            raise InputError(f"predictor {predictor!r} takes no noise; --noise is for {', '.join(_noisy())}")
        return None
    if noise is None:
        raise InputError(f"predictor {predictor!r} needs a noise strength (--noise X)")
    if not np.isfinite(noise) or noise < 0 or (predictor == "bin" and noise > 1):
        bound = "a probability in [0, 1]" if predictor == "bin" else "a finite number >= 0"
        raise InputError(f"--noise {noise}: the strength of {predictor!r} is {bound}")
    return float(noise)


def _noisy() -> list[str]:
    return [name for name, (_, noisy) in PREDICTORS.items() if noisy]


def predict(
    trie: PrefixTrie,
    schedule: Sequence[Sequence[int]],
    predictor: str,
    *,
    noise: float | None = None,
    seed: int | None = None,
) -> Predictions:
    """The predictions ``predictor`` (with strength ``noise``, drawn under ``seed``) gives for serving
    ``schedule`` over ``trie``, with their error eta.

    >>> from kvtheory.model.workload import Workload
    >>> w = Workload.from_token_lists([[1], [2], [1]])
    >>> p = predict(w.trie, [[0], [1], [2]], "oracle")
    >>> p.at(1), p.at(2), p.eta
    ({1: 3.0}, {2: 4.0}, 0.0)
    """
    noise = check_noise(predictor, noise)
    requests = Requests.of(trie, schedule)
    function = PREDICTORS[predictor][0]
    predicted = function(requests, noise, np.random.default_rng(seed))
    return Predictions(requests, predicted, _eta(trie, requests, predicted), predictor, noise)


def _eta(trie: PrefixTrie, requests: Requests, predicted: np.ndarray) -> float:
    """eta = sum over requests r of edge_len(v_r) * |p_r - a_r|."""
    weights = np.asarray(trie.edge_len, dtype=np.float64)[requests.edges]
    return float(np.sum(weights * np.abs(predicted - requests.actual)))


class OnlinePredictions:
    """Predictions made while a schedule is decided, for a policy whose batches are not known in advance (a
    worker of a cluster, whose queries the router picks online): ``learned`` (:class:`Learner`), the one
    predictor that needs no future, told step by step. ``horizon`` bounds the number of steps and writes "never"
    as ``horizon`` + 1. Once served, :meth:`made` is the :class:`Predictions` that were told, with their error
    against the schedule actually served."""

    predictor = "learned"

    def __init__(self, trie: PrefixTrie, horizon: int) -> None:
        self.trie = trie
        self.horizon = horizon
        self._learner = Learner(horizon)
        self._requested: list[set[int]] = []
        self._predicted: list[float] = []

    def told(self, step: int, edges: set[int], policy: str) -> dict[int, float]:
        """The predictions for the batch of radix ``edges`` served at ``step``, the step after the last told (an
        InputError naming ``policy`` otherwise, or past the horizon)."""
        if step != len(self._requested) + 1:
            raise InputError(f"policy {policy!r}: online predictions are told once per batch, in order")
        if step > self.horizon:
            raise InputError(f"policy {policy!r}: more batches served than the horizon of {self.horizon}")
        told = {v: self._learner.predict(v, step) for v in sorted(edges)}
        self._requested.append(set(edges))
        self._predicted.extend(told.values())
        return told

    def made(self) -> Predictions:
        """The predictions told so far, as data, with eta against the schedule served."""
        requests = Requests.served(self._requested, self.horizon)
        predicted = np.asarray(self._predicted, dtype=np.float64)
        return Predictions(requests, predicted, _eta(self.trie, requests, predicted), self.predictor, None)
