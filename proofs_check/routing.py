"""The offline makespan model of docs/cluster.md §Offline makespan, small and exact, for claims 8 and 9.

Every query is known up front and routed in workload order; worker i serves its queries in that order
with its own eviction policy (L-LRU by default), q_j costs Cost_ij = a_cached*h_ij + a_miss*(|q_j| - h_ij)
+ O_j, P_i is the sum of its costs and the makespan is max_i P_i. Costs are exact (integers when the
coefficients are), so a bound is compared without tolerance.

Routers: the issue-6 routers of :mod:`kvtheory.cluster.routers` are used when that package imports
(``least-load`` with load = predicted work, ``round-robin``, ``cache-aware`` with balancing off and
threshold 0 for pure cache affinity), driven offline (every query dispatched at time 0, none finishing
while routing). Without it, small stand-ins with the same rules are used; ``router_backend()`` says which.
A router may also be any callable ``f(j, state) -> worker`` (``state`` is a :class:`RoutingState`), which
is how tests pass deliberately wrong ones.

Optimum: :func:`exact_optimum` enumerates every routing up to relabelling identical workers (restricted
growth strings) and scores each with FIF on every worker (for a fixed routing each P_i is minimised by the
fewest misses, a_cached <= a_miss, and FIF is the single-worker optimum: claim 1), memoised per subset
of queries. Exponential: meant for n <= 8 or so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import run_fif
from kvtheory.policies import policy_class
from proofs_check.instance import Instance


@dataclass
class RoutingState:
    """What a stand-in router sees: M, the loads so far and what was routed where."""

    instance: Instance
    m: int
    loads: list = field(default_factory=list)  # actual P_i so far
    predicted: list = field(default_factory=list)  # sum of a_miss*|q|+O routed to i
    routed: list = field(default_factory=list)  # query indices per worker

    def match(self, i: int, j: int) -> int:
        """Longest prefix of q_j shared with a query already routed to worker i (the router's own tree)."""
        trie = self.instance.workload.trie
        mine = {v for jj in self.routed[i] for v in trie.path(jj)}
        return max((trie.depth[v] for v in trie.path(j) if v in mine), default=0)


def _argmin(values) -> int:
    return min(range(len(values)), key=lambda i: (values[i], i))


def least_load(j: int, state: RoutingState) -> int:
    """Greedy list scheduling on predicted work a_miss*|q|+O (ties: lowest index)."""
    return _argmin(state.predicted)


def round_robin(j: int, state: RoutingState) -> int:
    return sum(len(r) for r in state.routed) % state.m


def affinity(j: int, state: RoutingState) -> int:
    """Pure cache affinity: the worker whose routed queries share the longest prefix.

    Ties: fewer queries routed, then the lower index.
    """
    matches = [state.match(i, j) for i in range(state.m)]
    best = max(matches)
    return min((i for i in range(state.m) if matches[i] == best), key=lambda i: (len(state.routed[i]), i))


STAND_INS = {"least-load": least_load, "round-robin": round_robin, "affinity": affinity}
#: issue-6 router name and options for each router name used by the claims
ISSUE6 = {
    "least-load": ("least-load", {"load": "work"}),
    "round-robin": ("round-robin", {}),
    "affinity": ("cache-aware", {"balance_abs": float("inf"), "cache_threshold": 0.0}),
}


def router_backend() -> str:
    try:
        import kvtheory.cluster.routers  # noqa: F401
        from kvtheory.cluster.cluster import Cluster  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means: use the stand-ins
        return "stand-in"
    return "kvtheory.cluster"


def _issue6_router(name: str, instance: Instance):
    from kvtheory.cluster.cluster import Cluster
    from kvtheory.cluster.routers import RouterView, router_class

    router_name, options = ISSUE6[name]
    cluster = Cluster.uniform(
        instance.workers,
        instance.budget,
        a_miss=float(instance.a_miss),
        a_cached=float(instance.a_cached),
        decode_base=float(instance.a_out),
    )
    outputs = [q.output_len or 0 for q in instance.workload]
    router = router_class(router_name)(RouterView(instance.workload, cluster, outputs), seed=0, options=options)
    return lambda j, state: router.dispatch(j, 0.0)


@dataclass(frozen=True)
class RoutingRun:
    router: str
    routing: tuple[int, ...]
    loads: tuple
    makespan: object


def route(
    instance: Instance, router: str | Callable = "least-load", eviction: str = "lru", backend: str | None = None
) -> RoutingRun:
    """Route ``instance`` online, serve each worker with ``eviction``, return the loads and the makespan."""
    m = instance.workers
    if callable(router):
        choose, label = router, getattr(router, "__name__", "custom")
    else:
        backend = backend or router_backend()
        choose = _issue6_router(router, instance) if backend == "kvtheory.cluster" else STAND_INS[router]
        label = router
    trie = instance.workload.trie
    cls = policy_class(eviction)
    caches = [cls(trie, instance.budget, seed=i) for i in range(m)]
    state = RoutingState(instance, m, [0] * m, [0] * m, [[] for _ in range(m)])
    routing = []
    for j, query in enumerate(instance.workload):
        i = int(choose(j, state))
        if not 0 <= i < m:
            raise RuntimeError(f"router {label} chose worker {i} of {m}")
        (hits,) = caches[i].serve([j])
        state.loads[i] += instance.a_cached * hits + instance.a_miss * (query.length - hits) + instance.output_time(j)
        state.predicted[i] += instance.full_cost(j)
        state.routed[i].append(j)
        routing.append(i)
    return RoutingRun(label, tuple(routing), tuple(state.loads), max(state.loads))


def _subset(workload: Workload, indices: Sequence[int]) -> Workload:
    return Workload(tuple(workload[j] for j in indices))


def block_cost(instance: Instance, indices: Sequence[int]):
    """P_i of one worker serving ``indices`` (in order) with FIF: the least it can cost."""
    if not indices:
        return 0
    run = run_fif(_subset(instance.workload, indices), instance.budget)
    output = sum(instance.output_time(j) for j in indices)
    return instance.a_cached * run.hits + instance.a_miss * run.misses + output


def routing_makespan(instance: Instance, routing: Sequence[int]):
    """max_i P_i of a fixed routing with FIF on every worker (an upper bound on the optimum)."""
    blocks: dict[int, list[int]] = {}
    for j, i in enumerate(routing):
        blocks.setdefault(i, []).append(j)
    return max(block_cost(instance, b) for b in blocks.values())


def _growth_strings(n: int, m: int):
    """Every routing of n queries to m identical workers up to relabelling: a[0] = 0, a[j] <= max(a[:j]) + 1."""
    routing = [0] * n

    def extend(j: int, top: int):
        if j == n:
            yield tuple(routing)
            return
        for i in range(min(top + 2, m)):
            routing[j] = i
            yield from extend(j + 1, max(top, i))

    if n:
        yield from extend(1, 0)


def exact_optimum(instance: Instance) -> tuple[object, tuple[int, ...]]:
    """(optimal makespan, an optimal routing) by enumeration; exact for identical workers."""
    n, m = len(instance.workload), instance.workers
    memo: dict[int, object] = {}
    best, best_routing = None, None
    for routing in _growth_strings(n, m):
        masks = [0] * m
        for j, i in enumerate(routing):
            masks[i] |= 1 << j
        value = 0
        for mask in masks:
            if mask:
                if mask not in memo:
                    memo[mask] = block_cost(instance, [j for j in range(n) if (mask >> j) & 1])
                value = max(value, memo[mask])
                if best is not None and value >= best:
                    break
        if best is None or value < best:
            best, best_routing = value, routing
    return best, best_routing


def hit_benefit(instance: Instance):
    """rho = max_j (a_miss*|q_j| + O_j) / (a_cached*|q_j| + O_j): how much a full hit can shrink a query."""
    from sympy import Rational, nsimplify

    def exact(x):
        return Rational(x) if isinstance(x, int) else nsimplify(x)

    from sympy import oo

    ratios = []
    for j in range(len(instance.workload)):
        best, full = exact(instance.best_cost(j)), exact(instance.full_cost(j))
        ratios.append(oo if best == 0 and full > 0 else 1 if best == 0 else full / best)
    return max(ratios)
