"""check_router (kvtheory.testing, docs/cluster.md §Checking a router) and what the cluster refuses from a
router: every built-in router passes every check; broken routers are refused, each by the check it breaks;
the simulation and the command line refuse a worker index that is not one."""

from __future__ import annotations

import random
import re
import textwrap

import numpy as np
import pytest

from kvtheory import write_workload
from kvtheory.cli import main
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.routers import ROUTERS, Router
from kvtheory.cluster.routers.base import RouterError
from kvtheory.cluster.simulation import simulate
from kvtheory.errors import InputError
from kvtheory.testing import check_router, router_checks
from kvtheory.testing.routers import parametrize_router_checks
from kvtheory.workloads import generate

BUILT_IN = [name for name, cls in ROUTERS.items() if cls.__module__.startswith("kvtheory.")]


@parametrize_router_checks(BUILT_IN)
def test_every_built_in_router_passes_every_check(router, check):
    check()


def test_check_router_takes_a_name_or_a_class_and_returns_none():
    assert check_router("round-robin") is None
    assert check_router(ROUTERS["least-load"], {"load": "requests"}) is None
    with pytest.raises(InputError, match="unknown router 'nope'"):
        check_router("nope")
    with pytest.raises(TypeError, match="a Router subclass or a registered router name"):
        check_router(object)


def test_the_checks_have_readable_names_and_oracle_mode_only_where_there_is_one():
    names = [name for name, _ in router_checks("cache-aware")]
    assert names == [
        "declares_a_name",
        "valid_worker_indices",
        "in_flight_bookkeeping",
        "serving_engines",
        "deterministic",
        "no_true_state_without_oracle",
        "oracle_mode",
        "state_is_json",
    ]
    assert "oracle_mode" not in [name for name, _ in router_checks("round-robin")]
    marker = parametrize_router_checks(["random"])
    ids = [param.id for param in marker.args[1]]
    assert "random-deterministic" in ids and len(ids) == len(set(ids))


# -- broken routers -----------------------------------------------------------------------------------------
class _Broken(Router):
    name = "broken"

    def choose(self, j, now):
        return j % self.m


class ReturnsM(_Broken):
    name = "returns-m"

    def choose(self, j, now):
        return self.m


class ReturnsMinusOne(_Broken):
    name = "returns-minus-one"

    def choose(self, j, now):
        return -1


class ReturnsFloat(_Broken):
    name = "returns-float"

    def choose(self, j, now):
        return 1.0


class ReturnsNone(_Broken):
    name = "returns-none"

    def choose(self, j, now):
        return None


class ReturnsTrue(_Broken):
    name = "returns-true"

    def choose(self, j, now):
        return True


class Unseeded(_Broken):
    name = "unseeded"

    def __init__(self, view, *, seed=None, options=None):
        super().__init__(view, seed=seed, options=options)
        self._rng = random.Random()  # seeded from the system, whatever the run's seed

    def choose(self, j, now):
        return self._rng.randrange(self.m)


class Peeks(_Broken):
    name = "peeks"

    def choose(self, j, now):
        try:  # asks, and hides that the view refused
            cached = [self.view.true_cached(i, j) for i in range(self.m)]
        except RuntimeError:
            return 0
        return cached.index(max(cached))


class ForgetsCompletions(_Broken):
    name = "forgets-completions"

    def complete(self, j, i, now, latency, ttft):  # never calls Router.complete: in_flight only grows
        pass


class NumpyState(_Broken):
    name = "numpy-state"

    def state(self):
        return {"load": np.float64(1.0)}


class OverridesDispatch(_Broken):
    name = "overrides-dispatch"

    def dispatch(self, j, now):  # skips Router.dispatch and so the cluster's check
        return -1


class NumpyIndex(_Broken):
    name = "numpy-index"

    def choose(self, j, now):
        return np.int64(j % self.m)


BROKEN = [
    (ReturnsM, "valid_worker_indices", r"returned 1 for query \d+ .*: not a worker index in \[0, 1\)"),
    (ReturnsMinusOne, "valid_worker_indices", r"returned -1 for query \d+ .*: not a worker index in \[0, 1\)"),
    (ReturnsFloat, "valid_worker_indices", r"returned 1\.0 .*: it is a float, not an integer worker index"),
    (ReturnsNone, "valid_worker_indices", r"returned None .*: it is None, not an integer worker index"),
    (ReturnsTrue, "valid_worker_indices", r"returned True .*: it is a bool, not an integer worker index"),
    # Router.complete's check stops it first: worker -1 had nothing in flight (dispatch never counted it)
    (OverridesDispatch, "valid_worker_indices", r"query \d+ finished on worker -1 .*would go negative"),
    (Unseeded, "deterministic", r"two runs under seed \d+ routed query \d+ to workers \d and \d"),
    (Peeks, "no_true_state_without_oracle", r"asked for the true cached prefix without oracle=True"),
    (ForgetsCompletions, "in_flight_bookkeeping", r"in_flight = \[\d+, \d+, \d+\], not 3 zeros"),
    (NumpyState, "state_is_json", r"state\(\)\['load'\] is np\.float64\(1\.0\) \(float64\), not a JSON value"),
]


