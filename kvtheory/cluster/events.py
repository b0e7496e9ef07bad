"""The cluster simulation's one event loop (docs/cluster.md §The event loop); the engines are strategies over it.

The loop owns the clock, the arrivals, the router and a heap of worker events; an :class:`Engine` owns
what the workers do. An event is (time, sequence, worker, tag): the engine scheduled it with
:meth:`EventLoop.at` and reads its own ``tag`` back in :meth:`Engine.due`.

Each instant ``now`` (the earliest pending event time or arrival time) is processed in three steps, the
**same-instant ordering rule** of both engines:

1. every event due at or before ``now`` (they are all at ``now``), in the order they were scheduled
   (time, then sequence); the requests each one finishes are reported to the router
   (``router.complete``) in the order the engine gives them;
2. every request arriving at or before ``now``, in order of (arrival, index): routed
   (``router.dispatch``), then handed to its worker (:meth:`Engine.arrive`, which may schedule events);
3. every worker that had an event or an arrival in steps 1-2, in worker order, may start work
   (:meth:`Engine.begin`; an engine ignores a worker that is busy or has nothing to do).

So at one instant the router hears of every completion before it routes any arrival, and a worker
starts work only once that instant's arrivals are in its queue. An event an engine schedules for
``now`` itself (an iteration cut exactly at an arrival) is processed in a further round at the same
instant, after that instant's arrivals.
"""

from __future__ import annotations

import heapq
import math
from abc import ABC, abstractmethod


class Engine(ABC):
    """A serving strategy: the workers' state and what they do at events, arrivals and starts.

    It records each request's clocks (``hits``, ``start``, ``prefill_end``, ``finish``, index = request)
    and keeps ``workers``, each with ``spec``, ``policy``, ``busy`` (its total service time) and
    ``service`` (its service times, in order)."""

    workers: list

    def __init__(self, n: int) -> None:
        self.hits = [0] * n
        self.start = [0.0] * n
        self.prefill_end = [0.0] * n
        self.finish = [0.0] * n

    @abstractmethod
    def arrive(self, loop: EventLoop, j: int, i: int, now: float) -> None:
        """Request j, routed to worker i, arrives at ``now``."""

    @abstractmethod
    def due(self, i: int, tag: int, now: float) -> list[int] | None:
        """Worker i's event ``tag`` is due at ``now``: the requests it finishes (None: a cancelled event)."""

    @abstractmethod
    def begin(self, loop: EventLoop, i: int, now: float) -> None:
        """Worker i may start work at ``now`` if it is free and has any."""

    @abstractmethod
    def backlog(self, i: int, now: float) -> float:
        """The work worker i has left at ``now``, as an oracle router sees it."""

    @abstractmethod
    def state(self) -> dict:
        """The engine's counters (docs/cluster.md §Engines)."""


class EventLoop:
    """Arrivals at ``arrival`` (one time per request), routed by ``router``; run once with an engine."""

    def __init__(self, arrival: list[float], router) -> None:
        self.arrival = arrival
        self.router = router
        self._events: list[tuple[float, int, int, int]] = []  # (time, sequence, worker, tag)
        self._sequence = 0

    def at(self, time: float, i: int, tag: int) -> None:
        """Schedule an event of worker i at ``time``; the engine gets ``tag`` back when it is due."""
        heapq.heappush(self._events, (time, self._sequence, i, tag))
        self._sequence += 1

    def run(self, engine: Engine) -> list[int]:
        """Simulate every request; return the worker each was routed to."""
        arrival, router, events = self.arrival, self.router, self._events
        prefill_end = engine.prefill_end
        n = len(arrival)
        order = sorted(range(n), key=lambda j: (arrival[j], j))
        worker_of = [-1] * n
        cursor = 0
        while cursor < n or events:
            now = min(events[0][0] if events else math.inf, arrival[order[cursor]] if cursor < n else math.inf)
            touched: set[int] = set()
            while events and events[0][0] <= now:
                _, _, i, tag = heapq.heappop(events)
                finished = engine.due(i, tag, now)
                if finished is None:
                    continue
                for j in finished:
                    router.complete(j, i, now, now - arrival[j], prefill_end[j] - arrival[j])
                touched.add(i)
            while cursor < n and arrival[order[cursor]] <= now:
                j = order[cursor]
                cursor += 1
                i = router.dispatch(j, now)
                worker_of[j] = i
                engine.arrive(self, j, i, now)
                touched.add(i)
            for i in sorted(touched):
                engine.begin(self, i, now)
        return worker_of
