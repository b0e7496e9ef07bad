"""``check_router``: does a router keep its contract with the cluster? In the spirit of scikit-learn's
``check_estimator`` (docs/cluster.md §Checking a router).

:func:`check_router` runs every check of :func:`router_checks` on a router class (or a registered router
name) and raises :class:`AssertionError` naming the broken check and the setting (workload, M, seed,
engine) at the first that fails; it returns None when all hold. Each check simulates small generated
workloads (a few dozen queries, two to four milliseconds a run), so all of them take well under a second:

- ``declares_a_name``: the class is a concrete :class:`Router` with a non-empty ``name`` and an ``OPTIONS``
  dict keyed by strings;
- ``valid_worker_indices``: under the batch engine, on M = 1..4 workers and several workloads (gsp and
  multiturn with small parameters, random ones with shared prefixes and tied arrivals, every query
  arriving at once), every query is dispatched exactly once, in arrival order, and to an integer worker
  index in [0, M) (the cluster refuses anything else with :class:`RouterError`; the check reports it);
- ``in_flight_bookkeeping``: after a run every routed query has completed: ``in_flight`` is M zeros;
- ``serving_engines``: the same on the continuous engine (prompts cut by a small chunk size) and on the
  batch engine with batches of three;
- ``deterministic``: two simulations under one seed route every query to the same worker and give the
  same result (hits, times, busy, router state), on both engines;
- ``no_true_state_without_oracle``: without ``oracle=True`` the router never asks the view for a worker's
  true cache or backlog (:meth:`RouterView.true_cached` raises for it);
- ``oracle_mode`` (routers with an ``oracle`` option only): with ``oracle=True`` it routes validly;
- ``state_is_json``: :meth:`Router.state` returns a dict of plain JSON values (string keys, finite
  numbers, no numpy scalars), before any query and after runs on both engines.

:func:`router_checks` yields the (name, check) pairs; :func:`parametrize_router_checks` turns them into a
``pytest.mark.parametrize`` decorator with readable ids::

    @parametrize_router_checks(["round-robin", MyRouter])
    def test_router(router, check):
        check()
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np

from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.routers import ROUTERS
from kvtheory.cluster.routers.base import Router, RouterError
from kvtheory.cluster.simulation import ClusterResult, Simulation
from kvtheory.model.query import Query
from kvtheory.model.workload import Workload
from kvtheory.workloads import generate

__all__ = ["check_router", "parametrize_router_checks", "router_checks"]

#: the generated workloads of the checks: label -> (generator, parameters); plus "random-S", see _workload
_GENERATED = {
    "gsp": ("gsp", {"groups": 4, "prompts": 4, "lengths": [16, 32], "rate": 20.0, "output_len": 2}),
    "multiturn": ("multiturn", {"conversations": 4, "turns": [2, 3], "user_len": 8, "output_len": 2, "rate": 20.0}),
}


@cache
def _workload(label: str, seed: int) -> Workload:
    """A small workload: a generated one, or (``random``) 24 queries over 4 token ids, each extending a
    prefix of an earlier one with probability 0.6, arrivals 20 ms apart on average with ties, 0-3 output
    tokens."""
    if label in _GENERATED:
        generator, params = _GENERATED[label]
        return generate(generator, params, seed=seed)
    rng = np.random.default_rng([seed, 25])
    lists: list[list[int]] = []
    queries = []
    t = 0.0
    for _ in range(24):
        if lists and rng.random() < 0.6:
            base = lists[int(rng.integers(len(lists)))]
            tokens = base[: int(rng.integers(1, len(base) + 1))] + rng.integers(0, 4, int(rng.integers(0, 6))).tolist()
        else:
            tokens = rng.integers(0, 4, int(rng.integers(1, 10))).tolist()
        lists.append(tokens)
        if rng.random() < 0.7:  # else it arrives with the query before it
            t += float(rng.exponential(0.02))
        queries.append(Query.of(tokens, arrival=round(t, 4), output_len=int(rng.integers(0, 4))))
    return Workload(tuple(queries))


def _cluster(workload: Workload, m: int) -> Cluster:
    """M unlike workers: costs rising with the index, budgets from the longest query (each fits every
    worker) up to twice it, well under the workload's tokens, so that workers evict."""
    longest = workload.max_length
    return Cluster(
        tuple(
            Worker(
                a_miss=1e-3 * (1 + 0.5 * i),
                a_cached=1e-5 * (1 + 0.5 * i),
                budget=longest + (longest * i) // 3,
                decode_base=2e-3,
                decode_per_context=1e-6,
            )
            for i in range(m)
        )
    )