@pytest.mark.parametrize(("broken", "check", "detail"), BROKEN, ids=[broken.name for broken, _, _ in BROKEN])
def test_a_broken_router_is_refused_by_the_check_it_breaks(broken, check, detail):
    with pytest.raises(AssertionError) as refused:
        check_router(broken)
    message = str(refused.value)
    assert message.startswith(f"check_router({broken.name!r}): check {check!r} failed on workload "), message
    assert re.search(r"M=\d, seed=\d+, engine=", message), message  # the setting
    assert re.search(detail, message), message
    assert "\n" not in message


def test_a_router_that_returns_numpy_integers_passes():
    check_router(NumpyIndex)


# -- what the cluster refuses -------------------------------------------------------------------------------
def small_gsp():
    return generate("gsp", {"groups": 3, "prompts": 3, "lengths": [16, 32], "rate": 20.0, "output_len": 2}, seed=0)


def cluster(m: int) -> Cluster:
    return Cluster(tuple(Worker(1e-3, 1e-5, 100, 1e-3, 1e-6) for _ in range(m)))


REFUSED = [
    (ReturnsM, "2", "not a worker index in [0, 2)"),
    (ReturnsMinusOne, "-1", "not a worker index in [0, 2)"),
    (ReturnsFloat, "1.0", "it is a float, not an integer worker index in [0, 2)"),
    (ReturnsNone, "None", "it is None, not an integer worker index in [0, 2)"),
    (ReturnsTrue, "True", "it is a bool, not an integer worker index in [0, 2)"),
]


@pytest.mark.parametrize("engine", ["batch", "continuous"])
@pytest.mark.parametrize(("broken", "shown", "why"), REFUSED, ids=[broken.name for broken, _, _ in REFUSED])
def test_the_simulation_refuses_what_is_not_a_worker_index(engine, broken, shown, why):
    w = small_gsp()
    first = min(range(len(w)), key=lambda j: (w[j].arrival, j))
    with pytest.raises(RouterError) as refused:
        simulate(w, cluster(2), broken, "lru", engine=engine)
    assert isinstance(refused.value, InputError)
    expected = (
        f"router {broken.name!r} returned {shown} for query {first} arriving at t = {w[first].arrival!r} s: {why}"
    )
    assert str(refused.value) == expected


def test_numpy_integers_are_taken_as_the_ints_they_are():
    run = simulate(small_gsp(), cluster(2), NumpyIndex, "lru")
    assert run.worker.tolist() == [j % 2 for j in range(len(run.worker))]


def test_in_flight_cannot_go_negative():
    class ResetsInFlight(_Broken):
        name = "resets-in-flight"

        def routed(self, j, i, now):
            self.in_flight[i] = 0 if j % 2 else self.in_flight[i]

    w = generate("gsp", {"groups": 3, "prompts": 3, "lengths": [16], "rate": 1000.0, "output_len": 8}, seed=0)
    with pytest.raises(RouterError, match=r"^router 'resets-in-flight': query \d+ finished on worker \d at t = "):
        simulate(w, cluster(1), ResetsInFlight, "lru")


def test_the_command_line_refuses_a_plug_in_router_with_one_line(tmp_path, capsys):
    plugin = tmp_path / "off_by_one.py"
    plugin.write_text(
        textwrap.dedent(
            """
            from kvtheory.cluster.routers import Router, register_router


            @register_router
            class OffByOne(Router):
                name = "off-by-one"

                def choose(self, j, now):
                    return self.m
            """
        )
    )
    workload = tmp_path / "w.jsonl"
    write_workload(small_gsp(), workload)
    argv = ["--plugin", str(plugin), "route", "--workload", str(workload), "--workers", "2"]
    argv += ["--router", "off-by-one", "--eviction", "lru", "--budget", "1000"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.fullmatch(
        r"kvtheory route: error: router 'off-by-one' returned 2 for query \d+ \(.*w\.jsonl:\d+\) arriving at "
        r"t = [0-9.e-]+ s: not a worker index in \[0, 2\)\n",
        err,
    ), err
