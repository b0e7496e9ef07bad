"""The two MIP formulations of one worker's cache, as constraints added to a PuLP model.

Given the steps and, per step, whether this worker serves it (1, or a routing binary y), each adds one
worker's cache variables and constraints and returns hits[j], the cached prefix of q_j that this worker
has just before q_j's step, as a linear expression. The formulations and why the edge one is exact are
in :mod:`kvtheory.optimum.mip`.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulp

from kvtheory.errors import InputError
from kvtheory.model.trie import ROOT, PrefixTrie
from kvtheory.optimum.requests import edge_requests
from kvtheory.optimum.solver_runtime import OutOfTime
from kvtheory.optimum.solvers import new_variable

FORMULATIONS = ("token", "edge")


def check_formulation(formulation: str) -> None:
    if formulation not in FORMULATIONS:
        raise InputError(f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS)}")


Served = Sequence[int | pulp.LpVariable]
#: a known schedule, {(edge v, step r): tokens of v cached just before step r}, for every request r of v
Start = Mapping[tuple[int, int], int] | None


def token_cache(
    prob, trie: PrefixTrie, steps: list[list[int]], budget: int, served: Served, tag: str, deadline: float | None
) -> dict:
    """The MIP of docs/model.md §The offline optimum: binary x[u,t] per token node u, step t; x[u,-1] = 0.

    closure x[u,t] <= x[parent(u),t]; capacity sum_u x[u,t] <= B; residency x[u,t] >= s_t for u in Q_t;
    no prefetch x[u,t] <= x[u,t-1] + s_t [u in Q_t]; hits of j in Q_t = sum_{u in q_j} x[u,t-1]; here s_t
    is 1, or the binary routing step t to this worker.
    """
    first, parents = _token_nodes(trie)
    tokens_of = [
        [u for v in trie.path(j) for u in range(first[v], first[v] + trie.edge_len[v])] for j in range(len(trie.end))
    ]
    x = [
        [new_variable(prob, f"x{tag}_{u}_{t}", cat=pulp.LpBinary) for t in range(len(steps))]
        for u in range(len(parents))
    ]
    hits = {}
    for t, step in enumerate(steps):
        check_deadline(deadline)
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
            gap = new_variable(prob, f"g{tag}_{v}_{r}", 0, length, cat=pulp.LpInteger)
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
    point = new_variable(prob, f"e{tag}_{v}_{r}", 0, length, cat=pulp.LpInteger)
    prob += point >= length * serve
    prob += point <= previous + length * serve
    return point


def edge_cache(
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
        check_deadline(deadline)
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
        occupancy = new_variable(prob, f"o{tag}_{t}", 0, budget)
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
        flag = new_variable(prob, f"f{tag}_{v}_{k}", cat=pulp.LpBinary)
        prob += segment.value >= length * flag
        _start_like(flag, segment.value, full=length)
        full[key] = flag
    return full[key]


CACHE_MODELS = {"token": token_cache, "edge": edge_cache}


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime
