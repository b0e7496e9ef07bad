"""Every way out of solve_optimum, on exact values (solver, status, misses, bound, gap, proof, budget, batch).

The instance: eight queries of 11 tokens, 8 of them distinct prefix tokens (the 1 after 4 and the 1 after 2 are
two trie tokens), B = 4. At beta = 2 FIF misses 10, the weighted-paging
flow bound is 9 and the optimum is 9, so only the MIP can close the bracket.
"""

from __future__ import annotations

import types

import pytest

from kvtheory import InputError, Workload, run_fif
from kvtheory.optimum import exact, interrupt, mip
from kvtheory.optimum.exact import solve_optimum
from kvtheory.optimum.mip import OptResult

W = Workload.from_token_lists([[2], [3], [1], [4, 1], [2, 1], [0], [3, 4], [3]])
FIF_BETA2, FLOW_BETA2, OPT_BETA2 = 10, 9, 9


def _fields(result):
    return (result.solver, result.status, result.misses, result.bound, result.fif_misses, result.budget, result.batch)


def test_batch_one_is_fif_with_its_proof():
    fif = run_fif(W, 4).misses
    result = solve_optimum(W, 4)
    assert _fields(result) == ("fif", "optimal", fif, fif, fif, 4, 1)
    assert result.gap == 0.0 and result.proof == "FIF is exact at batch size 1" and result.seconds >= 0


def test_the_mip_closes_the_bracket_the_flow_bound_leaves():
    result = solve_optimum(W, 4, batch=2, mip_solver="cbc")
    assert _fields(result) == ("mip:cbc", "optimal", OPT_BETA2, OPT_BETA2, FIF_BETA2, 4, 2)
    assert result.proof == f"the edge MIP (cbc) proves its bound {OPT_BETA2}" and result.gap == 0.0


def test_a_limit_spent_before_the_mip_returns_fif_with_the_flow_bound():
    result = solve_optimum(W, 4, batch=2, time_limit=1e-9)
    assert _fields(result) == ("fif", "time_limit", FIF_BETA2, FLOW_BETA2, FIF_BETA2, 4, 2)
    assert result.gap == pytest.approx((FIF_BETA2 - FLOW_BETA2) / FIF_BETA2) and result.proof is None
    assert result.seconds >= 0


