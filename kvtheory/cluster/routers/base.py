"""The one small interface every router implements, and what a router is allowed to see.

A router sees what a real one in front of the workers sees: each query as it arrives (its tokens,
through the workload's prefix trie, and its requested output length), the configured cost model of
each worker (a_miss, a_cached, decode costs: profiling facts, not cache state), the completions of the
queries it routed (when each finished, its latency and time to first token), and whatever it keeps
itself (approximate prefix trees of what it sent where, load estimates). It never sees a worker's true
cache or true queue unless the router is built with ``oracle=True``; then :class:`RouterView` answers
``true_cached`` and ``true_backlog`` from the simulation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import ClassVar, Protocol

import numpy as np

from kvtheory.cluster.cluster import Cluster
from kvtheory.errors import InputError
from kvtheory.model.workload import Workload
from kvtheory.params import parse_value


class Oracle(Protocol):
    """What the simulation can reveal to an oracle router."""

    def true_cached(self, worker: int, j: int) -> int: ...

    def true_backlog(self, worker: int, now: float) -> float: ...


class RouterView:
    """The router's window on the system: queries, worker cost models and (oracle only) true state."""

    def __init__(self, workload: Workload, cluster: Cluster, outputs: list[int], oracle: Oracle | None = None):
        self.workload = workload
        self.trie = workload.trie
        self.cluster = cluster
        self.lengths = [q.length for q in workload]
        self.outputs = outputs
        self._oracle = oracle

    @property
    def oracle(self) -> bool:
        return self._oracle is not None

    def predicted_cost(self, i: int, j: int, hits: int) -> float:
        """Cost_ij under the worker's cost model if ``hits`` of q_j's tokens were cached."""
        return self.cluster[i].cost(self.lengths[j], hits, self.outputs[j])

    def true_cached(self, i: int, j: int) -> int:
        if self._oracle is None:
            raise RuntimeError("true caches are visible only to oracle routers")
        return self._oracle.true_cached(i, j)

    def true_backlog(self, i: int, now: float) -> float:
        if self._oracle is None:
            raise RuntimeError("true queues are visible only to oracle routers")
        return self._oracle.true_backlog(i, now)


def parse_options(name: str, defaults: Mapping[str, object], given: Mapping[str, object] | None) -> dict:
    """Merge ``given`` (strings are parsed by the type of the default) into ``defaults``."""
    options = dict(defaults)
    for key, value in (given or {}).items():
        if key not in defaults:
            known = ", ".join(defaults) or "none"
            raise InputError(f"router {name!r} has no option {key!r}; its options: {known}")
        default = defaults[key]
        if isinstance(value, str):
            kind = type(default) if isinstance(default, (bool, int, float, str)) else None
            value = parse_value(key, value, kind, what="router option")
        options[key] = value
    return options


class Router(ABC):
    """Routes each arriving query to a worker index in [0, M).

    The simulation calls :meth:`dispatch` once per query, in arrival order, and :meth:`complete` when
    the query finishes. ``in_flight[i]`` counts the queries routed to worker i and not yet finished
    (a real router knows this: the responses pass through it). Subclasses implement :meth:`choose`
    and may override the hooks.
    """

    name: ClassVar[str]
    #: option name -> default; ``--router-opt key=value`` overrides, parsed by the default's type
    OPTIONS: ClassVar[dict[str, object]] = {}

    def __init__(self, view: RouterView, *, seed: int | None = None, options: Mapping[str, object] | None = None):
        self.view = view
        self.m = len(view.cluster)
        self.seed = seed
        self.opts = parse_options(self.name, self.OPTIONS, options)
        self.in_flight = [0] * self.m

    def dispatch(self, j: int, now: float) -> int:
        """Route query j arriving at ``now``: :meth:`choose`, checked (:class:`RouterError` unless it is an
        integer in [0, M); a numpy integer is taken as the int it is), counted in flight and reported to
        :meth:`routed`. Returns the worker index as a Python int."""
        i = self.choose(j, now)
        if type(i) is not int or not 0 <= i < self.m:  # one type test and one range test on the hot path
            i = checked_choice(self, j, now, i)
        self.in_flight[i] += 1
        self.routed(j, i, now)
        return i

    def complete(self, j: int, i: int, now: float, latency: float, ttft: float) -> None:
        """Query j finished on worker i: no longer in flight there; :meth:`finished` is told.
        :class:`RouterError` if worker i had nothing in flight (the bookkeeping went wrong)."""
        in_flight = self.in_flight
        if in_flight[i] <= 0:
            raise RouterError(
                f"router {router_name(self)!r}: query {j} finished on worker {i} at t = {float(now)!r} s, but "
                f"in_flight[{i}] = {in_flight[i]!r}: its in-flight count would go negative (was in_flight "
                "changed outside dispatch and complete?)"
            )
        in_flight[i] -= 1
        self.finished(j, i, now, latency, ttft)

    @abstractmethod
    def choose(self, j: int, now: float) -> int:
        """The worker for query j arriving at ``now``."""

    def routed(self, j: int, i: int, now: float) -> None:  # noqa: B027 (an optional hook)
        """Hook: query j was sent to worker i."""

    def finished(self, j: int, i: int, now: float, latency: float, ttft: float) -> None:  # noqa: B027
        """Hook: query j finished on worker i, ``latency`` seconds after it arrived."""

    def state(self) -> dict:
        """Small summary of learned state, for reports."""
        return {}


class RouterError(InputError):
    """A router broke its contract with the cluster: it chose something that is not a worker index in
    [0, M), or its in-flight bookkeeping went wrong. An :class:`InputError` (a plug-in router is input):
    the command line prints its one line and exits with status 2."""


def router_name(router: Router) -> str:
    return getattr(router, "name", None) or type(router).__name__


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def checked_choice(router: Router, j: int, now: float, chosen: object) -> int:
    """``chosen`` as the worker index it stands for (a numpy integer becomes an int); :class:`RouterError`
    naming the router, the query, its arrival time, what was returned and why it is wrong otherwise."""
    m = router.m
    if isinstance(chosen, bool) or not isinstance(chosen, (int, np.integer)):
        if chosen is None:
            kind = "None"
        elif isinstance(chosen, (bool, np.bool_)):
            kind = "a bool"
        else:
            kind = f"a {type(chosen).__name__}"
        why = f"it is {kind}, not an integer worker index in [0, {m})"
    else:
        i = int(chosen)
        if 0 <= i < m:
            return i
        why = f"not a worker index in [0, {m})"
    where = router.view.workload.where(j)
    query = f"query {j}" if where == f"query {j}" else f"query {j} ({where})"
    raise RouterError(
        f"router {router_name(router)!r} returned {_shown(chosen)} for {query} arriving at t = {float(now)!r} s: {why}"
    )


def argmin(values) -> int:
    """Index of the smallest value; ties go to the lowest index."""
    best, best_value = 0, values[0]
    for i in range(1, len(values)):
        if values[i] < best_value:
            best, best_value = i, values[i]
    return best
