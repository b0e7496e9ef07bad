"""The MIP optima agree with FIF, with each other and with brute force; time limits are reported honestly."""

from __future__ import annotations

import itertools
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pulp
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import BATCHED_BOUNDARIES, UNBATCHED_BOUNDARIES, boundary_examples, instances, token_lists

from kvtheory import InputError, Workload, run_fif
from kvtheory.cluster.joint_mip import makespan_lower_bounds, routing_makespan, solve_joint_mip
from kvtheory.optimum.mip import gap_of, solve_mip

HAVE_HIGHS = pulp.HiGHS(msg=False).available()
SMALL = {"max_queries": 8}


def _check_optimal(result, expected: int) -> None:
    assert result.status == "optimal", result
    assert result.misses == expected, result
    assert result.bound == expected and result.gap == 0.0


#: two-token edges under which children come and go: the closure "a child is cached only under a full
#: parent" (the full flags of the edge formulation, the token chain of the token formulation) decides
LONG_PARENT_EDGES = (
    Workload.from_token_lists([[0, 1, 2], [0, 1, 3], [0, 1, 2], [4], [0, 1, 3], [5], [0, 1, 2]]),
    Workload.from_token_lists([[0, 1, 2, 3], [0, 1, 4], [5, 6], [0, 1, 2, 3], [0, 1, 4], [5, 6], [0, 1, 2, 3]]),
)
#: beta = 2, B = 5: the child (2, 102) of the two-token edge (1, 101) is wanted by both queries of the last
#: batch; keeping it through steps 1-3 needs (1, 101) full at step 1 too, which does not fit. With the
#: full flag dropped, or tied to (1, 101)'s count instead of to "full", the MIP keeps the child under a
#: half-kept parent and finds 18 misses, below the optimum 19
CHILD_UNDER_A_LONG_PARENT = [
    [1, 101, 2, 102], [1, 101, 2, 102], [5], [6, 11], [1, 101, 7], [8], [9], [10], [1, 101, 2, 102], [1, 101, 2, 102]
]  # fmt: skip
#: at beta = 2 the optimum (12) is below FIF (13)
FIF_BEATEN_IN_BATCHES = (
    Workload.from_token_lists([[1, 0, 0], [2], [0, 1], [0, 0, 0, 0, 0], [0], [0], [0], [1, 0], [2], [2]]),
    8,
    2,
)


@pytest.mark.slow
@settings(max_examples=50)
@given(instances(**SMALL))
@boundary_examples(*UNBATCHED_BOUNDARIES, *((w, b, 1) for w in LONG_PARENT_EDGES for b in (4, 5, 6)))
def test_token_and_edge_mip_equal_fif(instance):
    workload, budget, batch = instance
    fif = run_fif(workload, budget, batch=batch).misses
    for formulation in ("token", "edge"):
        _check_optimal(solve_mip(workload, budget, batch=batch, formulation=formulation), fif)


@pytest.mark.slow
@settings(max_examples=50)
@given(instances(**SMALL, max_batch=3))
@boundary_examples(*BATCHED_BOUNDARIES, FIF_BEATEN_IN_BATCHES, *((w, 6, 2) for w in LONG_PARENT_EDGES))
def test_token_and_edge_mip_agree_in_batches_at_most_fif(instance):
    """At beta >= 2 FIF is an upper bound only: both formulations prove the same optimum, at most FIF's
    misses and at least one miss per distinct token node."""
    workload, budget, batch = instance
    fif = run_fif(workload, budget, batch=batch).misses
    token, edge = (solve_mip(workload, budget, batch=batch, formulation=f) for f in ("token", "edge"))
    _check_optimal(token, edge.misses)
    _check_optimal(edge, token.misses)
    assert workload.trie.distinct_tokens <= edge.misses <= fif
    if instance is FIF_BEATEN_IN_BATCHES:
        assert (edge.misses, fif) == (12, 13)


@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
@settings(max_examples=25)
@given(instances(**SMALL, max_batch=3))
@boundary_examples(*BATCHED_BOUNDARIES)
def test_highs_equals_fif(instance):
    workload, budget, batch = instance
    fif = run_fif(workload, budget, batch=batch).misses
    for formulation in ("token", "edge"):
        _check_optimal(solve_mip(workload, budget, batch=batch, formulation=formulation, solver="highs"), fif)