def test_an_interrupted_flow_bound_keeps_fif_over_the_distinct_tokens(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(exact, "weighted_paging_bound", interrupted)
    with interrupt.stoppable():
        try:
            result = solve_optimum(W, 4, batch=2)
        except KeyboardInterrupt:  # escaping, it would end the whole test session instead of failing here
            pytest.fail("KeyboardInterrupt escaped a stoppable scope")
    distinct = W.trie.distinct_tokens
    assert distinct == 8  # each is missed once, whatever the schedule
    assert _fields(result) == ("fif", "interrupted", FIF_BETA2, distinct, FIF_BETA2, 4, 2)
    assert result.gap == pytest.approx((FIF_BETA2 - distinct) / FIF_BETA2) and result.seconds >= 0
    with pytest.raises(KeyboardInterrupt):  # outside a stoppable scope Ctrl-C is not swallowed
        solve_optimum(W, 4, batch=2)


def test_a_flow_bound_that_meets_fif_proves_it_optimal_at_batch_2(monkeypatch):
    """At B = 3, beta = 2 the flow bound (11) meets FIF's misses: optimal with that proof, no MIP."""
    monkeypatch.setattr(mip, "solve_mip", None)
    result = solve_optimum(W, 3, batch=2)
    assert _fields(result) == ("fif", "optimal", 11, 11, 11, 3, 2)
    assert result.proof == "the weighted-paging flow bound meets FIF" and result.gap == 0.0


def test_an_unknown_mip_solver_is_refused_naming_the_choices():
    with pytest.raises(InputError, match=r"^unknown MIP solver 'gurobi'; choose one of highs, cbc$"):
        solve_optimum(W, 4, batch=2, mip_solver="gurobi")


@pytest.mark.parametrize("batch", [True, 0])
def test_the_batch_size_is_checked_first(batch):
    """A batch size that is not a positive integer (True is a bool, not 1) is refused before anything else."""
    message = rf"^batch size must be a positive integer \(at most 2\^40\), got {batch}$"
    with pytest.raises(InputError, match=message):
        solve_optimum(W, 4, batch=batch, mip_solver="gurobi" if batch == 0 else "highs")


class _Clock:
    """A stand-in for exact's clock: the call starts at 100 s, every later reading is ``now``."""

    def __init__(self, elapsed: float) -> None:
        self.readings = iter([100.0])
        self.now = 100.0 + elapsed

    def perf_counter(self) -> float:
        return next(self.readings, self.now)


def _stopped_mip(calls: list, status: str = "time_limit"):
    def solve_mip(workload, budget, **kwargs):
        calls.append(kwargs)
        return OptResult("highs", "edge", status, FIF_BETA2, float(FLOW_BETA2), 0.1, 0.0, 0, 0)

    return solve_mip


@pytest.mark.parametrize("status", ["time_limit", "interrupted"])
def test_the_mip_gets_what_is_left_of_the_limit_its_solver_and_fifs_schedule(monkeypatch, status):
    """With 0.5 s of a 10 s limit left after the flow bound, the MIP runs on the chosen solver (by default
    DEFAULT_MIP_SOLVER), for exactly those 0.5 s, started from FIF's schedule; a MIP stopped by its limit,
    or by a signal, leaves the bracket [9, 10] under its own status."""
    calls: list = []
    monkeypatch.setattr(exact, "time", types.SimpleNamespace(perf_counter=_Clock(9.5).perf_counter))
    monkeypatch.setattr(mip, "solve_mip", _stopped_mip(calls, status))
    result = solve_optimum(W, 4, batch=2, time_limit=10.0)
    default = exact.DEFAULT_MIP_SOLVER
    assert calls == [{"batch": 2, "solver": default, "time_limit": 0.5, "start": exact.fif_schedule(W, 4, 2)[1]}]
    assert _fields(result) == (f"mip:{default}", status, FIF_BETA2, FLOW_BETA2, FIF_BETA2, 4, 2)
    assert result.proof is None and result.seconds == 9.5


def test_a_limit_spent_to_exactly_zero_runs_no_mip(monkeypatch):
    """No time left (exactly 0 s of a 2 s limit) is a spent limit: FIF and the flow bound, no MIP call."""
    calls: list = []
    monkeypatch.setattr(exact, "time", types.SimpleNamespace(perf_counter=_Clock(2.0).perf_counter))
    monkeypatch.setattr(mip, "solve_mip", _stopped_mip(calls))
    result = solve_optimum(W, 4, batch=2, time_limit=2.0)
    assert calls == []
    assert _fields(result) == ("fif", "time_limit", FIF_BETA2, FLOW_BETA2, FIF_BETA2, 4, 2)


@pytest.mark.parametrize("limit", [0, -1.5])
def test_a_time_limit_that_is_not_positive_is_refused_naming_it(limit):
    with pytest.raises(InputError, match=rf"^time limit must be a positive number of seconds, got {limit}$"):
        solve_optimum(W, 4, time_limit=limit)


def test_fif_refuses_a_batch_that_cannot_fit_naming_it():
    """Two queries of 2 distinct tokens each fit B = 3 one at a time, not as one batch."""
    workload = Workload.from_token_lists([[1, 2], [3, 4]])
    assert run_fif(workload, 3).misses == 4
    with pytest.raises(
        InputError,
        match=r"^query 0: batch 0 \(2 queries\) needs 4 token nodes resident at once, more than the budget B = 3$",
    ):
        run_fif(workload, 3, batch=2)
