"""Exact offline optima by mixed-integer programming (MODEL.md §1 "MIP", §2 "Offline objective").

Symbols. Queries q_1..q_n, steps t = 0..S-1 (step t serves batch Q_t; batch 1 in the joint MIP, where
step t is query t), budget B, radix edges v of the workload's :class:`PrefixTrie` with ``len(v)`` =
``edge_len[v]`` token nodes each, R(v) = the steps whose batch contains v. A cache state is prefix-closed,
so on each edge it keeps a head of ``kept`` tokens, and the hits of q_j are the sum of ``kept`` over its
path. Misses of a run = sum over steps t, over queries j in Q_t (repeats pay again) of
|q_j| - h_j, with h_j counted against the cache after step t-1 (empty before step 0).

Two exact formulations of the single-worker optimum (:func:`solve_mip`):

* ``token``: MODEL.md's MIP verbatim, a binary x[u,t] for every token node u and step t.
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

Both give the optimum of MODEL.md's model, which FIF attains (kvtheory.simulate.run_fif).

Solvers: PuLP's bundled CBC, or HiGHS (highspy, installed with kvtheory). Misses are integers, so an
absolute gap below 1 proves optimality and a lower bound may be rounded up. A run stopped by its time
limit reports status ``time_limit`` (with its incumbent and the solver's proven bound) or
``no_solution``; it is ``optimal`` only if its bound, rounded up, already meets the incumbent (a proof).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile
import time
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pulp

from kvtheory.errors import InputError
from kvtheory.model.trie import ROOT, PrefixTrie
from kvtheory.model.workload import Workload
from kvtheory.optimum.deadline import OutOfTime, hard_deadline, reaped_cbc
from kvtheory.optimum.requests import edge_requests
from kvtheory.simulate import batches, run_fif, validate

SOLVERS = ("cbc", "highs")
FORMULATIONS = ("token", "edge")


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


# ---------------------------------------------------------------------------------------------------
# Solving: one call for both solvers, returning the status, incumbent and bound of the linear objective


@dataclass(frozen=True)
class _Outcome:
    status: str
    objective: float | None
    bound: float | None


def _check_solver(solver: str) -> None:
    if solver not in SOLVERS:
        raise InputError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if solver == "highs" and not pulp.HiGHS(msg=False).available():
        raise InputError("solver 'highs' needs highspy, which kvtheory installs: pip install highspy")


def _check_formulation(formulation: str) -> None:
    if formulation not in FORMULATIONS:
        raise InputError(f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS)}")


def _solve(
    prob: pulp.LpProblem, solver: str, time_limit: float | None, *, mip: bool, gap_abs: float, warm: bool = False
) -> _Outcome:
    """Minimise ``prob`` (whose objective has no constant term); ``warm``: start from the variables'
    initial values (``setInitialValue``), which must form a feasible solution.

    ``time_limit`` holds for the whole call: the solver's own limit ends ``_MARGIN`` of it early, so
    that it stops with its incumbent, and :func:`hard_deadline` stops whatever is still running at the
    limit (then ``no_solution``: what the solver had is lost).
    """
    adapter = _solve_highs if solver == "highs" else _solve_cbc
    own_limit = None if time_limit is None else time_limit * (1 - _MARGIN)
    try:
        with hard_deadline(time_limit):
            return adapter(prob, own_limit, mip=mip, gap_abs=gap_abs, warm=warm)
    except OutOfTime:
        return _Outcome("no_solution", None, None)


#: the part of a time limit left, after the solver's own limit, for handing the model over and back
_MARGIN = 0.1


def _linear_value(prob: pulp.LpProblem) -> float:
    """The incumbent's objective (PuLP puts a valueless ``__dummy`` with coefficient 0 in an empty one)."""
    return sum(coef * var.varValue for var, coef in prob.objective.items() if coef)


