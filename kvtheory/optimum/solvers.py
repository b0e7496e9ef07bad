"""Solving a PuLP model with CBC or HiGHS: status, incumbent and proven bound, within a time limit.

:func:`solve` minimises a model and returns an :class:`Outcome`: ``optimal`` (bound = objective),
``time_limit`` (an incumbent and the best bound the solver proved), ``no_solution`` (none within the
limit; the bound if the solver had one), ``infeasible``, or ``interrupted`` (SIGINT or SIGTERM stopped
the solver: its incumbent and bound if any, :mod:`kvtheory.optimum.interrupt`). A time limit holds for
the whole call (:mod:`kvtheory.optimum.solver_runtime`). CBC's bound is read from its log; HiGHS reports its own. A
MIP start (the variables' initial values) is handed to either solver with ``warm=True``.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
import warnings
from dataclasses import dataclass

import pulp

from kvtheory.errors import InputError
from kvtheory.optimum import interrupt
from kvtheory.optimum.solver_runtime import OutOfTime, hard_deadline, reaped_cbc, stdout_silenced

SOLVERS = ("cbc", "highs")


@dataclass(frozen=True)
class Outcome:
    status: str
    objective: float | None
    bound: float | None


def check_solver(solver: str) -> None:
    """InputError unless ``solver`` is one of SOLVERS and can run here."""
    if solver not in SOLVERS:
        raise InputError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if solver == "highs" and not pulp.HiGHS(msg=False).available():
        raise InputError("solver 'highs' needs highspy, which kvtheory installs: pip install highspy")


def solve(
    prob: pulp.LpProblem, solver: str, time_limit: float | None, *, mip: bool, gap_abs: float, warm: bool = False
) -> Outcome:
    """Minimise ``prob`` (whose objective has no constant term); ``warm``: start from the variables'
    initial values (``setInitialValue``), which must form a feasible solution.

    ``time_limit`` holds for the whole call: the solver's own limit ends ``_MARGIN`` of it early, so
    that it stops with its incumbent, and :func:`hard_deadline` stops whatever is still running at the
    limit (then ``no_solution``: what the solver had is lost). After a signal stopped a solve of the
    same :func:`~kvtheory.optimum.interrupt.stoppable` scope, nothing more is solved: ``interrupted``.
    """
    if interrupt.stop_requested():
        return Outcome("interrupted", None, None)
    adapter = _solve_highs if solver == "highs" else _solve_cbc
    own_limit = None if time_limit is None else time_limit * (1 - _MARGIN)
    try:
        with hard_deadline(time_limit):
            return adapter(prob, own_limit, mip=mip, gap_abs=gap_abs, warm=warm)
    except OutOfTime:
        return Outcome("no_solution", None, None)


#: the part of a time limit left, after the solver's own limit, for handing the model over and back
_MARGIN = 0.1


def linear_value(prob: pulp.LpProblem) -> float:
    """The incumbent's objective (PuLP puts a valueless ``__dummy`` with coefficient 0 in an empty one)."""
    return sum(coef * var.varValue for var, coef in prob.objective.items() if coef)


def _solve_highs(
    prob: pulp.LpProblem, time_limit: float | None, *, mip: bool, gap_abs: float, warm: bool = False
) -> Outcome:
    import highspy

    deadline = None if time_limit is None else time.perf_counter() + time_limit
    options = {"msg": False, "mip": mip, "gapAbs": gap_abs, "gapRel": 0.0}
    with stdout_silenced(), interrupt.solving():  # highspy prints a banner on the C stdout even with msg=False
        prob.solve(_highs_until(deadline, warm)(**options))
    highs = prob.solverModel
    info = highs.getInfo()
    model_status = highs.getModelStatus()
    if model_status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        return Outcome("infeasible", None, None)
    has_incumbent = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = linear_value(prob) if has_incumbent else None
    if model_status == highspy.HighsModelStatus.kOptimal:
        return Outcome("optimal", objective, info.mip_dual_bound if mip else objective)
    bound = info.mip_dual_bound if mip and math.isfinite(info.mip_dual_bound) else None
    if model_status == highspy.HighsModelStatus.kInterrupt or interrupt.stop_requested():
        return Outcome("interrupted", objective, bound)
    return Outcome("time_limit" if has_incumbent else "no_solution", objective, bound)