@pytest.mark.parametrize(
    "solver", ["cbc", pytest.param("highs", marks=pytest.mark.skipif(not HAVE_HIGHS, reason="no highspy"))]
)
def test_a_child_is_kept_only_under_a_full_parent_of_two_tokens(solver):
    """The edge formulation's full flag (a binary, not the parent's count) on a parent edge of two tokens:
    the optimum 19 (brute force; FIF too), where a missing or loosened flag gives 18. Variables are made
    through the problem (no PuLP deprecation warning: PuLP 4 drops free-standing variables)."""
    workload = Workload.from_token_lists(CHILD_UNDER_A_LONG_PARENT)
    assert run_fif(workload, 5, batch=2).misses == 19
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for formulation in ("edge", "token"):
            _check_optimal(solve_mip(workload, 5, batch=2, solver=solver, formulation=formulation), 19)


def test_the_edge_models_size_on_a_child_under_a_long_parent():
    """The edge formulation's variables and constraints, counted from mip.py's docstring: 5 steps, an
    integer per gap ((1, 101) at steps 1 and 3, (2, 102) over 1-3), one occupancy per step, a full flag for
    each non-constant segment of (1, 101) that (2, 102)'s gap overlaps (steps 1 and 3; its point at step 2
    is the constant 2 and needs none): 3 + 5 + 2 variables; 5 occupancy rows, 2 flag rows, 2 closure rows."""
    result = solve_mip(Workload.from_token_lists(CHILD_UNDER_A_LONG_PARENT), 5, batch=2, solver="highs")
    assert (result.misses, result.variables, result.constraints) == (19, 10, 9)