@dataclass(frozen=True)
class Setting:
    """One simulation of a check: what the failure message names."""

    workload: str = "gsp"
    workload_seed: int = 0
    m: int = 2
    seed: int = 1
    engine: str = "batch"
    batch: int = 1
    chunk_size: int | None = None
    all_at_once: bool = False
    oracle: bool = False

    def __str__(self) -> str:
        if self.workload in _GENERATED:
            generator, params = _GENERATED[self.workload]
            given = ", ".join(f"{key}={value}" for key, value in params.items())
            workload = f"{generator}({given}, seed={self.workload_seed})"
        else:
            workload = f"{self.workload}(seed={self.workload_seed})"
        parts = [f"workload {workload}", f"M={self.m}", f"seed={self.seed}"]
        engine = f"engine={self.engine}"
        if self.batch != 1:
            engine += f" (batch {self.batch})"
        if self.chunk_size is not None:
            engine += f" (chunk size {self.chunk_size})"
        parts.append(engine)
        if self.all_at_once:
            parts.append("every query arriving at 0")
        if self.oracle:
            parts.append("oracle=True")
        return ", ".join(parts)


@dataclass
class _Run:
    result: ClusterResult
    router: Router
    dispatched: list[tuple[int, float, object]]  # (query, time, worker) per dispatch call, in order


class _Peeked(RuntimeError):
    """A non-oracle router asked the view for true state."""


def _simulate(cls: type[Router], options: Mapping[str, object] | None, setting: Setting, spy: bool = False) -> _Run:
    """Run ``setting``; every dispatch recorded. AssertionError naming the setting if the run fails. With
    ``spy``, a router not in oracle mode that asks the view for true state is caught even if it swallows
    what the view raises."""
    workload = _workload(setting.workload, setting.workload_seed)
    try:
        simulation = Simulation(
            workload,
            _cluster(workload, setting.m),
            cls,
            "lru",
            seed=setting.seed,
            rate=math.inf if setting.all_at_once else None,
            engine=setting.engine,
            batch=setting.batch,
            chunk_size=setting.chunk_size,
            router_options=options,
            oracle=setting.oracle,
        )
        router = simulation.router
        dispatched: list[tuple[int, float, object]] = []
        dispatch = router.dispatch

        def recording(j: int, now: float):
            i = dispatch(j, now)
            dispatched.append((j, now, i))
            return i

        router.dispatch = recording  # what the engines call: the instance's attribute
        peeks: list[str] = []
        if spy and not router.opts.get("oracle"):
            view = router.view

            def peek(what: str):
                def ask(*args):
                    peeks.append(what)
                    raise _Peeked(f"the router asked for the true {what} without oracle=True")

                return ask

            view.true_cached = peek("cached prefix")  # the instance's attribute hides RouterView's method
            view.true_backlog = peek("backlog")
        result = simulation.run()
    except RouterError as exc:
        raise AssertionError(f"on {setting}: the cluster refused the router: {exc}") from exc
    except _Peeked as exc:
        raise AssertionError(f"on {setting}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - whatever the router raised, name the setting
        raise AssertionError(f"on {setting}: the run raised {type(exc).__name__}: {exc}") from exc
    if peeks:  # asked, and swallowed what the view raised
        raise AssertionError(f"on {setting}: the router asked for the true {peeks[0]} without oracle=True")
    return _Run(result, router, dispatched)


def _check_decisions(run: _Run, setting: Setting) -> None:
    """Every query dispatched once, in arrival order, at its arrival, to an int in [0, M) that the
    result records."""
    n = len(run.result.length)
    seen = [j for j, _, _ in run.dispatched]
    if sorted(seen) != list(range(n)):
        twice = f" (query {_first_repeat(seen)} twice)" if len(set(seen)) < len(seen) else ""
        raise AssertionError(f"on {setting}: {len(seen)} dispatches for {n} queries{twice}")
    arrival = run.result.arrival
    last = -math.inf
    for j, now, i in run.dispatched:
        assert type(i) is int and 0 <= i < setting.m, (
            f"on {setting}: dispatch returned {i!r} for query {j}, not an int worker index in [0, {setting.m})"
        )
        assert now == arrival[j], f"on {setting}: query {j} dispatched at {now!r}, not at its arrival {arrival[j]!r}"
        assert now >= last, f"on {setting}: query {j} dispatched at {now!r}, after one at {last!r}"
        last = now
        assert run.result.worker[j] == i, (
            f"on {setting}: query {j} was routed to worker {i} but served by {run.result.worker[j]}"
        )


def _first_repeat(values: list[int]) -> int:
    seen: set[int] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    raise ValueError("no repeat")


def _check_in_flight(run: _Run, setting: Setting) -> None:
    in_flight = list(run.router.in_flight)
    assert in_flight == [0] * setting.m, (
        f"on {setting}: after every query completed, in_flight = {in_flight}, not {setting.m} zeros"
    )


def _plain_json(value: object, path: str) -> None:
    """AssertionError unless ``value`` is plain JSON: dicts with str keys, lists, str, bool, None, int and
    finite float (exact types or their subclasses, never numpy scalars)."""
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        assert math.isfinite(value), f"{path} is {value!r}, not a finite number"
        return
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), f"{path} has the key {key!r}, not a string"
            _plain_json(item, f"{path}[{key!r}]")
        return
    if isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            _plain_json(item, f"{path}[{k}]")
        return
    raise AssertionError(f"{path} is {value!r} ({type(value).__name__}), not a JSON value")