@contextlib.contextmanager
def _stdout_silenced():
    """Send file descriptor 1 to /dev/null for the duration (what C libraries print, too)."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _solve_highs(
    prob: pulp.LpProblem, time_limit: float | None, *, mip: bool, gap_abs: float, warm: bool = False
) -> _Outcome:
    import highspy

    deadline = None if time_limit is None else time.perf_counter() + time_limit
    options = {"msg": False, "mip": mip, "gapAbs": gap_abs, "gapRel": 0.0}
    with _stdout_silenced():  # highspy prints a banner on the C stdout even with msg=False
        prob.solve(_highs_until(deadline, warm)(**options))
    highs = prob.solverModel
    info = highs.getInfo()
    model_status = highs.getModelStatus()
    if model_status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        return _Outcome("infeasible", None, None)
    has_incumbent = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = _linear_value(prob) if has_incumbent else None
    if model_status == highspy.HighsModelStatus.kOptimal:
        return _Outcome("optimal", objective, info.mip_dual_bound if mip else objective)
    bound = info.mip_dual_bound if mip and math.isfinite(info.mip_dual_bound) else None
    return _Outcome("time_limit" if has_incumbent else "no_solution", objective, bound)


def _highs_until(deadline: float | None, warm: bool) -> type:
    """PuLP's HiGHS interface, with HiGHS's time limit set to what is left until ``deadline`` once the
    model is handed over (which takes a while on large models), and with ``warm`` the variables'
    initial values given to HiGHS as a MIP start."""
    import highspy

    class HiGHSUntil(pulp.HiGHS):
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
) -> _Outcome:
    handle, log_path = tempfile.mkstemp(suffix=".log", prefix="kvtheory-cbc-")
    os.close(handle)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            command = pulp.PULP_CBC_CMD(
                msg=False, mip=mip, timeLimit=time_limit, gapAbs=gap_abs, logPath=log_path, warmStart=warm
            )
        with reaped_cbc():
            prob.solve(command)
        with open(log_path) as log:
            text = log.read()
    finally:
        os.unlink(log_path)
    if prob.status == pulp.LpStatusInfeasible:
        return _Outcome("infeasible", None, None)
    if prob.sol_status == pulp.LpSolutionOptimal:
        objective = _linear_value(prob)
        return _Outcome("optimal", objective, objective)
    bound = _cbc_bound(text)
    if prob.sol_status == pulp.LpSolutionIntegerFeasible:
        return _Outcome("time_limit", _linear_value(prob), bound)
    return _Outcome("no_solution", None, bound)


# ---------------------------------------------------------------------------------------------------
# Cache models: given the steps and, per step, whether this worker serves it (1, or a routing binary y),
# add one worker's cache variables and constraints and return hits[j], the cached prefix of q_j that
# this worker has just before q_j's step, as a linear expression.

Served = Sequence[int | pulp.LpVariable]
#: a known schedule, {(edge v, step r): tokens of v cached just before step r}, for every request r of v
Start = Mapping[tuple[int, int], int] | None


def _variable(prob, name: str, low=None, up=None, cat=pulp.LpContinuous) -> pulp.LpVariable:
    """A new variable of ``prob``: PuLP >= 3.3 wants ``prob.add_variable``, which older releases lack."""
    add = getattr(prob, "add_variable", None)
    return add(name, low, up, cat=cat) if add else pulp.LpVariable(name, low, up, cat=cat)


def _token_cache(
    prob, trie: PrefixTrie, steps: list[list[int]], budget: int, served: Served, tag: str, deadline: float | None
) -> dict:
    """MODEL.md's MIP: binary x[u,t] per token node u, step t; x[u,-1] = 0.

    closure x[u,t] <= x[parent(u),t]; capacity sum_u x[u,t] <= B; residency x[u,t] >= s_t for u in Q_t;
    no prefetch x[u,t] <= x[u,t-1] + s_t [u in Q_t]; hits of j in Q_t = sum_{u in q_j} x[u,t-1]; here s_t
    is 1, or the binary routing step t to this worker.
    """
    first, parents = _token_nodes(trie)
    tokens_of = [
        [u for v in trie.path(j) for u in range(first[v], first[v] + trie.edge_len[v])] for j in range(len(trie.end))
    ]
    x = [
        [_variable(prob, f"x{tag}_{u}_{t}", cat=pulp.LpBinary) for t in range(len(steps))] for u in range(len(parents))
    ]
    hits = {}
    for t, step in enumerate(steps):
        _check_deadline(deadline)
        requested = {u for j in step for u in tokens_of[j]}
        prob += pulp.lpSum(x[u][t] for u in range(len(parents))) <= budget
        for u, parent in enumerate(parents):
            if parent >= 0:
                prob += x[u][t] <= x[parent][t]
            before = x[u][t - 1] if t else 0
            if u in requested:
                prob += x[u][t] >= served[t]
                prob += x[u][t] <= before + served[t]
            else:
                prob += x[u][t] <= before
        for j in step:
            hits[j] = pulp.lpSum(x[u][t - 1] for u in tokens_of[j]) if t else pulp.LpAffineExpression()
    return hits


def _token_nodes(trie: PrefixTrie) -> tuple[list[int], list[int]]:
    """Token node ids: edge v holds first[v] .. first[v]+len(v)-1, head first; and each token's parent (-1: none)."""
    first = [0] * trie.n_nodes
    for v in range(1, trie.n_nodes - 1):
        first[v + 1] = first[v] + trie.edge_len[v]
    parents: list[int] = []
    for v in range(1, trie.n_nodes):
        above = trie.parent[v]
        parents.append(first[above] + trie.edge_len[above] - 1 if above != ROOT else -1)
        parents.extend(range(first[v], first[v] + trie.edge_len[v] - 1))
    return first, parents