def test_the_joint_edge_models_size_without_deprecated_variables():
    """The joint edge model of two workers over the docstring example: a worker's point at an edge's first
    request is len(v) y (no variable of its own); 25 variables and 30 constraints, every variable made
    through the problem (no PuLP deprecation warning)."""
    workload = Workload.from_token_lists([[1, 2], [1, 2], [3, 4], [3, 4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = solve_joint_mip(workload, [4, 4], a_miss=[2.0, 2.0], a_cached=[1.0, 1.0], solver="highs")
    assert (result.status, result.makespan, result.variables, result.constraints) == ("optimal", 6.0, 25, 30)


@pytest.mark.parametrize("formulation", ["edge", "token", "edge with a start"])
def test_a_deadline_passed_while_the_model_is_built_returns_no_solution(monkeypatch, formulation):
    """Each formulation checks the deadline as it builds (the edge one edge by edge, with or without a MIP
    start, the token one step by step): with its clock already past the deadline at the first check, the
    call ends before any variable or row exists (else the whole model would be built and solved, here in
    60 s), with no incumbent and the 11 distinct tokens as bound (stand-in clocks: the call starts at
    100 s and ends at 100.25 s)."""
    from kvtheory.optimum import formulations, mip
    from kvtheory.optimum.exact import fif_schedule

    workload = Workload.from_token_lists(CHILD_UNDER_A_LONG_PARENT)
    start = fif_schedule(workload, 5, 2)[1] if formulation == "edge with a start" else None
    monkeypatch.setattr(formulations, "time", SimpleNamespace(perf_counter=lambda: math.inf))
    readings = iter([100.0])
    monkeypatch.setattr(mip, "time", SimpleNamespace(perf_counter=lambda: next(readings, 100.25)))
    name = formulation.split()[0]
    result = solve_mip(workload, 5, batch=2, solver="highs", time_limit=60, formulation=name, start=start)
    assert result.to_dict() == {
        "solver": "highs",
        "formulation": name,
        "status": "no_solution",
        "misses": None,
        "bound": 11.0,
        "gap": None,
        "seconds": 0.25,
        "variables": 0,
        "constraints": 0,
    }


def test_a_deadline_is_passed_only_after_its_instant(monkeypatch):
    """``check_deadline`` lets the build go on at the deadline itself and stops it just after (stand-in
    clock at 100 s); no deadline never stops it."""
    from kvtheory.optimum import formulations
    from kvtheory.optimum.solver_runtime import OutOfTime

    monkeypatch.setattr(formulations, "time", SimpleNamespace(perf_counter=lambda: 100.0))
    assert formulations.check_deadline(100.0) is None and formulations.check_deadline(None) is None
    with pytest.raises(OutOfTime):
        formulations.check_deadline(math.nextafter(100.0, 0.0))


def test_gap_of_zero_where_bound_meets_incumbent_within_a_relative_tolerance():
    """gap_of is 0 once incumbent - bound <= 1e-9 max(1, |incumbent|) (the boundary included), a bound
    above the incumbent included; just past the tolerance it is the relative gap; None without both."""
    assert gap_of(10, 11) == 0.0 and gap_of(10, 10) == 0.0 and gap_of(0, 0) == 0.0
    assert gap_of(1e-9, 0.0) == 0.0  # exactly at the tolerance 1e-9 * max(1, 1e-9)
    assert gap_of(1e10, 1e10 - 1) == 0.0  # within 1e-9 * 1e10 = 10
    assert gap_of(1e10, 1e10 - 20) == pytest.approx(2e-9, rel=1e-6)
    assert gap_of(0.5, 0.5 - 1.5e-9) == pytest.approx(3e-9, rel=1e-6)  # the tolerance is 1e-9, not 5e-10
    assert gap_of(1.0, 0.0) == 1.0 and gap_of(0.5, 0.25) == 0.5 and gap_of(13, 12) == 1 / 13
    assert gap_of(None, 1.0) is None and gap_of(1.0, None) is None


def test_gap_of_is_infinite_for_an_incumbent_at_or_below_zero_above_its_bound():
    """No relative gap exists for an incumbent <= 0 that its bound does not meet: math.inf, no division."""
    assert gap_of(0.0, -1.0) == math.inf
    assert gap_of(-1.0, -2.0) == math.inf


def _larger_workload(queries: int = 40, seed: int = 0) -> Workload:
    rng = np.random.default_rng(seed)
    return Workload.from_token_lists(rng.integers(0, 3, size=rng.integers(3, 9)) for _ in range(queries))


@pytest.mark.parametrize(
    "solver", ["cbc", pytest.param("highs", marks=pytest.mark.skipif(not HAVE_HIGHS, reason="no highspy"))]
)
def test_time_limited_run_is_never_called_optimal(solver):
    workload, budget = _larger_workload(), 12
    fif = run_fif(workload, budget).misses
    result = solve_mip(workload, budget, formulation="token", solver=solver, time_limit=0.01)
    assert result.status in ("time_limit", "no_solution"), result
    if result.bound is not None:
        assert result.bound <= fif
    if result.status == "time_limit":
        assert result.misses >= fif and result.gap is not None and result.gap >= 0
    else:
        assert result.misses is None and result.gap is None


def test_edge_formulation_is_smaller_than_token_formulation():
    workload, budget = _larger_workload(12), 12
    token = solve_mip(workload, budget, formulation="token")
    edge = solve_mip(workload, budget, formulation="edge")
    assert token.misses == edge.misses == run_fif(workload, budget).misses
    assert edge.variables < token.variables and edge.constraints < token.constraints


def test_bad_inputs_raise_input_error(monkeypatch):
    workload = Workload.from_token_lists([[1, 2, 3]])
    with pytest.raises(InputError, match="budget"):
        solve_mip(workload, 2)
    with pytest.raises(InputError, match="solver"):
        solve_mip(workload, 3, solver="gurobi")
    with pytest.raises(InputError, match=r"^unknown formulation 'path'; choose one of token, edge$"):
        solve_mip(workload, 3, formulation="path")
    with pytest.raises(InputError, match=r"^batch size must be a positive integer \(at most 2\^40\), got 0$"):
        solve_mip(workload, 3, batch=0)
    with pytest.raises(  # the batch is checked before the solver
        InputError, match=r"^batch size must be a positive integer \(at most 2\^40\), got 0$"
    ):
        solve_mip(workload, 3, batch=0, solver="gurobi")
    two = Workload.from_token_lists([[1, 2], [3]])
    with pytest.raises(
        InputError,
        match=r"^query 0: batch 0 \(2 queries\) needs 3 token nodes resident at once, more than the budget B = 2$",
    ):
        solve_mip(two, 2, batch=2)
    with pytest.raises(
        InputError, match=r"^a MIP start is given in the edge formulation's terms: use formulation='edge'$"
    ):
        solve_mip(workload, 3, formulation="token", start={})
    monkeypatch.setattr(pulp.HiGHS, "available", lambda self: False)
    with pytest.raises(
        InputError, match=r"^solver 'highs' needs highspy, which kvtheory installs: pip install highspy$"
    ):
        solve_mip(workload, 3, solver="highs")


def test_check_solver_names_the_choices_and_asks_for_highspy_only_for_highs(monkeypatch):
    from kvtheory.optimum.solvers import check_solver

    with pytest.raises(InputError, match=r"^unknown solver 'gurobi'; choose one of cbc, highs$"):
        check_solver("gurobi")
    monkeypatch.setattr(pulp.HiGHS, "available", lambda self: False)
    assert check_solver("cbc") is None  # CBC comes with PuLP: no highspy needed
    with pytest.raises(
        InputError, match=r"^solver 'highs' needs highspy, which kvtheory installs: pip install highspy$"
    ):
        check_solver("highs")


@pytest.mark.parametrize("pulp_release", ["3.3 or later", "older"])
def test_new_variable_has_the_name_bounds_and_kind_asked_for(pulp_release):
    """PuLP >= 3.3 makes it with ``prob.add_variable``, without the deprecation warning its ``LpVariable``
    gives (seen under ``-W default`` or in a user's own test run); an older PuLP, whose problems lack that
    method (a stand-in problem here), with ``LpVariable``."""
    import warnings
    from types import SimpleNamespace

    from kvtheory.optimum.solvers import new_variable

    prob = pulp.LpProblem("p") if pulp_release == "3.3 or later" else SimpleNamespace()
    with warnings.catch_warnings():
        warnings.simplefilter("error" if pulp_release == "3.3 or later" else "ignore", DeprecationWarning)
        x = new_variable(prob, "x", 1, 3, cat=pulp.LpInteger)
    assert (x.name, x.lowBound, x.upBound, x.cat) == ("x", 1, 3, pulp.LpInteger)


def test_result_to_dict_round_trips():
    result = solve_mip(Workload.from_token_lists([[1], [2], [1]]), 1)
    record = result.to_dict()
    assert record["misses"] == 3 and record["status"] == "optimal" and record["formulation"] == "edge"


# Several workers


@st.composite
def joint_instances(draw, max_queries: int = 6, workers: int = 2):
    """(workload, budgets, keyword arguments): each query fits some worker; integer coefficients.

    Half the time the workers are identical, which the joint MIP exploits by symmetry breaking.
    """
    workload = Workload.from_token_lists(draw(token_lists(max_queries, 5, 3)))
    longest = workload.max_length
    budgets = [draw(st.integers(longest, longest + 4))] + [
        draw(st.integers(1, longest + 4)) for _ in range(workers - 1)
    ]
    a_miss = [float(draw(st.integers(1, 4))) for _ in range(workers)]
    a_cached = [float(draw(st.integers(0, int(a)))) for a in a_miss]
    if draw(st.booleans()):
        budgets, a_miss, a_cached = [budgets[0]] * workers, [a_miss[0]] * workers, [a_cached[0]] * workers
    output = draw(st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=len(workload), max_size=len(workload))))
    return workload, budgets, {"a_miss": a_miss, "a_cached": a_cached, "output_time": output}


# joint instances the generator rarely draws: equal queries on identical workers whose budget is the
# longest query; a worker too small for some queries, with its own costs and per-query output times
JOINT_BOUNDARIES = (
    (
        Workload.from_token_lists([[0, 1], [0, 1], [0, 1], [2]]),
        [2, 2],
        {"a_miss": [2.0, 2.0], "a_cached": [1.0, 1.0], "output_time": None},
    ),
    (
        Workload.from_token_lists([[0, 1, 2], [0], [0, 1, 2], [3], [0]]),
        [3, 1],
        {"a_miss": [1.0, 3.0], "a_cached": [0.0, 3.0], "output_time": [1, 0, 1, 0, 2]},
    ),
    # an edge's value at a request its worker does not serve (formulations._point_value) must be an integer:
    # a continuous one lets the edge MIP call a routing of makespan 6 optimal, where the optimum is 5.75
    # (found by a random search of small instances with two or three workers)
    (
        Workload.from_token_lists([[2, 2], [2], [2], [2, 2, 7], [2, 2, 4], [2, 2, 7], [2]]),
        [4, 5],
        {"a_miss": [1.0, 1.0], "a_cached": [0.25, 0.25], "output_time": [0.5, 0, 1, 0, 0.5, 0.5, 1]},
    ),
)


def _brute_force(workload, budgets, kwargs) -> float:
    """min over all routings (each query on a worker it fits) of the makespan with FIF on every worker."""
    choices = [[i for i, b in enumerate(budgets) if q.length <= b] for q in workload]
    return min(routing_makespan(workload, r, budgets, **kwargs) for r in itertools.product(*choices))


def _check_joint(result, optimum: float) -> None:
    assert result.status == "optimal" and result.gap == 0.0, result
    assert result.makespan == pytest.approx(optimum)
    assert result.bound <= optimum + 1e-6
    for bound in result.lower_bounds.values():
        assert bound <= optimum + 1e-6


@pytest.mark.slow
@settings(max_examples=40)
@given(instances(**SMALL), st.integers(1, 4), st.integers(0, 4))
@example(UNBATCHED_BOUNDARIES[0], 2, 2)  # a_cached = a_miss: caching is worth nothing
@example(UNBATCHED_BOUNDARIES[0], 3, 0)  # hits are free
@example(UNBATCHED_BOUNDARIES[2], 1, 1)
def test_joint_with_one_worker_is_fif_cost(instance, a_miss, a_cached):
    workload, budget, _ = instance
    a_cached = min(a_cached, a_miss)
    fif = run_fif(workload, budget)
    expected = a_miss * fif.misses + a_cached * fif.hits
    for formulation in ("token", "edge"):
        result = solve_joint_mip(workload, [budget], a_miss=[a_miss], a_cached=[a_cached], formulation=formulation)
        _check_joint(result, expected)
        assert result.routing == [0] * len(workload)


@pytest.mark.slow
@settings(max_examples=40)
@given(joint_instances())
@boundary_examples(*JOINT_BOUNDARIES)
def test_joint_with_equal_costs_is_makespan_scheduling(instance):
    workload, budgets, kwargs = instance
    kwargs = {**kwargs, "a_cached": kwargs["a_miss"]}
    output = kwargs["output_time"] or [0] * len(workload)
    choices = [[i for i, b in enumerate(budgets) if q.length <= b] for q in workload]
    optimum = min(
        max(
            sum(kwargs["a_miss"][i] * workload[j].length + output[j] for j, w in enumerate(routing) if w == i)
            for i in range(len(budgets))
        )
        for routing in itertools.product(*choices)
    )
    _check_joint(solve_joint_mip(workload, budgets, **kwargs), optimum)


@pytest.mark.slow
@settings(max_examples=40)
@given(joint_instances())
@boundary_examples(*JOINT_BOUNDARIES)
def test_joint_mip_equals_brute_force(instance):
    workload, budgets, kwargs = instance
    optimum = _brute_force(workload, budgets, kwargs)
    for formulation in ("token", "edge"):
        result = solve_joint_mip(workload, budgets, formulation=formulation, **kwargs)
        _check_joint(result, optimum)
        assert routing_makespan(workload, result.routing, budgets, **kwargs) == pytest.approx(optimum)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_HIGHS, reason="highspy is not installed")
