"""How a signal stops a solver child process, checked in this process with stand-in children (the command
line's own tests, tests/experiments/test_reliability.py, signal real CBC runs in other processes): the first signal
sends SIGINT to every running child and SIGKILL after the grace period to one that did not stop, a second
signal kills at once; and a CBC run killed that way (PuLP finds no solution file) is ``interrupted``
with the bound of its log."""

from __future__ import annotations

import contextlib
import signal
import time

import pulp
import pytest

from kvtheory.optimum import interrupt, solvers
from kvtheory.optimum.solvers import new_variable


class StandInChild:
    """A child process as subprocess.Popen shows it: ``poll()`` is None until it was killed (or, with
    ``obeys``, until it was sent SIGINT)."""

    def __init__(self, pid: int, obeys: bool) -> None:
        self.pid = pid
        self.obeys = obeys
        self.signals: list[int] = []
        self.killed = False

    def poll(self):
        stopped = self.killed or (self.obeys and signal.SIGINT in self.signals)
        return -9 if stopped else None

    def send_signal(self, signum: int) -> None:
        self.signals.append(signum)

    def kill(self) -> None:
        self.killed = True


def _wait(condition, seconds: float = 10.0) -> bool:
    ends = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > ends:
            return False
        time.sleep(0.01)
    return True


def test_the_first_signal_asks_with_sigint_then_kills_after_the_grace_period(monkeypatch):
    monkeypatch.setattr(interrupt, "GRACE_SECONDS", 0.3)
    stubborn, obedient = StandInChild(11, obeys=False), StandInChild(12, obeys=True)
    children = [stubborn]
    stopper = interrupt._ChildSolver(children)
    try:
        stopper.request(again=False)
        children.append(obedient)  # started after the request: asked too, while the watch goes on
        assert _wait(lambda: stubborn.signals and obedient.signals)
        asked = time.monotonic()
        assert stubborn.signals == [signal.SIGINT] and obedient.signals == [signal.SIGINT]
        assert _wait(lambda: stubborn.killed)
        assert time.monotonic() - asked >= 0.3 - 0.06  # not before the grace period (the watch polls every 50 ms)
        assert not obedient.killed  # it stopped when asked
        stopper.request(again=False)  # a watch runs already: no second one
        assert stubborn.signals == [signal.SIGINT] and obedient.signals == [signal.SIGINT]
    finally:
        stopper.close()
    assert not stopper.thread.is_alive()


def test_a_second_signal_kills_every_running_child_at_once():
    first, second = StandInChild(21, obeys=False), StandInChild(22, obeys=False)
    stopper = interrupt._ChildSolver([first, second])
    stopper.request(again=True)
    assert first.killed and second.killed and first.signals == second.signals == []
    assert stopper.thread is None
    stopper.close()


def _tiny_mip() -> pulp.LpProblem:
    prob = pulp.LpProblem("tiny", pulp.LpMinimize)
    x = new_variable(prob, "x", 0, 3, cat=pulp.LpInteger)
    prob += x
    prob += x >= 1
    return prob


def test_cbc_killed_after_a_stop_request_is_interrupted_with_the_bound_of_its_log(monkeypatch):
    """PuLP raises PulpSolverError when CBC was killed (no solution file): after a stop request that is
    ``interrupted``, no incumbent, the last bound of CBC's log; without one the error is not hidden."""

    def killed(prob, solver=None, **kwargs):
        with open(solver.optionsDict["logPath"], "w") as log:
            log.write("Cbc0010I After 50 nodes, 3 on tree, 1e+50 best solution, best possible 0.75 (0.5 seconds)\n")
        raise pulp.PulpSolverError("Pulp: Error while executing")

    monkeypatch.setattr(pulp.LpProblem, "solve", killed)
    with pytest.raises(pulp.PulpSolverError):
        solvers._solve_cbc(_tiny_mip(), 60, mip=True, gap_abs=0.5)
    monkeypatch.setattr(interrupt, "stop_requested", lambda: True)
    outcome = solvers._solve_cbc(_tiny_mip(), 60, mip=True, gap_abs=0.5)
    assert (outcome.status, outcome.objective, outcome.bound) == ("interrupted", None, 0.75)