@dataclass(frozen=True)
class _Segment:
    """Steps start..stop during which an edge keeps ``value`` tokens (an int, variable or expression)."""

    start: int
    stop: int
    value: object


def _request_times(trie: PrefixTrie, steps: list[list[int]]) -> dict[int, list[int]]:
    """R(v): the steps whose batch contains edge v, increasing."""
    return {v: [t for t, _ in points] for v, points in edge_requests(trie, steps).items()}


def _edge_segments(prob, v: int, length: int, times: list[int], served: Served, tag: str, start: Start):
    """The segments of edge v (points at its requests, gaps between them) and its value before each request.

    A gap value g satisfies g <= the point before it. A point at r is len(v) on a worker that serves
    every step (``served`` all 1); on a routed worker it is len(v) y_r at v's first request, else an
    integer e with len(v) y_r <= e <= before + len(v) y_r. ``start[v, r]``, if given, is the gap's
    value in a known schedule (the tokens of v it holds just before step r).
    """
    segments, before = [], {}
    previous = 0
    for k, r in enumerate(times):
        if k and r > times[k - 1] + 1:
            gap = _variable(prob, f"g{tag}_{v}_{r}", 0, length, cat=pulp.LpInteger)
            if start is not None:
                gap.setInitialValue(start[v, r])
            if not isinstance(previous, int):
                prob += gap <= previous
            segments.append(_Segment(times[k - 1] + 1, r - 1, gap))
            previous = gap
        before[r] = previous
        previous = _point_value(prob, v, length, r, previous, served[r], tag)
        segments.append(_Segment(r, r, previous))
    return segments, before


def _point_value(prob, v: int, length: int, r: int, previous, serve, tag: str):
    """Edge v's value at its request r; ``serve`` is 1 (a lone worker) or the routing binary y_r."""
    if isinstance(serve, int):
        return length
    if isinstance(previous, int) and previous == 0:
        return length * serve
    point = _variable(prob, f"e{tag}_{v}_{r}", 0, length, cat=pulp.LpInteger)
    prob += point >= length * serve
    prob += point <= previous + length * serve
    return point


