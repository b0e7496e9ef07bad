"""Time limits hold for the whole solve (model building, handing the model over, the solver), a solver
stopped without a solution says so, and the joint optimum runs when asked."""

import functools
import gc
import json
import subprocess
import sys
import time

import pytest

from kvtheory import Workload
from kvtheory.cli import main
from kvtheory.optimum.mip import solve_mip
from kvtheory.optimum.solver_runtime import OutOfTime, hard_deadline, reaped_cbc
from kvtheory.workloads import generate

#: slack for returning after the limit on a loaded 2-core machine (cleanup, reading what the solver left)
SLACK = 2.0


def _spin(seconds: float) -> None:
    """Busy for ``seconds`` (a bounded loop: a deadline that never fires fails the test instead of hanging it)."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        pass


def test_hard_deadline_stops_python_code_and_restores_an_outer_alarm():
    started = time.perf_counter()
    with pytest.raises(OutOfTime), hard_deadline(0.2):
        _spin(0.2 + SLACK)
    assert time.perf_counter() - started < 0.2 + SLACK
    with hard_deadline(5.0):
        with hard_deadline(0.1):
            pass
        time.sleep(0.3)  # the outer alarm (5 s) is back, not the expired inner one


def test_an_alarm_a_c_call_turned_into_another_error_still_stops_the_block_as_out_of_time():
    """The alarm lands in a call that reports its own error instead (as a pybind11 argument conversion that
    the alarm interrupts says "incompatible function arguments"): the block still ends in OutOfTime, with that
    error as its cause; an error raised before any alarm stays itself."""

    def converting():  # catches what the alarm raised and reports an error of its own, as such C code does
        try:
            _spin(2.0)
        except OutOfTime:
            raise TypeError("addRow(): incompatible function arguments") from None

    with pytest.raises(OutOfTime) as stopped, hard_deadline(0.05):
        converting()
    assert isinstance(stopped.value.__cause__, TypeError)
    with pytest.raises(TypeError), hard_deadline(5.0):
        raise TypeError("a real error, before the deadline")


def test_the_repeated_alarm_never_lands_inside_the_unraisable_hook(monkeypatch):
    """An expired deadline fires every 50 ms; while ``sys.unraisablehook`` reports an exception a callback
    dropped (pytest's hook formats its traceback), an alarm there would break the report. It waits for
    ordinary code instead, and the block still stops."""
    reported = []

    def slow_hook(unraisable):
        stop = time.monotonic() + 0.3  # six repeated alarms fall in here
        while time.monotonic() < stop:
            pass
        reported.append(unraisable)

    monkeypatch.setattr(sys, "unraisablehook", slow_hook)
    with pytest.raises(OutOfTime), hard_deadline(0.02):
        time.sleep(0.03)  # the first alarm's OutOfTime, taken as if a callback had dropped it
    with pytest.raises(OutOfTime), hard_deadline(0.02):
        sys.unraisablehook("dropped")
        _spin(2.0)
    assert reported == ["dropped"]


def test_the_repeated_alarm_waits_out_an_unraisable_hook_that_is_a_partial(monkeypatch):
    """pytest installs its hook as a ``functools.partial``: the function it wraps is the one recognised."""
    reported = []

    def slow_hook(sink, unraisable):
        _spin(0.3)  # six repeated alarms fall in here
        sink.append(unraisable)

    monkeypatch.setattr(sys, "unraisablehook", functools.partial(slow_hook, reported))
    with pytest.raises(OutOfTime), hard_deadline(0.02):
        sys.unraisablehook("dropped")
        _spin(2.0)
    assert reported == ["dropped"]


def test_the_repeated_alarm_waits_out_a_garbage_collector_callback_and_a_finalizer(monkeypatch):
    """hypothesis keeps a callback in ``gc.callbacks``, and a subprocess object left over runs ``__del__`` when
    collected: an OutOfTime raised inside either is dropped by the interpreter (and reported as unraisable).
    The alarm waits for ordinary code instead: nothing is dropped, and the block still stops."""

    class SlowToFinalize:
        def __del__(self):
            _spin(0.3)  # six repeated alarms fall in here

    def slow_callback(phase, info):
        if phase == "start":
            _spin(0.3)

    gc.collect()  # the garbage of earlier tests, finalized outside the deadline
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    gc.callbacks.append(slow_callback)
    try:
        with pytest.raises(OutOfTime), hard_deadline(0.02):
            gc.collect()
            _spin(2.0)
    finally:
        gc.callbacks.remove(slow_callback)
    with pytest.raises(OutOfTime), hard_deadline(0.02):
        cycle = SlowToFinalize()
        cycle.itself = cycle
        del cycle
        gc.collect()
        _spin(2.0)
    assert dropped == []


def test_an_unraisable_hook_without_python_code_leaves_the_deadline_alone(monkeypatch):
    """The interpreter's own hook (a builtin, no ``__code__``) is no frame to wait out: OutOfTime as usual."""
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    with pytest.raises(OutOfTime), hard_deadline(0.02):
        _spin(2.0)


def test_reaped_cbc_kills_what_pulp_started_and_left_running():
    from pulp.apis import coin_api

    with reaped_cbc():
        child = coin_api.subprocess.Popen(["sleep", "30"])
    assert child.poll() is not None
    assert coin_api.subprocess is subprocess


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_token_mip_stops_at_its_time_limit(solver):
    """A token-formulation MIP that neither solver finishes in 3 s (its root LP alone outlasts CBC's
    own limit; neither finished in 20 s on 2 cores, where HiGHS solved 3 conversations in 2 s): the call
    returns within the limit, with no incumbent claimed."""
    workload = generate("multiturn", {"conversations": 4, "user_len": 256}, seed=0)
    budget = max(workload.trie.distinct_tokens // 4, workload.max_length)
    started = time.perf_counter()
    result = solve_mip(workload, budget, solver=solver, formulation="token", time_limit=3.0)
    assert time.perf_counter() - started < 3.0 + SLACK
    assert result.status in ("no_solution", "time_limit") and result.status != "optimal"
    assert result.bound is not None and (result.misses is None or result.bound <= result.misses)


@pytest.mark.slow
def test_no_solution_is_said_plainly_with_exit_status_3(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    workload = generate("multiturn", {"conversations": 4, "user_len": 256}, seed=0)
    path.write_text("".join(json.dumps({"tokens": q}) + "\n" for q in workload.token_lists()))
    budget = str(max(workload.trie.distinct_tokens // 4, workload.max_length))
    argv = ["opt", "--workload", str(path), "--budget", budget, "--solver", "mip", "--formulation", "token"]
    code = main([*argv, "--time-limit", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 3 and json.loads(out)["status"] == "no_solution"
    assert err.count("\n") == 1 and "no solution found within the time limit" in err


@pytest.mark.slow
def test_joint_optimum_runs_when_given_a_time_limit_and_says_why_it_does_not(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    queries = [[1, 2], [3], [1, 2], [3, 4], [5], [1], [3], [5, 6], [1, 2], [3], [5], [1, 7], [3, 4], [5]]
    path.write_text("".join(json.dumps({"tokens": q}) + "\n" for q in queries))
    cluster = ["--workload", str(path), "--workers", "2", "--budget", "4", "--a-miss", "1", "--a-cached", "0.1"]
    assert main(["opt", *cluster, "--json"]) == 0
    bounds = json.loads(capsys.readouterr().out)
    assert bounds["status"] == "bounds_only" and "14 queries" in bounds["reason"] and "time limit" in bounds["reason"]
    assert main(["opt", *cluster, "--time-limit", "60", "--json"]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert solved["status"] == "optimal" and solved["makespan"] >= bounds["best_lower_bound"] - 1e-9
    assert main(["opt", *cluster, "--method", "mip", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan"] == pytest.approx(solved["makespan"])
    assert Workload.from_token_lists(queries).max_length <= 4
