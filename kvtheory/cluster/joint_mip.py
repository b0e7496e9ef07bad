"""The joint routing + eviction optimum by mixed-integer programming (docs/cluster.md §Joint optimum).

Symbols: M workers with budgets B_i and coefficients a_miss_i >= a_cached_i, queries q_1..q_n served
one at a time (batch 1) in workload order on the worker they are routed to; Cost_ij = a_cached_i h_ij +
a_miss_i (|q_j| - h_ij) + O_ij; P_i = sum of the costs routed to i; the objective is the makespan
max_i P_i. Each worker's cache is one of the formulations of :mod:`kvtheory.optimum.formulations`, with
the routing binaries y_ij in place of "served".
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pulp

from kvtheory.errors import InputError
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import run_fif
from kvtheory.optimum.formulations import CACHE_MODELS, check_formulation
from kvtheory.optimum.mip import gap_of
from kvtheory.optimum.solver_runtime import OutOfTime, hard_deadline
from kvtheory.optimum.solvers import check_solver, new_variable, remaining, solve


@dataclass(frozen=True)
class JointResult:
    """The joint routing + eviction optimum: makespan max_i P_i, its proven bound, the routing."""

    solver: str
    formulation: str
    status: str
    makespan: float | None
    bound: float | None
    gap: float | None
    seconds: float
    routing: list[int] | None
    lower_bounds: dict
    variables: int
    constraints: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Workers:
    budgets: list[int]
    a_miss: list[float]
    a_cached: list[float]
    output: list[list[float]]  # output[i][j] = O_ij

    @property
    def m(self) -> int:
        return len(self.budgets)

    def identical(self) -> bool:
        first = (self.budgets[0], self.a_miss[0], self.a_cached[0], self.output[0])
        return all((self.budgets[i], self.a_miss[i], self.a_cached[i], self.output[i]) == first for i in range(self.m))


def _workers(workload: Workload, budgets, a_miss, a_cached, output_time) -> _Workers:
    """Check the per-worker parameters; O_ij from ``output_time`` (None: 0, per query, or per worker and query)."""
    m, n = len(budgets), len(workload)
    if m == 0:
        raise InputError("budgets is empty: give one budget per worker")
    for budget in budgets:
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget <= 0:
            raise InputError(f"every budget must be a positive number of tokens, got {budget}")
    for name, values in (("a_miss", a_miss), ("a_cached", a_cached)):
        if len(values) != m or not all(math.isfinite(a) and a >= 0 for a in values):
            raise InputError(f"{name} must hold {m} finite non-negative numbers, one per worker")
    if any(c > a for c, a in zip(a_cached, a_miss)):
        raise InputError("a_cached must not exceed a_miss on any worker (a hit never costs more than a miss)")
    output = _output_matrix(output_time, m, n)
    for j, query in enumerate(workload):
        if all(query.length > b for b in budgets):
            raise InputError(f"{workload.where(j)}: query has {query.length} tokens, more than every worker's budget")
    return _Workers(list(budgets), [float(a) for a in a_miss], [float(a) for a in a_cached], output)


def _output_matrix(output_time, m: int, n: int) -> list[list[float]]:
    if output_time is None:
        return [[0.0] * n for _ in range(m)]
    array = np.asarray(output_time, dtype=float)
    if array.shape == (n,):
        array = np.tile(array, (m, 1))
    if array.shape != (m, n):
        raise InputError(f"output_time must be {n} numbers (one per query) or {m} lists of {n} (per worker)")
    if not (np.isfinite(array).all() and (array >= 0).all()):
        raise InputError("output_time must hold finite non-negative numbers")
    return array.tolist()


def _best_hits(workload: Workload) -> list[int]:
    """h*_j = max over j' < j of lcp(q_j, q_j'): no cache can give q_j more hits (0 for q_1)."""
    trie = workload.trie
    seen = [False] * trie.n_nodes
    best = []
    for j in range(len(workload)):
        path = trie.path(j)
        best.append(max((trie.depth[v] for v in path if seen[v]), default=0))
        for v in path:
            seen[v] = True
    return best


def _best_costs(workload: Workload, workers: _Workers) -> list[list[float]]:
    """w_ij = a_cached_i h*_j + a_miss_i (|q_j| - h*_j) + O_ij <= Cost_ij (inf where q_j does not fit B_i)."""
    best = _best_hits(workload)
    return [
        [
            workers.a_cached[i] * h + workers.a_miss[i] * (q.length - h) + workers.output[i][j]
            if q.length <= workers.budgets[i]
            else math.inf
            for j, (q, h) in enumerate(zip(workload, best))
        ]
        for i in range(workers.m)
    ]


def makespan_lower_bounds(
    workload: Workload,
    budgets: list[int],
    *,
    a_miss: list[float],
    a_cached: list[float],
    output_time=None,
    lp: bool = False,
    solver: str = "cbc",
    formulation: str = "edge",
) -> dict:
    """Lower bounds on the optimal makespan min max_i P_i, cheap enough for any instance size.

    With h*_j = max_{j'<j} lcp(q_j, q_j') (a cached prefix of q_j was brought in by an earlier query, so
    h_ij <= h*_j) and a_cached_i <= a_miss_i, every routing pays Cost_ij >= w_ij = a_cached_i h*_j +
    a_miss_i (|q_j| - h*_j) + O_ij for q_j on worker i (w_ij = inf if |q_j| > B_i). Hence, with
    w_j = min_i w_ij:

    * ``work_over_m`` = (sum_j w_j) / M <= (sum_i P_i) / M <= max_i P_i;
    * ``largest_query`` = max_j w_j <= P_i for the worker i that serves the maximising query;
    * ``lp_relaxation`` (only with ``lp=True``): the optimum of the joint MIP with integrality dropped.
    """
    check_solver(solver)
    check_formulation(formulation)
    workers = _workers(workload, budgets, a_miss, a_cached, output_time)
    best = [min(column) for column in zip(*_best_costs(workload, workers))]
    bounds = {"work_over_m": sum(best) / workers.m, "largest_query": max(best)}
    if lp:
        prob, _ = _joint_model(workload, workers, formulation)
        outcome = solve(prob, solver, None, mip=False, gap_abs=0.0)
        bounds["lp_relaxation"] = outcome.objective
    return bounds


def _joint_model(workload: Workload, workers: _Workers, formulation: str, deadline: float | None = None):
    """min C s.t. C >= P_i = sum_j y_ij (a_miss_i |q_j| + O_ij) - (a_miss_i - a_cached_i) H_ij for all i.

    y_ij binary, sum_i y_ij = 1 (y_ij = 0 where |q_j| > B_i); H_ij <= hits_i(j) of worker i's cache model
    (served s_t = y_it) and H_ij <= h*_j y_ij, so H_ij never exceeds the real hits and, at an optimum,
    equals them on a worker that sets the makespan. Workers with a_cached_i = a_miss_i need no cache
    model. When all workers are identical, query j may only use workers 0..j (relabel workers by their
    first query), which removes symmetric copies.
    """
    n, m = len(workload), workers.m
    symmetric = workers.identical()
    prob = pulp.LpProblem("kvtheory_makespan", pulp.LpMinimize)
    y = [
        [
            new_variable(
                prob,
                f"y{i}_{j}",
                0,
                0 if q.length > workers.budgets[i] or (symmetric and i > j) else 1,
                cat=pulp.LpInteger,
            )
            for j, q in enumerate(workload)
        ]
        for i in range(m)
    ]
    for j in range(n):
        prob += pulp.lpSum(y[i][j] for i in range(m)) == 1
    makespan = new_variable(prob, "makespan", 0)
    prob.setObjective(pulp.LpAffineExpression(makespan))
    best = _best_hits(workload)
    steps = [[j] for j in range(n)]
    for i in range(m):
        load = pulp.lpSum(
            (workers.a_miss[i] * q.length + workers.output[i][j]) * y[i][j] for j, q in enumerate(workload)
        )
        saving = workers.a_miss[i] - workers.a_cached[i]
        if saving > 0:
            hits = CACHE_MODELS[formulation](prob, workload.trie, steps, workers.budgets[i], y[i], f"_{i}", deadline)
            for j in range(1, n):
                if best[j]:
                    credit = new_variable(prob, f"h{i}_{j}", 0)
                    prob += credit <= hits[j]
                    prob += credit <= best[j] * y[i][j]
                    load -= saving * credit
        prob += makespan >= load
    return prob, y


def solve_joint_mip(
    workload: Workload,
    budgets: list[int],
    *,
    a_miss: list[float],
    a_cached: list[float],
    output_time=None,
    solver: str = "cbc",
    time_limit: float | None = None,
    formulation: str = "edge",
) -> JointResult:
    """Minimum makespan over routings and evictions (docs/cluster.md §Joint optimum): M = len(budgets)
    workers, batch 1.

    Each worker serves the queries routed to it in workload order; P_i = sum_{j -> i} Cost_ij with
    Cost_ij = a_cached_i h_ij + a_miss_i (|q_j| - h_ij) + O_ij. ``output_time`` gives O_ij: None (0), one
    number per query, or one list per worker. Model: see ``_joint_model``. ``makespan`` is the exact
    makespan of the incumbent routing with FIF eviction (:func:`routing_makespan`), which is at most the
    incumbent's objective, free of the solver's tolerances; ``gap`` is 0 when the solver proves
    optimality (within its tolerances). ``lower_bounds`` holds
    :func:`makespan_lower_bounds` with the LP relaxation (solved under the same time limit).

    >>> w = Workload.from_token_lists([[1, 2], [1, 2], [3, 4], [3, 4]])
    >>> solve_joint_mip(w, [4, 4], a_miss=[2.0, 2.0], a_cached=[1.0, 1.0]).makespan   # one prefix per worker
    6.0
    """
    check_solver(solver)
    check_formulation(formulation)
    workers = _workers(workload, budgets, a_miss, a_cached, output_time)
    started = time.perf_counter()
    deadline = None if time_limit is None else started + time_limit
    lower = makespan_lower_bounds(workload, budgets, a_miss=a_miss, a_cached=a_cached, output_time=output_time)
    try:
        with hard_deadline(time_limit):
            prob, y = _joint_model(workload, workers, formulation, deadline)
    except OutOfTime:
        lower["lp_relaxation"] = None
        return JointResult(
            solver=solver,
            formulation=formulation,
            status="no_solution",
            makespan=None,
            bound=max(lower["work_over_m"], lower["largest_query"]),
            gap=None,
            seconds=time.perf_counter() - started,
            routing=None,
            lower_bounds=lower,
            variables=0,
            constraints=0,
        )
    left = remaining(deadline)
    relaxed = solve(prob, solver, None if left is None else left / 2, mip=False, gap_abs=0.0)
    lower["lp_relaxation"] = relaxed.objective if relaxed.status == "optimal" else None
    outcome = solve(prob, solver, remaining(deadline), mip=True, gap_abs=1e-9)
    routing = makespan = None
    if outcome.objective is not None:
        routing = [max(range(workers.m), key=lambda i: y[i][j].varValue) for j in range(len(workload))]
        makespan = _makespan(workload, workers, routing)
    return JointResult(
        solver=solver,
        formulation=formulation,
        status=outcome.status,
        makespan=makespan,
        bound=outcome.bound,
        gap=0.0 if outcome.status == "optimal" else gap_of(makespan, outcome.bound),
        seconds=time.perf_counter() - started,
        routing=routing,
        lower_bounds=lower,
        variables=prob.numVariables(),
        constraints=prob.numConstraints(),
    )


def routing_makespan(
    workload: Workload, routing: Sequence[int], budgets: list[int], *, a_miss, a_cached, output_time=None
) -> float:
    """max_i P_i of a fixed routing (``routing[j]`` = worker of q_j) with optimal (FIF) eviction on each worker.

    With a_cached_i <= a_miss_i, FIF's minimum misses minimise each P_i, so the minimum of this over
    all routings is the joint optimum.
    """
    return _makespan(workload, _workers(workload, budgets, a_miss, a_cached, output_time), routing)


def _makespan(workload: Workload, workers: _Workers, routing: Sequence[int]) -> float:
    loads = [0.0]
    for i in range(workers.m):
        mine = [j for j, w in enumerate(routing) if w == i]
        if mine:
            run = run_fif(workload.select(mine), workers.budgets[i])
            output = sum(workers.output[i][j] for j in mine)
            loads.append(workers.a_miss[i] * run.misses + workers.a_cached[i] * run.hits + output)
    return max(loads)