def _edge_cache(
    prob,
    trie: PrefixTrie,
    steps: list[list[int]],
    budget: int,
    served: Served,
    tag: str,
    deadline: float | None,
    start: Start = None,
) -> dict:
    """The step-compressed edge formulation (see the module docstring); returns hits[j].

    With ``start`` (see ``_edge_segments``) every variable gets the value of that schedule in normal
    form, a MIP start for the solver.
    """
    times = _request_times(trie, steps)
    segments, before = {}, {}
    for v, ts in times.items():
        _check_deadline(deadline)
        segments[v], before[v] = _edge_segments(prob, v, trie.edge_len[v], ts, served, tag, start)
    _capacity(prob, segments, len(steps), budget, tag)
    _closure(prob, trie, segments, tag)
    return {j: pulp.lpSum(before[v][t] for v in trie.path(j)) for t, step in enumerate(steps) for j in step}


def _capacity(prob, segments: dict, n_steps: int, budget: int, tag: str) -> None:
    """Occupancy o_t = the values of the segments covering step t, kept sparse as a running sum.

    o_t = o_{t-1} + (segments starting at t) - (segments that ended at t-1), o_t <= B: each segment
    enters two rows instead of one per step it covers (the same polyhedron, projected).
    """
    starting: list[list] = [[] for _ in range(n_steps)]
    ending: list[list] = [[] for _ in range(n_steps)]
    for segs in segments.values():
        for seg in segs:
            starting[seg.start].append(seg.value)
            if seg.stop + 1 < n_steps:
                ending[seg.stop + 1].append(seg.value)
    level = 0
    for t in range(n_steps):
        occupancy = _variable(prob, f"o{tag}_{t}", 0, budget)
        change = pulp.lpSum(starting[t]) - pulp.lpSum(ending[t])
        prob += occupancy == level + change
        _start_like(occupancy, level + change)
        level = occupancy


def _closure(prob, trie: PrefixTrie, segments: dict, tag: str) -> None:
    """val(S_c) > 0 implies val(S_v) = len(v) for every segment S_c of an edge c overlapping S_v of its parent v."""
    full: dict[tuple[int, int], object] = {}
    for c, c_segs in segments.items():
        v = trie.parent[c]
        if v == ROOT:
            continue
        v_segs = segments[v]
        starts = [seg.start for seg in v_segs]
        for seg in c_segs:
            for k in range(bisect_left(starts, seg.start), bisect_right(starts, seg.stop)):
                above = v_segs[k]
                if _is_constant(above.value):
                    continue
                flag = _full_flag(prob, v, trie.edge_len[v], above, k, full, tag)
                prob += seg.value <= trie.edge_len[c] * flag


def _is_constant(value) -> bool:
    return isinstance(value, (int, float))


def _start_like(variable: pulp.LpVariable, value, full: int | None = None) -> None:
    """Give ``variable`` the start value of ``value`` (an expression), or with ``full`` the flag
    [value == full], when every variable in ``value`` has one."""
    known = value if _is_constant(value) else pulp.LpAffineExpression(value).value()
    if known is not None:
        variable.setInitialValue(known if full is None else int(round(known) == full))


def _full_flag(prob, v: int, length: int, segment: _Segment, k: int, full: dict, tag: str):
    """f(S_v): a binary (or S_v's own 0/1 value when len(v) = 1) that is 1 only if v is full during S_v."""
    if length == 1:
        return segment.value
    key = (v, k)
    if key not in full:
        flag = _variable(prob, f"f{tag}_{v}_{k}", cat=pulp.LpBinary)
        prob += segment.value >= length * flag
        _start_like(flag, segment.value, full=length)
        full[key] = flag
    return full[key]