@settings(max_examples=20)
@given(joint_instances())
@boundary_examples(*JOINT_BOUNDARIES)
def test_joint_highs_equals_brute_force(instance):
    workload, budgets, kwargs = instance
    _check_joint(solve_joint_mip(workload, budgets, solver="highs", **kwargs), _brute_force(workload, budgets, kwargs))


def test_joint_per_worker_output_times():
    workload = Workload.from_token_lists([[1, 2], [3, 4]])
    kwargs = {"a_miss": [1.0, 1.0], "a_cached": [1.0, 1.0], "output_time": [[0.0, 9.0], [9.0, 0.0]]}
    result = solve_joint_mip(workload, [2, 2], **kwargs)
    assert result.routing == [0, 1] and result.makespan == pytest.approx(2.0)


def test_joint_time_limit_is_never_called_optimal():
    workload = _larger_workload(30)
    kwargs = {"a_miss": [3.0, 3.0], "a_cached": [1.0, 1.0]}
    result = solve_joint_mip(workload, [12, 12], time_limit=0.2, **kwargs)
    assert result.status in ("time_limit", "no_solution"), result
    lower = makespan_lower_bounds(workload, [12, 12], **kwargs)
    if result.status == "time_limit":
        assert result.makespan >= max(lower.values()) - 1e-6
        assert routing_makespan(workload, result.routing, [12, 12], **kwargs) == pytest.approx(result.makespan)


def test_makespan_lower_bounds_cheap_and_lp():
    workload = Workload.from_token_lists([[1, 2, 3], [1, 2, 3], [1, 2, 4], [5]])
    kwargs = {"a_miss": [2.0, 2.0], "a_cached": [1.0, 1.0], "output_time": [1.0, 1.0, 1.0, 1.0]}
    cheap = makespan_lower_bounds(workload, [4, 4], **kwargs)
    # best-case costs: 3*2+1 = 7, 3*1+1 = 4, 2*1+2+1 = 5, 2+1 = 3
    assert cheap == {"work_over_m": pytest.approx(19 / 2), "largest_query": pytest.approx(7.0)}
    with_lp = makespan_lower_bounds(workload, [4, 4], lp=True, **kwargs)
    assert with_lp["lp_relaxation"] <= solve_joint_mip(workload, [4, 4], **kwargs).makespan + 1e-6


def test_joint_bad_inputs_raise_input_error():
    workload = Workload.from_token_lists([[1, 2, 3], [4]])
    ok = {"a_miss": [2.0, 2.0], "a_cached": [1.0, 1.0]}
    with pytest.raises(InputError, match="a_cached"):
        solve_joint_mip(workload, [3, 3], a_miss=[1.0, 1.0], a_cached=[2.0, 1.0])
    with pytest.raises(InputError, match="a_miss"):
        solve_joint_mip(workload, [3, 3], a_miss=[1.0], a_cached=[1.0, 1.0])
    with pytest.raises(InputError, match="every worker"):
        solve_joint_mip(workload, [2, 2], **ok)
    with pytest.raises(InputError, match="output_time"):
        solve_joint_mip(workload, [3, 3], output_time=[1.0], **ok)
    with pytest.raises(InputError, match="budget"):
        solve_joint_mip(workload, [3, 0], **ok)