# -- the checks -------------------------------------------------------------------------------------------
def _declares_a_name(cls, options) -> None:
    assert not inspect.isabstract(cls), f"{cls.__name__} is abstract: it must implement choose(j, now)"
    name = getattr(cls, "name", None)
    assert isinstance(name, str) and name.strip() == name and name, (
        f"{cls.__name__}.name is {name!r}: a router needs a non-empty name without surrounding spaces"
    )
    assert isinstance(cls.OPTIONS, dict) and all(isinstance(k, str) for k in cls.OPTIONS), (
        f"{cls.__name__}.OPTIONS is {cls.OPTIONS!r}: it must be a dict from option names (str) to defaults"
    )


_INDEX_SETTINGS = tuple(
    Setting(workload, workload_seed, m, seed=m)
    for workload, workload_seed in (("gsp", 0), ("multiturn", 1), ("random", 0), ("random", 1))
    for m in (1, 2, 3, 4)
) + tuple(Setting("gsp", 2, m, seed=m, all_at_once=True) for m in (1, 3))


def _valid_worker_indices(cls, options) -> None:
    for setting in _INDEX_SETTINGS:
        _check_decisions(_simulate(cls, options, setting), setting)


def _in_flight_bookkeeping(cls, options) -> None:
    for setting in (Setting("gsp", 0, 3), Setting("random", 2, 2), Setting("random", 3, 4, all_at_once=True)):
        run = _simulate(cls, options, setting)
        _check_in_flight(run, setting)


_ENGINE_SETTINGS = tuple(
    Setting(workload, 0, m, seed=m, engine="continuous", chunk_size=chunk)
    for workload, chunk in (("gsp", 8), ("random", 4), ("multiturn", 8192))
    for m in (1, 2, 3, 4)
) + tuple(Setting(workload, 0, m, seed=m, batch=3) for workload in ("gsp", "random") for m in (1, 3))


def _serving_engines(cls, options) -> None:
    for setting in _ENGINE_SETTINGS:
        run = _simulate(cls, options, setting)
        _check_decisions(run, setting)
        _check_in_flight(run, setting)


_RESULT_ARRAYS = ("worker", "hits", "start", "prefill_end", "finish", "busy")


def _deterministic(cls, options) -> None:
    for setting in (
        Setting("gsp", 0, 3, seed=5),
        Setting("random", 4, 2, seed=6),
        Setting("random", 5, 4, seed=7, engine="continuous", chunk_size=4),
    ):
        first, second = _simulate(cls, options, setting), _simulate(cls, options, setting)
        for (j, _, a), (_, _, b) in zip(first.dispatched, second.dispatched):
            assert a == b, f"on {setting}: two runs under seed {setting.seed} routed query {j} to workers {a} and {b}"
        for name in _RESULT_ARRAYS:
            x, y = getattr(first.result, name), getattr(second.result, name)
            assert np.array_equal(x, y), f"on {setting}: two runs under seed {setting.seed} differ in their {name}"
        assert first.result.router_state == second.result.router_state, (
            f"on {setting}: two runs under seed {setting.seed} end in different router states: "
            f"{first.result.router_state} and {second.result.router_state}"
        )


def _no_true_state_without_oracle(cls, options) -> None:
    if "oracle" in cls.OPTIONS:  # the check is of the router without the oracle switch, whatever was given
        options = {**(options or {}), "oracle": False}
    for setting in (
        Setting("gsp", 0, 3),
        Setting("random", 6, 2, engine="continuous", chunk_size=4),
        Setting("multiturn", 0, 4, all_at_once=True),
    ):
        _simulate(cls, options, setting, spy=True)


def _oracle_mode(cls, options) -> None:
    for setting in (
        Setting("gsp", 0, 3, oracle=True),
        Setting("random", 7, 2, oracle=True, engine="continuous", chunk_size=4),
        Setting("multiturn", 0, 4, oracle=True, all_at_once=True),
    ):
        run = _simulate(cls, options, setting)
        _check_decisions(run, setting)
        _check_in_flight(run, setting)


