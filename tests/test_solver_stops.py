"""How a signal stops a solver child process, checked in this process with stand-in children (the command
line's own tests, tests/test_reliability.py, signal real CBC runs in other processes): the first signal
sends SIGINT to every running child and SIGKILL after the grace period to one that did not stop, a second
signal kills at once; and a CBC run killed that way (PuLP finds no solution file) is ``interrupted``
with the bound of its log."""

from __future__ import annotations

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