def test_time_limit_covers_building_the_model():
    """A model too large to build within the limit comes back soon, with no incumbent called optimal."""
    import time

    from kvtheory.workloads import generate

    workload = generate("gsp", {"groups": 8, "prompts": 16, "lengths": [64, 128]}, seed=0)
    started = time.perf_counter()
    result = solve_mip(workload, 600, formulation="token", time_limit=1.0)
    assert time.perf_counter() - started < 20
    assert result.status in ("no_solution", "time_limit")
    assert result.bound is not None and result.bound <= run_fif(workload, 600).misses


#: a two-token edge 0 1 kept full while its children 2 and 3 come and go: the start sets its "full" flags
LONG_PARENT_EDGE = (LONG_PARENT_EDGES[0], 4, 1)


@settings(max_examples=40)
@given(instances(**SMALL, max_batch=3))
@boundary_examples(*BATCHED_BOUNDARIES, LONG_PARENT_EDGE, (LONG_PARENT_EDGE[0], 6, 2))
def test_the_mip_start_is_fifs_schedule_and_feasible(instance):
    """The start given to the edge MIP (FIF's schedule in the formulation's variables) sets every variable,
    satisfies every constraint, and its objective is FIF's misses: a start the solver must reject would
    silently cost it its incumbent."""
    from kvtheory.model.batches import batches
    from kvtheory.optimum.exact import fif_schedule
    from kvtheory.optimum.formulations import edge_cache

    workload, budget, batch = instance
    misses, start = fif_schedule(workload, budget, batch)
    steps = [list(group) for group in batches(len(workload), batch)]
    prob = pulp.LpProblem("start", pulp.LpMinimize)
    hits = edge_cache(prob, workload.trie, steps, budget, [1] * len(steps), "", None, start)
    assert all(variable.varValue is not None for variable in prob.variables())
    assert prob.valid(eps=1e-9), [name for name, row in prob.constraints.items() if not row.valid(1e-9)]
    assert workload.total_tokens - sum(pulp.value(h) for h in hits.values()) == misses
