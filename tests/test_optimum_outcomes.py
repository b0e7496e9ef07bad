"""Every way out of solve_optimum, on exact values (solver, status, misses, bound, gap, proof, budget, batch).

The instance: eight queries of 11 tokens, 8 of them distinct prefix tokens (the 1 after 4 and the 1 after 2 are
two trie tokens), B = 4. At beta = 2 FIF misses 10, the weighted-paging
flow bound is 9 and the optimum is 9, so only the MIP can close the bracket.
"""

from __future__ import annotations

import pytest

from kvtheory import InputError, Workload, run_fif
from kvtheory.optimum import exact, interrupt
from kvtheory.optimum.exact import solve_optimum

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
