"""A MIP stopped before its proof is reported as such: status ``time_limit``, the incumbent, the solver's
bound below it and a positive gap, for the single-worker and the joint MIP, through CBC and through HiGHS.

A real time limit cannot reach this branch deterministically (on a fast machine the solver proves the
optimum first; on a loaded one it may not even build the model), so each test runs the real solver and then
makes it look stopped at its limit: the solver's answer keeps the incumbent it found (its variable values)
but reports a time-limit status and a lower bound ``DROP`` below the incumbent's objective, exactly what
CBC (status line and log) and HiGHS (model status and info) report when their clock runs out. Only the MIP
solve is altered; the LP relaxation of the joint model is solved for real.
"""

from __future__ import annotations

import math

import pulp
import pytest

from kvtheory import Workload, run_fif
from kvtheory.cluster.joint_mip import routing_makespan, solve_joint_mip
from kvtheory.optimum.mip import solve_mip

HAVE_HIGHS = pulp.HiGHS(msg=False).available()
SOLVERS = ["cbc", pytest.param("highs", marks=pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed"))]

#: Belady on three pages with two slots: 3 compulsory misses, then one per two requests (optimum 4)
PAGES = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
PAGES_OPT = 4
#: two prefixes for two workers; with a_miss 2, a_cached 1 the optimum puts one prefix on each (makespan 6)
JOINT = Workload.from_token_lists([[1, 2], [1, 2], [3, 4], [3, 4]])
JOINT_KWARGS = {"a_miss": [2.0, 2.0], "a_cached": [1.0, 1.0]}
JOINT_OPT = 6.0


def _cbc_log(objective: float | None, bound: float) -> str:
    """The tail of a CBC log stopped by its time limit, as CBC 2.10 writes it (``objective=None``: no
    solution found). The root LP and the node reports carry weaker bounds than the summary's (the summary
    is the latest); without a summary the last node report's is the best."""
    best = f"{objective:g}" if objective is not None else "1e+50"
    lines = [
        f"Continuous objective value is {bound - 3.0:g} - 0.00 seconds",
        f"Cbc0010I After 0 nodes, 1 on tree, {best} best solution, best possible {bound - 2.0:g} (0.01 seconds)",
        f"Cbc0010I After 100 nodes, 7 on tree, {best} best solution, best possible {bound - 1.0:g} (0.95 seconds)",
        "Cbc0020I Exiting on maximum time",
        "",
        "Result - Stopped on time limit",
        "",
    ]
    if objective is None:
        lines[2] = lines[2].replace(f"{bound - 1.0:g}", f"{bound:g}")
        lines += ["No feasible solution found", "Enumerated nodes:               100"]
    else:
        lines += [
            f"Objective value:                {objective:.8f}",
            f"Lower bound:                    {bound:.3f}",
            "Gap:                            0.10",
            "Enumerated nodes:               100",
        ]
    return "\n".join(lines) + "\n"


class _StoppedHighs:
    """A solved ``highspy.Highs`` seen as one stopped by its time limit with its incumbent and ``bound``."""

    def __init__(self, highs, bound: float, incumbent: bool = True, interrupted: bool = False) -> None:
        self._highs = highs
        self._bound = bound
        self._incumbent = incumbent
        self._interrupted = interrupted

    def getModelStatus(self):  # noqa: N802 (highspy's name)
        import highspy

        return highspy.HighsModelStatus.kInterrupt if self._interrupted else highspy.HighsModelStatus.kTimeLimit

    def getInfo(self):  # noqa: N802
        info, bound = self._highs.getInfo(), self._bound

        class Info:
            def __getattr__(self, name):
                return getattr(info, name)

        stopped = Info()
        stopped.primal_solution_status = 2 if self._incumbent else 0  # kSolutionStatusFeasible / kSolutionStatusNone
        stopped.mip_dual_bound = bound
        objective = self._highs.getInfo().objective_function_value
        stopped.mip_gap = abs(objective - bound) / max(abs(objective), 1e-9)
        return stopped

    def __getattr__(self, name):
        return getattr(self._highs, name)


@pytest.fixture
def stop_at_limit(monkeypatch):
    """``stop_at_limit(drop)``: from now on every MIP solve finds the optimum, then reports itself stopped at
    its time limit with that incumbent and a bound ``drop`` below its objective. ``keep=False``: stopped
    without an incumbent, the best node bound ``drop`` below the optimum's objective (HiGHS keeps the values
    of its columns, which then are no solution). ``interrupted`` (HiGHS only): stopped by a signal instead."""
    real_solve = pulp.LpProblem.solve

    def install(drop: float, keep: bool = True, interrupted: bool = False):
        def solve(prob, solver=None, **kwargs):
            status = real_solve(prob, solver, **kwargs)
            if not getattr(solver, "mip", False):
                return status  # the LP relaxation: solved for real
            assert prob.sol_status == pulp.LpSolutionOptimal, "the test instance must solve to optimality"
            objective = pulp.value(prob.objective)
            if isinstance(solver, pulp.HiGHS):
                prob.solverModel = _StoppedHighs(prob.solverModel, objective - drop, keep, interrupted)
                return status
            with open(solver.optionsDict["logPath"], "w") as log:
                log.write(_cbc_log(objective if keep else None, objective - drop))
            prob.status = pulp.LpStatusNotSolved
            prob.sol_status = pulp.LpSolutionIntegerFeasible if keep else pulp.LpSolutionNoSolutionFound
            if not keep:
                for variable in prob.variables():
                    variable.varValue = None
            return prob.status

        monkeypatch.setattr(pulp.LpProblem, "solve", solve)

    return install


@pytest.mark.parametrize("formulation", ["edge", "token"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_stopped_single_mip_with_a_worse_bound_is_time_limit(stop_at_limit, solver, formulation):
    assert run_fif(PAGES, 2).misses == PAGES_OPT
    # the objective is -hits, so a bound 2.5 below it is 2.5 fewer misses: rounded up (misses are integers)
    stop_at_limit(2.5)
    result = solve_mip(PAGES, 2, solver=solver, formulation=formulation, time_limit=60)
    assert result.status == "time_limit", result
    assert result.misses == PAGES_OPT
    assert result.bound == PAGES_OPT - 2 < result.misses
    assert result.gap == pytest.approx(2 / PAGES_OPT) and result.gap > 0
    record = result.to_dict()
    assert (record["status"], record["misses"], record["bound"]) == ("time_limit", PAGES_OPT, PAGES_OPT - 2)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_bound_that_rounds_up_to_the_incumbent_is_a_proof(stop_at_limit, solver):
    """Misses are integers: a bound within 1 of the incumbent, rounded up, meets it, so the incumbent is
    optimal although the solver stopped at its limit; a bound 1 below it proves nothing."""
    stop_at_limit(0.5)
    result = solve_mip(PAGES, 2, solver=solver, time_limit=60)
    assert (result.status, result.misses, result.bound, result.gap) == ("optimal", PAGES_OPT, PAGES_OPT, 0.0)
    stop_at_limit(1.0)
    result = solve_mip(PAGES, 2, solver=solver, time_limit=60)
    assert (result.status, result.misses, result.bound) == ("time_limit", PAGES_OPT, PAGES_OPT - 1)
    assert result.gap == pytest.approx(1 / PAGES_OPT)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_stopped_solver_without_incumbent_reports_its_best_bound(stop_at_limit, solver):
    stop_at_limit(1.5, keep=False)
    result = solve_mip(PAGES, 2, solver=solver, time_limit=60)
    assert result.status == "no_solution"
    assert result.misses is None and result.gap is None
    assert result.bound == PAGES_OPT - 1  # ceil(4 - 1.5), from the last node report, not the root LP's 4 - 4.5


@pytest.mark.parametrize("formulation", ["edge", "token"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_stopped_joint_mip_with_a_worse_bound_is_time_limit(stop_at_limit, solver, formulation):
    stop_at_limit(1.5)
    result = solve_joint_mip(JOINT, [4, 4], solver=solver, formulation=formulation, time_limit=60, **JOINT_KWARGS)
    assert result.status == "time_limit", result
    assert result.makespan == JOINT_OPT
    assert result.routing is not None
    assert routing_makespan(JOINT, result.routing, [4, 4], **JOINT_KWARGS) == JOINT_OPT
    assert result.bound == pytest.approx(JOINT_OPT - 1.5) and result.bound < result.makespan
    assert result.gap == pytest.approx(1.5 / JOINT_OPT) and result.gap > 0
    # the LP relaxation is a real one: a lower bound, not the stopped solve's
    assert result.lower_bounds["lp_relaxation"] is not None
    assert result.lower_bounds["lp_relaxation"] <= JOINT_OPT + 1e-6
    assert math.isfinite(result.lower_bounds["work_over_m"])


def test_solve_optimum_reports_a_stopped_mip_as_time_limit_with_fif_and_the_flow_bound(stop_at_limit):
    """At beta = 2 on this instance FIF misses 10 and the flow bound is 9 (= OPT); a MIP stopped without an
    incumbent and a weaker bound leaves that bracket, named ``time_limit``, not ``optimal``."""
    from kvtheory.optimum.exact import solve_optimum

    workload = Workload.from_token_lists([[2], [3], [1], [4, 1], [2, 1], [0], [3, 4], [3]])
    stop_at_limit(1.5, keep=False)
    result = solve_optimum(workload, 4, batch=2, time_limit=60, mip_solver="cbc")
    assert (result.solver, result.status, result.misses, result.bound, result.proof) == (
        "mip:cbc",
        "time_limit",
        10,
        9,
        None,
    )
    assert result.gap == pytest.approx(0.1)


@pytest.mark.parametrize("solver", SOLVERS)
def test_an_infeasible_model_is_infeasible_without_values(solver):
    from kvtheory.optimum.solvers import new_variable, solve

    prob = pulp.LpProblem("infeasible", pulp.LpMinimize)
    x = new_variable(prob, "x", 0, 1, cat=pulp.LpInteger)
    prob += x
    prob += x >= 2
    outcome = solve(prob, solver, 60, mip=True, gap_abs=0.5)
    assert (outcome.status, outcome.objective, outcome.bound) == ("infeasible", None, None)


def test_the_solver_named_is_the_one_run_told_its_limit_and_start(monkeypatch):
    """``solve`` hands the model to the back end named, with its own limit ending early (by the margin, so
    that it stops with its incumbent before the hard deadline of the whole call would cut it off and lose
    what it had) and the MIP start flag as given."""
    from kvtheory.optimum import solvers

    told = []
    for name in ("cbc", "highs"):
        monkeypatch.setattr(
            solvers, f"_solve_{name}", lambda prob, limit, name=name, **kwargs: told.append((name, limit, kwargs))
        )
    solvers.solve(pulp.LpProblem("p"), "cbc", 10.0, mip=True, gap_abs=0.5, warm=True)
    solvers.solve(pulp.LpProblem("p"), "highs", None, mip=False, gap_abs=0.25)
    assert told == [
        ("cbc", pytest.approx(10.0 * (1 - solvers._MARGIN)), {"mip": True, "gap_abs": 0.5, "warm": True}),
        ("highs", None, {"mip": False, "gap_abs": 0.25, "warm": False}),
    ]
    assert told[0][1] < 10.0


def test_nothing_is_solved_after_a_stop_request(monkeypatch):
    from kvtheory.optimum import interrupt, solvers

    monkeypatch.setattr(interrupt, "stop_requested", lambda: True)
    outcome = solvers.solve(pulp.LpProblem("p"), "cbc", 10.0, mip=True, gap_abs=0.5)
    assert (outcome.status, outcome.objective, outcome.bound) == ("interrupted", None, None)


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
def test_highs_is_given_the_time_left_and_no_relative_gap():
    """A proof of optimality rests on HiGHS closing the absolute gap below 1 with no relative gap allowed
    (its default, 1e-4, would stop large models short of a proof), within the time left."""
    from kvtheory.optimum.solvers import new_variable, solve

    prob = pulp.LpProblem("tiny", pulp.LpMinimize)
    x = new_variable(prob, "x", 0, 3, cat=pulp.LpInteger)
    prob += x
    prob += x >= 1
    assert solve(prob, "highs", 5.0, mip=True, gap_abs=0.99).status == "optimal"
    option = {name: prob.solverModel.getOptionValue(name)[1] for name in ("time_limit", "mip_rel_gap", "mip_abs_gap")}
    assert 0 < option["time_limit"] <= 5.0 * 0.9
    assert (option["mip_rel_gap"], option["mip_abs_gap"]) == (0.0, 0.99)


def test_a_solve_cut_off_without_a_bound_falls_back_to_the_distinct_tokens(monkeypatch):
    """The hard deadline stopped the solver (no incumbent, no bound from it): each distinct token node is
    still missed at least once, and that is the bound reported."""
    from kvtheory.optimum import mip
    from kvtheory.optimum.solvers import Outcome

    monkeypatch.setattr(mip, "solve", lambda *args, **kwargs: Outcome("no_solution", None, None))
    result = solve_mip(PAGES, 2, solver="cbc", time_limit=60)
    assert (result.status, result.misses, result.bound, result.gap) == ("no_solution", None, 3.0, None)


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
def test_highs_stopped_by_a_signal_keeps_its_incumbent_and_bound(stop_at_limit):
    stop_at_limit(2.5, interrupted=True)
    result = solve_mip(PAGES, 2, solver="highs", time_limit=60)
    assert (result.status, result.misses, result.bound) == ("interrupted", PAGES_OPT, PAGES_OPT - 2)


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_the_mip_runs_on_the_solver_asked_for(monkeypatch, solver):
    from kvtheory.optimum import solvers

    ran = []
    for name in ("cbc", "highs"):
        real = getattr(solvers, f"_solve_{name}")
        monkeypatch.setattr(
            solvers,
            f"_solve_{name}",
            lambda *args, name=name, real=real, **kwargs: ran.append(name) or real(*args, **kwargs),
        )
    if solver == "highs" and not HAVE_HIGHS:
        pytest.skip("highspy is not installed")
    assert solve_mip(PAGES, 2, solver=solver).misses == PAGES_OPT
    assert ran == [solver]


def _tiny_mip(start: float | None = None) -> pulp.LpProblem:
    """min x, x >= 1, x integer in [0, 3] (optimum 1); ``start``: the variable's initial value."""
    from kvtheory.optimum.solvers import new_variable

    prob = pulp.LpProblem("tiny", pulp.LpMinimize)
    x = new_variable(prob, "x", 0, 3, cat=pulp.LpInteger)
    prob += x
    prob += x >= 1
    if start is not None:
        x.setInitialValue(start)
    return prob


def test_cbc_runs_quietly_with_the_limit_gap_and_start_given_logging_to_a_named_temporary_file(monkeypatch):
    """A real CBC run: its command line (the head of its log) carries the solver's own limit (the call's
    less the margin), the absolute gap and the MIP start; PuLP warns nothing (with ``msg`` on, it would warn
    that the log file replaces the messages); the log is a ``kvtheory-cbc-*.log`` file in the temporary
    directory (what a hard-killed run leaves there), removed afterwards."""
    import os
    import tempfile
    import warnings

    from kvtheory.optimum.solvers import Outcome, solve

    real_solve = pulp.LpProblem.solve
    logs = []

    def solve_keeping_the_log(prob, solver=None, **kwargs):
        status = real_solve(prob, solver, **kwargs)
        path = solver.optionsDict["logPath"]
        with open(path) as log:
            logs.append((path, log.read()))
        return status

    monkeypatch.setattr(pulp.LpProblem, "solve", solve_keeping_the_log)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = solve(_tiny_mip(start=2), "cbc", 5.0, mip=True, gap_abs=0.5, warm=True)
    assert outcome == Outcome("optimal", 1.0, 1.0)
    assert [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)] == []
    [(path, text)] = logs
    command = next(line for line in text.splitlines() if line.startswith("command line - "))
    assert " -mips " in command and " -sec 4.5 " in command and " -allow 0.5 " in command
    assert "MIPStart values read for 1 variables." in text
    folder, name = os.path.split(path)
    assert folder == tempfile.gettempdir() and name.startswith("kvtheory-cbc-") and name.endswith(".log")
    assert not os.path.exists(path)


def test_cbc_passes_on_pulps_windows_warning_about_a_start(monkeypatch):
    """Only PuLP's deprecation of PULP_CBC_CMD is silenced: on Windows a MIP start needs ``keepFiles``, and
    PuLP's warning that says so reaches the user."""
    from pulp.apis import coin_api

    from kvtheory.optimum import solvers

    monkeypatch.setattr(coin_api, "operating_system", "win")
    monkeypatch.setattr(pulp.LpProblem, "solve", lambda prob, solver=None, **kwargs: prob.status)
    with pytest.warns(UserWarning, match="^When using CBC on Windows, warmStart requires keepFiles=True.$"):
        solvers._solve_cbc(_tiny_mip(start=2), None, mip=True, gap_abs=0.5, warm=True)


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_stopped_solver_without_a_finite_bound_reports_no_bound(stop_at_limit, solver):
    """A bound of -inf (CBC's log may print one; HiGHS's dual bound before its first node) is no bound."""
    from kvtheory.optimum.solvers import Outcome, solve

    stop_at_limit(math.inf)
    assert solve(_tiny_mip(), solver, 60, mip=True, gap_abs=0.5) == Outcome("time_limit", 1.0, None)


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
def test_highs_optimal_within_the_gap_reports_its_dual_bound(monkeypatch):
    """HiGHS ends ``optimal`` once its gap is within ``gap_abs``: the bound is its dual bound, which may lie
    below the incumbent, not the incumbent itself."""
    import highspy

    from kvtheory.optimum.solvers import Outcome, solve

    class OptimalWithinGap(_StoppedHighs):
        def getModelStatus(self):  # noqa: N802 (highspy's name)
            return highspy.HighsModelStatus.kOptimal

    real_solve = pulp.LpProblem.solve

    def solve_within_gap(prob, solver=None, **kwargs):
        status = real_solve(prob, solver, **kwargs)
        prob.solverModel = OptimalWithinGap(prob.solverModel, pulp.value(prob.objective) - 0.75)
        return status

    monkeypatch.setattr(pulp.LpProblem, "solve", solve_within_gap)
    assert solve(_tiny_mip(), "highs", 60, mip=True, gap_abs=0.99) == Outcome("optimal", 1.0, 0.25)


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
def test_an_lp_solved_by_highs_is_bounded_by_its_objective():
    """An LP's optimum is its own bound (HiGHS's ``mip_dual_bound`` of an LP is 0, no bound of anything)."""
    from kvtheory.optimum.solvers import Outcome, new_variable, solve

    prob = pulp.LpProblem("lp", pulp.LpMinimize)
    x = new_variable(prob, "x", 0, 3)
    prob += 2 * x
    prob += x >= 0.5
    assert solve(prob, "highs", 60, mip=False, gap_abs=0.5) == Outcome("optimal", 1.0, 1.0)


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
def test_highs_is_left_a_millisecond_when_handing_the_model_over_took_all_its_time():
    from kvtheory.optimum import solvers

    prob = _tiny_mip()
    solvers._solve_highs(prob, 0.0, mip=True, gap_abs=0.5)  # the deadline has passed once HiGHS has the model
    assert prob.solverModel.getOptionValue("time_limit")[1] == 1e-3


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
def test_highs_is_handed_the_start_only_when_warm(monkeypatch):
    """With ``warm`` the variables' initial values go to HiGHS as its MIP start (``setSolution``), without
    it nothing does."""
    import highspy

    from kvtheory.optimum.solvers import Outcome, solve

    handed = []

    class RecordingHighs(highspy.Highs):
        def setSolution(self, *args):  # noqa: N802 (highspy's name)
            handed.append(list(args[0].col_value))
            return super().setSolution(*args)

    monkeypatch.setattr(highspy, "Highs", RecordingHighs)
    for warm in (True, False):
        assert solve(_tiny_mip(start=2), "highs", 60, mip=True, gap_abs=0.5, warm=warm) == Outcome("optimal", 1.0, 1.0)
    assert handed == [[2.0]]


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_solver_stopped_without_incumbent_hands_on_its_bound(stop_at_limit, solver):
    """Straight from the adapter (``solve_mip`` would fall back to the distinct tokens, which PAGES's bound
    equals): no incumbent, the bound 1.5 below the optimum 1."""
    from kvtheory.optimum.solvers import Outcome, solve

    stop_at_limit(1.5, keep=False)
    assert solve(_tiny_mip(), solver, 60, mip=True, gap_abs=0.5) == Outcome("no_solution", None, -0.5)


def test_a_solve_still_busy_at_its_limit_is_cut_off_without_a_solution(monkeypatch):
    """The hard deadline of the whole call stops an adapter still busy at the limit (a long hand-over of the
    model, CBC's root LP): ``no_solution``, what it had is lost. The stand-in would answer after 2 s."""
    import time

    from kvtheory.optimum import solvers

    def busy(prob, limit, **kwargs):
        ends = time.monotonic() + 2.0
        while time.monotonic() < ends:
            time.sleep(0.005)
        return solvers.Outcome("optimal", 1.0, 1.0)

    monkeypatch.setattr(solvers, "_solve_cbc", busy)
    started = time.monotonic()
    outcome = solvers.solve(pulp.LpProblem("p"), "cbc", 0.05, mip=True, gap_abs=0.5)
    assert outcome == solvers.Outcome("no_solution", None, None)
    assert time.monotonic() - started < 1.5


def test_the_time_left_runs_to_the_deadline_and_never_below_a_millisecond(monkeypatch):
    from types import SimpleNamespace

    from kvtheory.optimum import solvers

    monkeypatch.setattr(solvers, "time", SimpleNamespace(perf_counter=lambda: 100.0))
    assert [solvers.remaining(deadline) for deadline in (None, 110.0, 100.25, 100.0, 90.0)] == [
        None,
        10.0,
        0.25,
        1e-3,
        1e-3,
    ]


def test_the_mip_is_solved_within_the_time_left_to_a_gap_below_one_from_its_start(monkeypatch):
    """``solve_mip`` hands its model to ``solve`` as a MIP with what is left of its limit (stand-in clocks: the
    call starts at 100 s with 60 s, the solve starts at 130 s: 30 s), an absolute gap of 0.99 (misses are
    integers: a gap below 1 is a proof) and ``warm`` exactly when a start is given; the record names the
    solver asked for and the call's own seconds (100 s to 100.25 s)."""
    from types import SimpleNamespace

    from kvtheory.optimum import formulations, mip, solvers
    from kvtheory.optimum.exact import fif_schedule

    handed = []

    def solve(prob, solver, time_limit, **kwargs):
        handed.append((solver, time_limit, kwargs))
        return solvers.Outcome("no_solution", None, None)

    monkeypatch.setattr(mip, "solve", solve)
    monkeypatch.setattr(formulations, "time", SimpleNamespace(perf_counter=lambda: 100.0))
    monkeypatch.setattr(solvers, "time", SimpleNamespace(perf_counter=lambda: 130.0))
    start = fif_schedule(PAGES, 2, 1)[1]
    records = []
    for solver, begin in (("cbc", None), ("highs", start)):
        readings = iter([100.0, 100.25])
        monkeypatch.setattr(mip, "time", SimpleNamespace(perf_counter=lambda readings=readings: next(readings)))
        records.append(solve_mip(PAGES, 2, solver=solver, time_limit=60, start=begin).to_dict())
    assert handed == [
        ("cbc", 30.0, {"mip": True, "gap_abs": 0.99, "warm": False}),
        ("highs", 30.0, {"mip": True, "gap_abs": 0.99, "warm": True}),
    ]
    for record, solver in zip(records, ("cbc", "highs")):
        assert {key: record[key] for key in ("solver", "formulation", "status", "misses", "bound", "gap")} == {
            "solver": solver,
            "formulation": "edge",
            "status": "no_solution",
            "misses": None,
            "bound": 3.0,
            "gap": None,
        }
        assert type(record["seconds"]) is float and record["seconds"] == 0.25


@pytest.mark.parametrize("solver", SOLVERS)
def test_an_optimal_solve_is_bounded_by_its_misses_whatever_the_round_off(monkeypatch, solver):
    """A solver's ``optimal`` is its proof: the bound reported is the misses themselves, also when the
    incumbent's objective carries round-off (solution values within the solver's integrality tolerance), here
    2e-6 more misses, which rounded up by itself would read as a bound one above the misses."""
    from kvtheory.optimum import mip
    from kvtheory.optimum.solvers import Outcome

    real_solve = mip.solve

    def solve_with_round_off(*args, **kwargs):
        outcome = real_solve(*args, **kwargs)
        assert outcome.status == "optimal", outcome
        return Outcome("optimal", outcome.objective + 2e-6, outcome.bound + 2e-6)

    monkeypatch.setattr(mip, "solve", solve_with_round_off)
    result = solve_mip(PAGES, 2, solver=solver)
    assert (result.status, result.misses, result.bound, result.gap) == ("optimal", PAGES_OPT, PAGES_OPT, 0.0)
    assert type(result.bound) is float


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
def test_highs_stopped_by_a_signal_with_a_bound_that_rounds_up_to_its_incumbent_is_optimal(stop_at_limit):
    """As at the time limit: a bound within 1 of the incumbent, rounded up, meets it, so the incumbent a
    signal stopped at is a proven optimum."""
    stop_at_limit(0.5, interrupted=True)
    result = solve_mip(PAGES, 2, solver="highs", time_limit=60)
    assert (result.status, result.misses, result.bound, result.gap) == ("optimal", PAGES_OPT, PAGES_OPT, 0.0)


def test_a_model_still_being_built_at_the_limit_is_cut_off_without_a_solution(monkeypatch):
    """The hard deadline covers building the model, not only the formulation's own checks between edges: a
    builder still busy at the limit (a stand-in that would take 2 s for one edge) is stopped there, and the
    call returns ``no_solution`` with the distinct tokens as bound, without a row built."""
    import time

    from kvtheory.optimum import mip

    finished = []

    def busy(prob, trie, steps, budget, served, tag, deadline):
        ends = time.monotonic() + 2.0
        while time.monotonic() < ends:
            pass
        finished.append(True)
        return {}

    monkeypatch.setitem(mip.CACHE_MODELS, "edge", busy)
    result = solve_mip(PAGES, 2, solver="cbc", time_limit=0.05)
    assert finished == []
    assert (result.status, result.misses, result.bound, result.gap) == ("no_solution", None, 3.0, None)
    assert (result.variables, result.constraints) == (0, 0)