def test_the_stop_watch_runs_in_a_named_daemon_thread():
    """The watch is named (thread dumps, ``threading.enumerate()``, an 'Exception in thread' report) and
    is a daemon: should a second Ctrl-C land between the handlers' restoring and ``close()``, the watch that
    is never told to end must not keep the process from exiting."""
    stopper = interrupt._ChildSolver([])
    try:
        stopper.request(again=False)
        assert (stopper.thread.name, stopper.thread.daemon) == ("kvtheory-stop-solver", True)
    finally:
        stopper.close()


class _Rounds:
    """Stand-in for the watch's ``done`` event and clock: ``len(times)`` rounds, at those monotonic times."""

    def __init__(self, times: list[float]) -> None:
        self.times = list(times)
        self.now = None

    def is_set(self) -> bool:
        if not self.times:
            return True
        self.now = self.times.pop(0)
        return False

    def wait(self, seconds: float) -> None:
        pass

    def monotonic(self) -> float:
        return self.now


def _watch_rounds(monkeypatch, stopper, times: list[float]) -> None:
    rounds = _Rounds(times)
    monkeypatch.setattr(stopper, "done", rounds)
    monkeypatch.setattr(interrupt, "time", rounds)
    stopper._watch()


def test_a_child_is_killed_only_once_more_than_the_grace_period_has_passed(monkeypatch):
    """At exactly GRACE_SECONDS after the SIGINT the child still has its chance; just after, it is killed."""
    child = StandInChild(41, obeys=False)
    stopper = interrupt._ChildSolver([child])
    _watch_rounds(monkeypatch, stopper, [10.0, 10.0 + interrupt.GRACE_SECONDS])
    assert (child.signals, child.killed) == ([signal.SIGINT], False)
    _watch_rounds(monkeypatch, stopper, [10.0 + interrupt.GRACE_SECONDS + 0.01])
    assert (child.signals, child.killed) == ([signal.SIGINT], True)


class _GoneChild(StandInChild):
    """A child that ended (and was reaped elsewhere) between ``poll()`` and the signal: OSError."""

    def send_signal(self, signum: int) -> None:
        raise ProcessLookupError(3, "No such process")

    def kill(self) -> None:
        raise ProcessLookupError(3, "No such process")


def test_a_child_gone_before_its_signal_does_not_stop_the_watch_or_the_kill(monkeypatch):
    """An OSError signalling one child is ignored, and the children after it are still asked and killed."""
    gone, other = _GoneChild(51, obeys=False), StandInChild(52, obeys=False)
    stopper = interrupt._ChildSolver([gone, other])
    _watch_rounds(monkeypatch, stopper, [0.0])
    assert other.signals == [signal.SIGINT]
    stopper.kill()
    assert other.killed


