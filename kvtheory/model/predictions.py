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
  request updates the counts after its prediction is made.
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
        steps, edges = [], []
        offsets = [0]
        for t, batch in enumerate(schedule, start=1):
            on_paths = sorted({v for j in batch for v in trie.path(j)})
            edges.extend(on_paths)
            steps.extend([t] * len(on_paths))
            offsets.append(len(edges))
        horizon = len(offsets) - 1
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


def _learned(requests: Requests, noise: float, rng: np.random.Generator) -> np.ndarray:
    never = float(requests.horizon + 1)
    predicted = np.empty(requests.edges.size, dtype=np.float64)
    last: dict[int, int] = {}  # edge -> its last request
    came_back: set[int] = set()  # edges requested at least twice so far
    gap_sum, gaps = 0.0, 0
    for r, (v, t) in enumerate(zip(requests.edges.tolist(), requests.steps.tolist())):
        before = last.get(v)
        if before is not None:
            predicted[r] = t + (t - before)
            gap_sum += t - before
            gaps += 1
            came_back.add(v)
        elif gaps and 2 * len(came_back) >= len(last):
            predicted[r] = t + gap_sum / gaps
        else:
            predicted[r] = never
        last[v] = t
    return predicted


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
    weights = np.asarray(trie.edge_len, dtype=np.float64)[requests.edges]
    eta = float(np.sum(weights * np.abs(predicted - requests.actual)))
    return Predictions(requests, predicted, eta, predictor, noise)