_CACHE_MODELS = {"token": _token_cache, "edge": _edge_cache}


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
    _check_solver(solver)
    _check_formulation(formulation)
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
                hits = _CACHE_MODELS[formulation](prob, workload.trie, steps, budget, served, "", deadline)
            else:
                hits = _edge_cache(prob, workload.trie, steps, budget, served, "", deadline, start)
            objective = -pulp.lpSum(hits.values())
    except OutOfTime:
        return _unbuilt(solver, formulation, started, prob, bound=float(workload.trie.distinct_tokens))
    offset = workload.total_tokens + objective.constant
    objective.constant = 0
    prob.setObjective(objective)
    outcome = _solve(prob, solver, _remaining(deadline), mip=True, gap_abs=0.99, warm=start is not None)
    misses = None if outcome.objective is None else round(offset + outcome.objective)
    # without a bound from the solver: each distinct token node is missed at least once
    bound = float(workload.trie.distinct_tokens if outcome.bound is None else math.ceil(offset + outcome.bound - 1e-6))
    status = outcome.status
    if status == "optimal" or (status == "time_limit" and bound is not None and bound >= misses):
        status, bound = "optimal", float(misses)
    return OptResult(
        solver=solver,
        formulation=formulation,
        status=status,
        misses=misses,
        bound=bound,
        gap=_gap(misses, bound),
        seconds=time.perf_counter() - started,
        variables=prob.numVariables(),
        constraints=prob.numConstraints(),
    )


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime


def _remaining(deadline: float | None) -> float | None:
    """Seconds left for the solver until ``deadline``."""
    return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)


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


def _gap(incumbent: float | None, bound: float | None) -> float | None:
    """(incumbent - bound) / incumbent, 0 when they meet (or both are 0), None without both."""
    if incumbent is None or bound is None:
        return None
    if incumbent - bound <= 1e-9 * max(1.0, abs(incumbent)):
        return 0.0
    return (incumbent - bound) / incumbent if incumbent > 0 else math.inf


# ---------------------------------------------------------------------------------------------------
# Several workers: joint routing + eviction


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
    _check_solver(solver)
    _check_formulation(formulation)
    workers = _workers(workload, budgets, a_miss, a_cached, output_time)
    best = [min(column) for column in zip(*_best_costs(workload, workers))]
    bounds = {"work_over_m": sum(best) / workers.m, "largest_query": max(best)}
    if lp:
        prob, _ = _joint_model(workload, workers, formulation)
        outcome = _solve(prob, solver, None, mip=False, gap_abs=0.0)
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
            _variable(
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
    makespan = _variable(prob, "makespan", 0)
    prob.setObjective(pulp.LpAffineExpression(makespan))
    best = _best_hits(workload)
    steps = [[j] for j in range(n)]
    for i in range(m):
        load = pulp.lpSum(
            (workers.a_miss[i] * q.length + workers.output[i][j]) * y[i][j] for j, q in enumerate(workload)
        )
        saving = workers.a_miss[i] - workers.a_cached[i]
        if saving > 0:
            hits = _CACHE_MODELS[formulation](prob, workload.trie, steps, workers.budgets[i], y[i], f"_{i}", deadline)
            for j in range(1, n):
                if best[j]:
                    credit = _variable(prob, f"h{i}_{j}", 0)
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
    """Minimum makespan over routings and evictions (MODEL.md §2): M = len(budgets) workers, batch 1.

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
    _check_solver(solver)
    _check_formulation(formulation)
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
    left = _remaining(deadline)
    relaxed = _solve(prob, solver, None if left is None else left / 2, mip=False, gap_abs=0.0)
    lower["lp_relaxation"] = relaxed.objective if relaxed.status == "optimal" else None
    outcome = _solve(prob, solver, _remaining(deadline), mip=True, gap_abs=1e-9)
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
        gap=0.0 if outcome.status == "optimal" else _gap(makespan, outcome.bound),
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
            run = run_fif(_subset(workload, mine), workers.budgets[i])
            output = sum(workers.output[i][j] for j in mine)
            loads.append(workers.a_miss[i] * run.misses + workers.a_cached[i] * run.hits + output)
    return max(loads)


def _subset(workload: Workload, indices: Sequence[int]) -> Workload:
    """The queries of ``workload`` at ``indices``, in that order."""
    return Workload(tuple(workload[j] for j in indices))
