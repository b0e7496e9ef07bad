"""The offline makespan model of docs/cluster.md §Offline makespan, small and exact, for claims 8 and 9.

Every query is known up front and routed in workload order; worker i serves its queries in that order
with its own eviction policy (L-LRU by default), q_j costs Cost_ij = a_cached*h_ij + a_miss*(|q_j| - h_ij)
+ O_j, P_i is the sum of its costs and the makespan is max_i P_i. Costs are exact (integers when the
coefficients are), so a bound is compared without tolerance.

Routers: those of :mod:`kvtheory.cluster.routers` under the names the claims use (``least-load`` with load
= predicted work, ``round-robin``, and ``affinity``: ``cache-aware`` with balancing off and threshold 0),
driven offline (every query dispatched at time 0, none finishing while routing). A router may also be any
callable ``f(j, state) -> worker`` (``state`` is a :class:`RoutingState`), which is how tests pass
deliberately wrong ones.

Optimum: the exhaustive joint optimum of :func:`kvtheory.cluster.optimum.exhaustive_optimum` (a dynamic
program over subsets of queries with FIF on each worker), on the instance's identical workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kvtheory.cluster.cluster import Cluster
from kvtheory.policies import policy_class
from proofs_check.instance import Instance

#: the cluster router and its options for each router name the claims use
ROUTERS = {
    "least-load": ("least-load", {"load": "work"}),
    "round-robin": ("round-robin", {}),
    "affinity": ("cache-aware", {"balance_abs": float("inf"), "cache_threshold": 0.0}),
}


@dataclass
class RoutingState:
    """What a router given as a function sees: M, the loads so far and what was routed where."""

    instance: Instance
    m: int
    loads: list = field(default_factory=list)  # actual P_i so far
    predicted: list = field(default_factory=list)  # sum of a_miss*|q|+O routed to i
    routed: list = field(default_factory=list)  # query indices per worker


def instance_cluster(instance: Instance) -> Cluster:
    """The instance's M identical workers: budget B, a_miss, a_cached, a_out per output token."""
    return Cluster.uniform(
        instance.workers,
        instance.budget,
        a_miss=float(instance.a_miss),
        a_cached=float(instance.a_cached),
        decode_base=float(instance.a_out),
    )


def _cluster_router(name: str, instance: Instance):
    from kvtheory.cluster.routers import RouterView, router_class

    router_name, options = ROUTERS[name]
    outputs = [q.output_len or 0 for q in instance.workload]
    view = RouterView(instance.workload, instance_cluster(instance), outputs)
    router = router_class(router_name)(view, seed=0, options=options)
    return lambda j, state: router.dispatch(j, 0.0)


@dataclass(frozen=True)
class RoutingRun:
    router: str
    routing: tuple[int, ...]
    loads: tuple
    makespan: object


def route(instance: Instance, router: str | Callable = "least-load", eviction: str = "lru") -> RoutingRun:
    """Route ``instance`` online, serve each worker with ``eviction``, return the loads and the makespan."""
    m = instance.workers
    if callable(router):
        choose, label = router, getattr(router, "__name__", "custom")
    else:
        choose, label = _cluster_router(router, instance), router
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


def exact_optimum(instance: Instance) -> tuple[object, tuple[int, ...]]:
    """(optimal makespan, an optimal routing): the exhaustive joint optimum of the instance's cluster."""
    from kvtheory.cluster.optimum import exhaustive_optimum

    best = exhaustive_optimum(instance.workload, instance_cluster(instance))
    return best.makespan, tuple(best.routing)


def routing_makespan(instance: Instance, routing) -> object:
    """max_i P_i of a fixed routing with FIF on every worker (an upper bound on the optimum)."""
    from kvtheory.cluster.joint_mip import routing_makespan as makespan_of
    from kvtheory.cluster.optimum import mip_arguments

    arguments = mip_arguments(instance.workload, instance_cluster(instance))
    return makespan_of(instance.workload, routing, **arguments)


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