@pytest.mark.parametrize("incumbent", [True, False])
def test_a_signal_during_a_cbc_solve_stops_its_child_and_keeps_the_incumbent_and_bound(monkeypatch, incumbent):
    """A SIGTERM while CBC runs: the CBC child is stopped (here: killed on the way out, as it ignored the
    SIGINT), and the solve returns ``interrupted`` with the incumbent CBC wrote, if it had one, and the bound
    of its log. Without one, the values CBC wrote (the LP's, x = 0.5) are no solution."""
    child = StandInChild(61, obeys=False)

    @contextlib.contextmanager
    def reaped():
        yield [child]

    def stopped(prob, solver=None, **kwargs):
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)  # what the SIGTERM's arrival runs
        best = "2" if incumbent else "1e+50"
        with open(solver.optionsDict["logPath"], "w") as log:
            log.write(f"Cbc0010I After 50 nodes, 3 on tree, {best} best solution, best possible 0.75 (0.5 seconds)\n")
        for variable in prob.variables():
            variable.varValue = 2.0 if incumbent else 0.5
        found = pulp.LpSolutionIntegerFeasible if incumbent else pulp.LpSolutionNoSolutionFound
        prob.status, prob.sol_status = pulp.LpStatusNotSolved, found
        return prob.status

    monkeypatch.setattr(solvers, "reaped_cbc", reaped)
    monkeypatch.setattr(pulp.LpProblem, "solve", stopped)
    with interrupt.stoppable():
        outcome = solvers._solve_cbc(_tiny_mip(), 60, mip=True, gap_abs=0.5)
    assert outcome == solvers.Outcome("interrupted", 2.0 if incumbent else None, 0.75)
    assert child.killed
    assert not interrupt.stop_requested()  # the scope is over


def test_cbc_killed_after_a_stop_request_ignores_what_an_earlier_solve_left_in_the_model(monkeypatch):
    """The model was solved before (optimal, x = 1): a CBC killed now wrote nothing, so that earlier
    status and value must not be reported as this solve's."""
    prob = _tiny_mip()
    assert solvers._solve_cbc(prob, 60, mip=True, gap_abs=0.5) == solvers.Outcome("optimal", 1.0, 1.0)

    def killed(prob, solver=None, **kwargs):
        with open(solver.optionsDict["logPath"], "w") as log:
            log.write("Cbc0010I After 50 nodes, 3 on tree, 1e+50 best solution, best possible 0.75 (0.5 seconds)\n")
        raise pulp.PulpSolverError("Pulp: Error while executing")

    monkeypatch.setattr(pulp.LpProblem, "solve", killed)
    monkeypatch.setattr(interrupt, "stop_requested", lambda: True)
    assert solvers._solve_cbc(prob, 60, mip=True, gap_abs=0.5) == solvers.Outcome("interrupted", None, 0.75)


def _covering_mip() -> pulp.LpProblem:
    """Three integer columns, three covering rows: HiGHS's presolve does not solve it, so HiGHS iterates
    (and calls its interrupt callbacks)."""
    prob = pulp.LpProblem("covering", pulp.LpMinimize)
    xs = [new_variable(prob, f"x{i}", 0, 10, cat=pulp.LpInteger) for i in range(3)]
    prob += pulp.lpSum(((i * 37) % 11 + 3) * x for i, x in enumerate(xs))
    for j in range(3):
        prob += pulp.lpSum(((i * (j + 5)) % 7 + 2) * x for i, x in enumerate(xs)) >= 17.5 + j
    return prob


@pytest.mark.skipif(not pulp.HiGHS(msg=False).available(), reason="highspy is not installed")
@pytest.mark.parametrize("mip", [True, False])
def test_highs_stops_at_its_interrupt_callback_once_a_stop_is_requested(monkeypatch, mip):
    """HiGHS runs in this process: its simplex and branch-and-bound callbacks see the request and stop it
    (unstopped, it solves this model to optimality: objective 30, LP 29.25)."""
    assert solvers._solve_highs(_covering_mip(), None, mip=mip, gap_abs=0.5).status == "optimal"
    with interrupt.stoppable():
        monkeypatch.setattr(interrupt, "_requested", True)
        assert solvers._solve_highs(_covering_mip(), None, mip=mip, gap_abs=0.5).status == "interrupted"


def test_in_scope_holds_inside_every_stoppable_scope_and_nowhere_else():
    """The outermost scope counts as much as a nested one: inside it an interrupted computation returns."""
    assert not interrupt.in_scope()
    with interrupt.stoppable():
        assert interrupt.in_scope()
        with interrupt.stoppable():
            assert interrupt.in_scope()
        assert interrupt.in_scope()
    assert not interrupt.in_scope()
