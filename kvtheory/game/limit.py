"""``limit``: a deterministic policy's asymptotic ratio on a universe, the maximum-ratio cycle of a finite graph
(docs/game.md §The asymptotic ratio).

The asymptotic ratio of P is the smallest c with ALG_P(s) <= c OPT(s) + b for every sequence s of full batches
and a constant b. Its graph: nodes (P's state key, W normalised), W the capped work function
(:mod:`kvtheory.game.universe`) minus its minimum, so every value lies in [0, beta*B] and the nodes reachable
from the empty cache are finitely many; an edge per valid batch b, carrying (c, d) = (P's misses on b, the
increase of min W). Along any path from the start, ALG = sum c and OPT = sum d exactly, so c is the maximum of
sum c / sum d over the cycles reachable from the start (a cycle with sum d = 0 < sum c: no finite c).

Exact: Dinkelbach's iteration over rationals. With lambda = p/q the best ratio of a cycle found so far, look
for a cycle of positive weight q c - p d (integers) by Bellman-Ford on longest paths; if there is one, its
ratio exceeds lambda and becomes the next; if none, every cycle has c/d <= lambda, and lambda is the maximum,
reached by the last cycle found (the certificate). Lambda grows strictly and there are finitely many simple
cycles, so this ends.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kvtheory.errors import InputError
from kvtheory.game.search import _PolicyStates, _progress, fraction_text, trusted_key
from kvtheory.game.universe import Universe
from kvtheory.model.workload import Workload
from kvtheory.policies import policy_class

#: graph nodes a ``limit`` may build before it is refused (LFU's keys hold request counts, which grow without
#: bound: its graph is infinite, and it is refused here)
LIMIT_NODES = 100_000


@dataclass(frozen=True)
class LimitResult:
    """The asymptotic ratio ``ratio`` (None: unbounded) of a deterministic policy, with a certificate: from the
    empty cache, ``prefix`` (batches, flattened) leads to a state that ``cycle`` (flattened) returns to, costing
    P ``cycle_alg`` misses and OPT ``cycle_opt`` more per lap; ``nodes`` and ``edges`` of the graph."""

    policy: str
    budget: int
    batch: int
    ratio: Fraction | None
    prefix: tuple[int, ...]
    cycle: tuple[int, ...]
    cycle_alg: int
    cycle_opt: int
    nodes: int
    edges: int

    def to_dict(self) -> dict:
        return {
            "mode": "limit",
            "policy": self.policy,
            "budget": self.budget,
            "batch": self.batch,
            "ratio": "inf" if self.ratio is None else fraction_text(self.ratio),
            "ratio_float": float("inf") if self.ratio is None else float(self.ratio),
            "prefix": list(self.prefix),
            "cycle": list(self.cycle),
            "cycle_alg": self.cycle_alg,
            "cycle_opt": self.cycle_opt,
            "nodes": self.nodes,
            "edges": self.edges,
        }


def limit(
    workload: Workload,
    budget: int,
    policy: str | type,
    *,
    batch: int = 1,
    state_limit: int = LIMIT_NODES,
    evict_amount: str = "shortfall",
    progress: bool = False,
) -> LimitResult:
    """The asymptotic ratio of the deterministic ``policy`` on the universe ``workload`` (module docstring), over
    sequences of full batches of ``batch``; a graph of more than ``state_limit`` nodes is refused. ``progress``:
    a progress bar on stderr counting the nodes expanded.

    >>> from kvtheory.model.workload import Workload
    >>> r = limit(Workload.from_token_lists([[0], [1], [2]]), 2, "lru")   # paging, n = 3, k = 2
    >>> r.ratio, r.cycle_alg, r.cycle_opt
    (Fraction(2, 1), 6, 3)
    """
    cls = policy if isinstance(policy, type) else policy_class(policy)
    if cls.randomized:
        raise InputError(f"policy {cls.name!r} is randomized: limit is for deterministic policies")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise InputError(f"batch size must be a positive integer, got {batch}")
    universe = Universe(workload, budget, batch=batch)
    start = cls.create(universe.trie, universe.budget, seed=0, evict_amount=evict_amount, backend="python")
    if not trusted_key(cls) or start.state_key() is None:
        raise InputError(f"policy {cls.name!r} has no state key of its own (state_key()): its graph is unknown")
    states = _PolicyStates(start, universe)
    moves = universe.batches(batch)
    # nodes: index -> (P key, P state, W); edges[u] = [(v, c, d, batch), ...]
    w0 = universe.initial()
    first = (states.initial_key, w0.tobytes())
    index = {first: 0}
    nodes = [(states.initial_key, states.initial, w0)]
    edges: list[list[tuple[int, int, int, tuple[int, ...]]]] = []
    with _progress(0, progress, f"limit {cls.name}") as bar:
        for u in itertools.count():
            if u == len(nodes):
                break
            pkey, dist, w = nodes[u]
            out = []
            for b in moves:
                cost, key2, dist2 = states.step(pkey, dist, b, ())
                w2 = universe.step(w, b)
                d = int(w2.min())
                w2 = w2 - d
                k = (key2, w2.tobytes())
                v = index.get(k)
                if v is None:
                    v = index[k] = len(nodes)
                    nodes.append((key2, dist2, w2))
                    if len(nodes) > state_limit:
                        raise InputError(
                            f"the graph of {cls.name!r} needs more than {state_limit} nodes ({len(nodes)} found, "
                            f"{u + 1} expanded); raise the state limit"
                        )
                out.append((v, int(cost), d, b))  # min W = 0 at every node: d is OPT's increase
            edges.append(out)
            bar.total = len(nodes)
            bar.update(1)
    ratio, cycle = _max_ratio_cycle(edges)
    n_edges = sum(map(len, edges))
    prefix = _path_to(edges, cycle[0][0]) if cycle else []
    flat = lambda steps: tuple(j for _, _, _, _, b in steps for j in b)  # noqa: E731
    alg = sum(step[2] for step in cycle)
    opt = sum(step[3] for step in cycle)
    return LimitResult(
        cls.name, universe.budget, batch, ratio, flat(prefix), flat(cycle), alg, opt, len(nodes), n_edges
    )


def _path_to(edges, target: int) -> list:
    """The steps (u, v, c, d, batch) of a shortest path from node 0 to ``target`` (breadth first)."""
    parent: dict[int, tuple] = {0: None}
    queue = deque([0])
    while queue:
        u = queue.popleft()
        if u == target:
            break
        for v, c, d, b in edges[u]:
            if v not in parent:
                parent[v] = (u, v, c, d, b)
                queue.append(v)
    steps = []
    while parent[target] is not None:
        step = parent[target]
        steps.append(step)
        target = step[0]
    return steps[::-1]


def _positive_cycle(edges, p: int, q: int) -> list | None:
    """A cycle (steps (u, v, c, d, batch)) of positive total weight q c - p d, or None: Bellman-Ford on longest
    paths from a virtual source joined to every node. A cycle of the predecessor graph is always a positive one
    (each of its edges was tight when set, and the last one set strictly improved), so after each round the
    predecessors are followed back from the last node improved; a round n + 1 that still improves proves one."""
    n = len(edges)
    dist = [0] * n
    pred: list[tuple | None] = [None] * n
    for _ in range(n + 1):
        changed = None
        for u in range(n):
            du = dist[u]
            for v, c, d, b in edges[u]:
                nd = du + q * c - p * d
                if nd > dist[v]:
                    dist[v] = nd
                    pred[v] = (u, v, c, d, b)
                    changed = v
        if changed is None:
            return None
        seen: dict[int, int] = {}
        v = changed
        while v is not None and v not in seen:
            seen[v] = len(seen)
            step = pred[v]
            v = step[0] if step is not None else None
        if v is not None:  # a cycle through v
            cycle = []
            u = v
            while True:
                step = pred[u]
                cycle.append(step)
                u = step[0]
                if u == v:
                    return cycle[::-1]
    raise AssertionError("Bellman-Ford improved in round n + 1 without a cycle of predecessors")


def _max_ratio_cycle(edges) -> tuple[Fraction | None, list]:
    """(the maximum of sum c / sum d over cycles, one cycle reaching it) by Dinkelbach's iteration; (None, a
    cycle with sum d = 0 < sum c) when there is one; (0, []) when every cycle costs P nothing."""
    p, q = 0, 1
    best: list = []
    for _ in range(sum(map(len, edges)) ** 2 + 2):  # lambda grows strictly: at most (distinct ratios) rounds
        cycle = _positive_cycle(edges, p, q)
        if cycle is None:
            return Fraction(p, q), best
        c = sum(step[2] for step in cycle)
        d = sum(step[3] for step in cycle)
        if d == 0:
            return None, cycle
        ratio = Fraction(c, d)
        p, q = ratio.numerator, ratio.denominator
        best = cycle
    raise AssertionError("Dinkelbach's iteration did not end within its bound")
