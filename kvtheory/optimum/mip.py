"""The single-worker optimum by mixed-integer programming (docs/model.md §The offline optimum).

Symbols. Queries q_1..q_n, steps t = 0..S-1 (step t serves batch Q_t), budget B, radix edges v of the
workload's :class:`PrefixTrie` with ``len(v)`` = ``edge_len[v]`` token nodes each, R(v) = the steps whose
batch contains v. A cache state is prefix-closed, so on each edge it keeps a head of ``kept`` tokens,
and the hits of q_j are the sum of ``kept`` over its path. Misses of a run = sum over steps t, over
queries j in Q_t (repeats pay again) of |q_j| - h_j, with h_j counted against the cache after step t-1
(empty before step 0).

Two exact formulations of the single-worker optimum (:func:`solve_mip`):

* ``token``: the MIP of docs/model.md §The offline optimum verbatim, a binary x[u,t] for every token node u and step t.
* ``edge``: integers per radix edge, with steps compressed. Normal form: between consecutive requests
  r < r' of v nothing can refill v, so its kept count is non-increasing there, and only the value at r'-1
  reaches the objective. Setting it to that value over the whole gap r+1..r'-1 (and to 0 after v's last
  request, before its first it is 0 anyway) keeps every constraint: capacity only loosens, and if a
  child c (whose requests are a subset of v's) keeps a token at step t, it keeps one at the end of v's
  gap around t, so v was full there. So one integer g in [0, len(v)] per gap of v (one with r' > r+1)
  and a value per request point (the constant len(v) for one worker) say everything. Prefix closure
  between an edge c and its parent v: whenever a segment (gap or point) S_c of c overlaps a segment S_v
  of v, val(S_c) > 0 implies val(S_v) = len(v); with a binary f(S_v) ("v full during S_v"):
  val(S_v) >= len(v) f and val(S_c) <= len(c) f (f is val(S_v) itself when len(v) = 1). Capacity: at
  each step the values of the segments covering it sum to at most B.

Both give the optimum of the model: FIF's misses at batch size 1 (kvtheory.optimum.fif.run_fif),
possibly fewer at beta >= 2.

The formulations are built by :mod:`kvtheory.optimum.formulations` and solved through
:mod:`kvtheory.optimum.solvers`; the joint routing problem is :mod:`kvtheory.cluster.joint_mip`.

Solvers: PuLP's bundled CBC, or HiGHS (highspy, installed with kvtheory). Misses are integers, so an
absolute gap below 1 proves optimality and a lower bound may be rounded up. A run stopped by its time
limit reports status ``time_limit`` (with its incumbent and the solver's proven bound), one stopped by
SIGINT or SIGTERM inside :func:`kvtheory.optimum.interrupt.stoppable` ``interrupted`` (the same), or
``no_solution``; it is ``optimal`` only if its bound, rounded up, already meets the incumbent (a proof).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import pulp

from kvtheory.errors import InputError
from kvtheory.model.batches import batches, validate
from kvtheory.model.workload import Workload
from kvtheory.optimum.formulations import CACHE_MODELS, Start, check_formulation, edge_cache
from kvtheory.optimum.solver_runtime import OutOfTime, hard_deadline
from kvtheory.optimum.solvers import check_solver, remaining, solve


@dataclass(frozen=True)
class OptResult:
    """The single-worker optimum: total misses of the incumbent, the proven lower bound, the gap."""

    solver: str
    formulation: str
    status: str
    misses: int | None
    bound: float | None
    gap: float | None
    seconds: float
    variables: int
    constraints: int

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------------
# Single worker


def solve_mip(
    workload: Workload,
    budget: int,
    *,
    batch: int = 1,
    solver: str = "cbc",
    time_limit: float | None = None,
    formulation: str = "edge",
    start: Start = None,
) -> OptResult:
    """Minimum total misses on one worker of B = ``budget`` tokens at batch size beta = ``batch``.

    Maximises sum_t sum_{j in Q_t} h_j over the cache model of ``formulation`` (module docstring);
    misses = T - hits with T the workload's total tokens. ``time_limit`` is in seconds (None: none).
    ``start`` (edge formulation only) is a feasible schedule the solver starts from, as
    {(edge v, step r): tokens of v cached just before step r} for every request r of every edge.

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> solve_mip(w, 2).misses   # Belady: 3 compulsory misses, then one miss per two requests
    4
    """
    validate(workload, budget, batch)
    check_solver(solver)
    check_formulation(formulation)
    if start is not None and formulation != "edge":
        raise InputError("a MIP start is given in the edge formulation's terms: use formulation='edge'")
    started = time.perf_counter()
    steps = [list(group) for group in batches(len(workload), batch)]
    prob = pulp.LpProblem("kvtheory_misses", pulp.LpMinimize)
    deadline = None if time_limit is None else started + time_limit
    served = [1] * len(steps)
    try:
        with hard_deadline(time_limit):
            if start is None:
                hits = CACHE_MODELS[formulation](prob, workload.trie, steps, budget, served, "", deadline)
            else:
                hits = edge_cache(prob, workload.trie, steps, budget, served, "", deadline, start)
            objective = -pulp.lpSum(hits.values())
    except OutOfTime:
        return _unbuilt(solver, formulation, started, prob, bound=float(workload.trie.distinct_tokens))
    offset = workload.total_tokens + objective.constant
    objective.constant = 0
    prob.setObjective(objective)
    outcome = solve(prob, solver, remaining(deadline), mip=True, gap_abs=0.99, warm=start is not None)
    misses = None if outcome.objective is None else round(offset + outcome.objective)
    # without a bound from the solver: each distinct token node is missed at least once
    bound = float(workload.trie.distinct_tokens if outcome.bound is None else math.ceil(offset + outcome.bound - 1e-6))
    status = outcome.status
    proven = misses is not None and bound is not None and bound >= misses
    if status == "optimal" or (status in ("time_limit", "interrupted") and proven):
        status, bound = "optimal", float(misses)
    return OptResult(
        solver=solver,
        formulation=formulation,
        status=status,
        misses=misses,
        bound=bound,
        gap=gap_of(misses, bound),
        seconds=time.perf_counter() - started,
        variables=prob.numVariables(),
        constraints=prob.numConstraints(),
    )


def _unbuilt(solver: str, formulation: str, started: float, prob, bound: float) -> OptResult:
    """The time limit ran out while the model was being built: no incumbent; the bound is the number of
    distinct token nodes (each is missed at least once)."""
    return OptResult(
        solver=solver,
        formulation=formulation,
        status="no_solution",
        misses=None,
        bound=bound,
        gap=None,
        seconds=time.perf_counter() - started,
        variables=prob.numVariables(),
        constraints=prob.numConstraints(),
    )


def gap_of(incumbent: float | None, bound: float | None) -> float | None:
    """(incumbent - bound) / incumbent, 0 when they meet (or both are 0), None without both."""
    if incumbent is None or bound is None:
        return None
    if incumbent - bound <= 1e-9 * max(1.0, abs(incumbent)):
        return 0.0
    return (incumbent - bound) / incumbent if incumbent > 0 else math.inf