class _StoppableHiGHS(pulp.HiGHS):
    """PuLP's HiGHS adapter whose solver stops at its next interrupt callback once a stop is requested
    (:func:`kvtheory.optimum.interrupt.stop_requested`)."""

    def createAndConfigureSolver(self, lp) -> None:  # noqa: N802 - PuLP's hook
        super().createAndConfigureSolver(lp)
        model = lp.solverModel

        def check(event) -> None:
            if interrupt.stop_requested():
                event.interrupt()

        for callback in (model.cbSimplexInterrupt, model.cbIpmInterrupt, model.cbMipInterrupt):
            callback += check


def _highs_until(deadline: float | None, warm: bool) -> type:
    """PuLP's HiGHS interface, with HiGHS's time limit set to what is left until ``deadline`` once the
    model is handed over (which takes a while on large models), and with ``warm`` the variables'
    initial values given to HiGHS as a MIP start."""
    import highspy

    class HiGHSUntil(_StoppableHiGHS):
        def callSolver(self, lp):
            if deadline is not None:
                lp.solverModel.setOptionValue("time_limit", max(deadline - time.perf_counter(), 1e-3))
            if warm:
                solution = highspy.HighsSolution()
                solution.col_value = [var.varValue for var in lp.variables()]  # PuLP's column order
                solution.value_valid = True
                lp.solverModel.setSolution(solution)
            super().callSolver(lp)

    return HiGHSUntil


_CBC_BOUND = (
    re.compile(r"^Lower bound:\s+(\S+)", re.M),
    re.compile(r"best possible (\S+)"),
    re.compile(r"^Continuous objective value is (\S+)", re.M),
)


def _cbc_bound(log: str) -> float | None:
    """The best proven lower bound in a CBC log: the summary's, else the last node report's, else the root LP's."""
    for pattern in _CBC_BOUND:
        found = pattern.findall(log)
        if found:
            value = float(found[-1])
            return value if math.isfinite(value) else None
    return None


def _solve_cbc(
    prob: pulp.LpProblem, time_limit: float | None, *, mip: bool, gap_abs: float, warm: bool = False
) -> Outcome:
    handle, log_path = tempfile.mkstemp(suffix=".log", prefix="kvtheory-cbc-")
    os.close(handle)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            command = pulp.PULP_CBC_CMD(
                msg=False, mip=mip, timeLimit=time_limit, gapAbs=gap_abs, logPath=log_path, warmStart=warm
            )
        killed = False
        with reaped_cbc() as children, interrupt.solving(children):
            try:
                prob.solve(command)
            except pulp.PulpSolverError:  # CBC was killed: no solution file
                if not interrupt.stop_requested():
                    raise
                killed = True
        with open(log_path) as log:
            text = log.read()
    finally:
        os.unlink(log_path)
    if killed:  # prob still holds an earlier solve's status and values
        return Outcome("interrupted", None, _cbc_bound(text))
    if prob.status == pulp.LpStatusInfeasible:
        return Outcome("infeasible", None, None)
    if prob.sol_status == pulp.LpSolutionOptimal:
        objective = linear_value(prob)
        return Outcome("optimal", objective, objective)
    bound = _cbc_bound(text)
    if interrupt.stop_requested():
        has_incumbent = prob.sol_status == pulp.LpSolutionIntegerFeasible
        return Outcome("interrupted", linear_value(prob) if has_incumbent else None, bound)
    if prob.sol_status == pulp.LpSolutionIntegerFeasible:
        return Outcome("time_limit", linear_value(prob), bound)
    return Outcome("no_solution", None, bound)


def new_variable(prob, name: str, low=None, up=None, cat=pulp.LpContinuous) -> pulp.LpVariable:
    """A new variable of ``prob``: PuLP >= 3.3 wants ``prob.add_variable``, which older releases lack."""
    add = getattr(prob, "add_variable", None)
    return add(name, low, up, cat=cat) if add else pulp.LpVariable(name, low, up, cat=cat)


def remaining(deadline: float | None) -> float | None:
    """Seconds left for the solver until ``deadline``."""
    return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