def _state_is_json(cls, options) -> None:
    setting = Setting("gsp", 0, 2)
    workload = _workload(setting.workload, setting.workload_seed)
    try:
        fresh = Simulation(workload, _cluster(workload, 2), cls, "lru", seed=1, router_options=options).router
        state = fresh.state()
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"on {setting}: state() of a fresh router raised {type(exc).__name__}: {exc}") from exc
    _check_state(state, f"on {setting}, before any query")
    for setting in (Setting("gsp", 0, 3), Setting("random", 8, 2, engine="continuous", chunk_size=4)):
        run = _simulate(cls, options, setting)
        _check_state(run.router.state(), f"on {setting}")


def _check_state(state: object, where: str) -> None:
    assert isinstance(state, dict), f"{where}: state() returned {type(state).__name__}, not a dict"
    try:
        _plain_json(state, "state()")
        json.dumps(state, allow_nan=False)
    except AssertionError as exc:
        raise AssertionError(f"{where}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{where}: state() is not JSON-serialisable: {exc}") from None


_CHECKS: tuple[tuple[str, Callable], ...] = (
    ("declares_a_name", _declares_a_name),
    ("valid_worker_indices", _valid_worker_indices),
    ("in_flight_bookkeeping", _in_flight_bookkeeping),
    ("serving_engines", _serving_engines),
    ("deterministic", _deterministic),
    ("no_true_state_without_oracle", _no_true_state_without_oracle),
    ("oracle_mode", _oracle_mode),
    ("state_is_json", _state_is_json),
)


class RouterCheck:
    """One check of one router, callable without arguments: AssertionError naming both on failure."""

    def __init__(self, router: str, cls: type[Router], options, name: str, function: Callable) -> None:
        self.router, self.cls, self.options, self.name, self.function = router, cls, options, name, function

    def __call__(self) -> None:
        try:
            self.function(self.cls, self.options)
        except AssertionError as exc:
            detail = str(exc)
            joint = " " if detail.startswith("on ") else ": "
            raise AssertionError(f"check_router({self.router}): check {self.name!r} failed{joint}{detail}") from exc
        except Exception as exc:  # noqa: BLE001 - a check that could not even run has failed
            raise AssertionError(
                f"check_router({self.router}): check {self.name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def __repr__(self) -> str:
        return f"<check {self.name!r} of router {self.router}>"


def _resolve(router: str | type[Router]) -> tuple[str, type[Router]]:
    if isinstance(router, str):
        cls = ROUTERS.lookup(router)
        return repr(router), cls
    if not (isinstance(router, type) and issubclass(router, Router)):
        raise TypeError(f"check_router takes a Router subclass or a registered router name, got {router!r}")
    name = getattr(router, "name", None)
    return (repr(name) if isinstance(name, str) else router.__qualname__), router


def router_checks(
    router: str | type[Router], options: Mapping[str, object] | None = None
) -> Iterator[tuple[str, RouterCheck]]:
    """(check name, check) for every check that applies to ``router`` (a :class:`Router` subclass or a
    registered name) built with ``options``; each check is called without arguments and raises
    AssertionError naming the check and the setting when it fails. ``oracle_mode`` applies only to
    routers with an ``oracle`` option."""
    label, cls = _resolve(router)
    for name, function in _CHECKS:
        if name == "oracle_mode" and "oracle" not in getattr(cls, "OPTIONS", {}):
            continue
        yield name, RouterCheck(label, cls, options, name, function)


def check_router(router: str | type[Router], options: Mapping[str, object] | None = None) -> None:
    """Run every check of :func:`router_checks` on ``router``; AssertionError at the first that fails,
    naming it and its setting (workload, M, seed, engine); None when all hold."""
    for _, check in router_checks(router, options):
        check()


def parametrize_router_checks(routers: Iterable[str | type[Router]], options: Mapping[str, object] | None = None):
    """``pytest.mark.parametrize(("router", "check"), ...)`` over every check of every router in
    ``routers`` (names or classes; a registry such as ``ROUTERS`` gives its names), with ids
    ``ROUTER-CHECK``; the test calls ``check()``. pytest is imported here only, so kvtheory does not
    need it."""
    import pytest

    params = []
    for router in routers:
        label = router if isinstance(router, str) else getattr(router, "name", None) or router.__qualname__
        for name, check in router_checks(router, options):
            params.append(pytest.param(router, check, id=f"{label}-{name}"))
    return pytest.mark.parametrize(("router", "check"), params)
