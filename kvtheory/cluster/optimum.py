"""The offline makespan model of docs/cluster.md §Offline makespan for a workload on a cluster: optimum,
bounds, router ratios.

Offline objective (the paper's): every query is known up front; a routing sends q_j to a worker, each
worker serves its queries in workload order, P_i = sum_{j -> i} Cost_ij, and the makespan is max_i P_i.
The optimum minimises it over routings and evictions together.

* :func:`joint_optimum` solves the joint routing + eviction MIP (``kvtheory.cluster.joint_mip``) and reports
  its status and gap honestly: only a solver-proved optimum is called ``optimal``.
* :func:`exhaustive_optimum` is an independent exact method for tiny instances: for a fixed routing
  each worker's P_i is minimised by FIF (a_cached <= a_miss, and FIF is the single-worker optimum), so
  the optimum is min over partitions of the queries of max_i P_i(FIF); a dynamic program over subsets
  (3^n per worker) finds it.
* :func:`lower_bounds` gives the LP relaxation, total best-case work / M and the largest query, for
  instances too large to solve.
* :func:`offline_makespan` runs a router in the offline model: the time-based simulation with every
  query arriving at 0 (so the router sees no completion while routing), where worker i's busy time
  is its P_i under the online eviction policy; :func:`routing_ratio` divides it by the optimum or, when
  the instance is too large, by the best lower bound (then the ratio is an upper bound on the true one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.simulation import ClusterResult, check_budgets, output_lengths, simulate
from kvtheory.errors import InputError
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import FurthestInFuture

#: joint MIPs larger than this many queries are not attempted by ``routing_ratio(method="auto")``
AUTO_MIP_QUERIES = 12
#: the exhaustive method's limit (3^n states per worker)
EXHAUSTIVE_QUERIES = 12


def mip_arguments(workload: Workload, cluster: Cluster, output_len: int | None = None) -> dict:
    """Keyword arguments of ``solve_joint_mip`` / ``makespan_lower_bounds`` for this cluster."""
    outputs = output_lengths(workload, output_len)
    lengths = [q.length for q in workload]
    return {
        "budgets": cluster.budgets,
        "a_miss": [w.a_miss for w in cluster.workers],
        "a_cached": [w.a_cached for w in cluster.workers],
        "output_time": [[w.output_time(L, o) for L, o in zip(lengths, outputs)] for w in cluster.workers],
    }


def joint_optimum(
    workload: Workload,
    cluster: Cluster,
    *,
    output_len: int | None = None,
    solver: str = "cbc",
    time_limit: float | None = None,
    formulation: str = "edge",
):
    """The joint routing + eviction MIP (``kvtheory.cluster.joint_mip.solve_joint_mip``): a ``JointResult``
    with status, makespan (exact, of the incumbent routing with FIF), bound, gap, routing, lower_bounds."""
    from kvtheory.cluster.joint_mip import solve_joint_mip

    check_budgets(workload, cluster)
    args = mip_arguments(workload, cluster, output_len)
    budgets = args.pop("budgets")
    return solve_joint_mip(workload, budgets, solver=solver, time_limit=time_limit, formulation=formulation, **args)


def lower_bounds(
    workload: Workload,
    cluster: Cluster,
    *,
    output_len: int | None = None,
    lp: bool = False,
    solver: str = "cbc",
    formulation: str = "edge",
) -> dict:
    """``work_over_m``, ``largest_query`` and (with ``lp``) ``lp_relaxation`` lower bounds on the optimum."""
    from kvtheory.cluster.joint_mip import makespan_lower_bounds

    check_budgets(workload, cluster)
    args = mip_arguments(workload, cluster, output_len)
    budgets = args.pop("budgets")
    return makespan_lower_bounds(workload, budgets, lp=lp, solver=solver, formulation=formulation, **args)


def best_lower_bound(bounds: Mapping[str, float | None]) -> float:
    return max(v for v in bounds.values() if v is not None)


@dataclass(frozen=True)
class Exhaustive:
    makespan: float
    routing: list[int]
    loads: list[float]


def subset_loads(workload: Workload, cluster: Cluster, worker: int, output_len: int | None = None) -> list[float]:
    """P(S) for every subset S of the queries (bit j = query j) on ``worker`` with FIF eviction."""
    n = len(workload)
    spec = cluster[worker]
    trie = workload.trie
    outputs = output_lengths(workload, output_len)
    base = [spec.a_miss * q.length + spec.output_time(q.length, o) for q, o in zip(workload, outputs)]
    saving = spec.a_miss - spec.a_cached
    fits = [q.length <= spec.budget for q in workload]
    loads = [0.0] * (1 << n)
    for mask in range(1, 1 << n):
        members = [j for j in range(n) if mask >> j & 1]
        if not all(fits[j] for j in members):
            loads[mask] = math.inf
            continue
        total = sum(base[j] for j in members)
        if saving > 0 and len(members) > 1:
            fif = FurthestInFuture(trie, spec.budget, [[j] for j in members])
            hits = sum(fif.serve([j])[0] for j in members)
            total -= saving * hits
        loads[mask] = total
    return loads


def exhaustive_optimum(workload: Workload, cluster: Cluster, *, output_len: int | None = None) -> Exhaustive:
    """Exact joint optimum of a tiny instance by a DP over subsets with FIF per worker (n <= 12)."""
    n, m = len(workload), len(cluster)
    if n > EXHAUSTIVE_QUERIES:
        raise InputError(f"the exhaustive optimum handles at most {EXHAUSTIVE_QUERIES} queries, got {n}")
    check_budgets(workload, cluster)
    cache: dict = {}
    per_worker = []
    for i in range(m):
        key = cluster[i]
        if key not in cache:
            cache[key] = subset_loads(workload, cluster, i, output_len)
        per_worker.append(cache[key])
    full = (1 << n) - 1
    best = list(per_worker[0])
    choice: list[list[int]] = [[mask for mask in range(1 << n)]]
    for i in range(1, m):
        loads = per_worker[i]
        new = [0.0] * (1 << n)
        pick = [0] * (1 << n)
        for mask in range(1 << n):
            value, arg = best[mask], 0  # worker i takes nothing
            sub = mask
            while sub:
                candidate = max(best[mask ^ sub], loads[sub])
                if candidate < value:
                    value, arg = candidate, sub
                sub = (sub - 1) & mask
            new[mask], pick[mask] = value, arg
        best = new
        choice.append(pick)
    routing = [0] * n
    mask = full
    for i in range(m - 1, 0, -1):
        taken = choice[i][mask]
        for j in range(n):
            if taken >> j & 1:
                routing[j] = i
        mask ^= taken
    loads = [per_worker[i][sum(1 << j for j in range(n) if routing[j] == i)] for i in range(m)]
    return Exhaustive(best[full], routing, loads)


def offline_makespan(
    workload: Workload,
    cluster: Cluster,
    router: str,
    eviction: str,
    *,
    seed: int | None = 0,
    output_len: int | None = None,
    router_options: Mapping[str, object] | None = None,
    oracle: bool = False,
    evict_amount: str = "shortfall",
) -> ClusterResult:
    """The router in the offline model: every query arrives at 0; ``result.max_busy`` is max_i P_i."""
    return simulate(
        workload,
        cluster,
        router,
        eviction,
        seed=seed,
        rate=math.inf,
        output_len=output_len,
        router_options=router_options,
        oracle=oracle,
        evict_amount=evict_amount,
    )


@dataclass(frozen=True)
class RoutingRatio:
    """A router's offline makespan over the joint optimum (``reference_kind='optimum'``) or over the
    best lower bound (``'lower_bound'``: then ``ratio`` is an upper bound on the true ratio)."""

    router: str
    eviction: str
    evict_amount: str
    workers: int
    queries: int
    seed: int | None
    makespan: float
    reference: float
    reference_kind: str
    ratio: float
    method: str
    status: str | None
    gap: float | None
    optimum_makespan: float | None
    lower_bounds: dict
    per_worker_load: list[float]

    def to_dict(self) -> dict:
        return asdict(self)


def routing_ratio(
    workload: Workload,
    cluster: Cluster,
    router: str,
    eviction: str,
    *,
    seed: int | None = 0,
    output_len: int | None = None,
    router_options: Mapping[str, object] | None = None,
    oracle: bool = False,
    method: str = "auto",
    solver: str = "cbc",
    time_limit: float | None = 60.0,
    formulation: str = "edge",
    lp: bool | None = None,
    evict_amount: str = "shortfall",
) -> RoutingRatio:
    """Makespan of ``router`` (with ``eviction`` online, evicting ``evict_amount`` on every worker) over the
    joint optimum or a lower bound.

    ``method``: ``mip`` (the joint MIP under ``time_limit``: if it proves optimality the reference is the
    optimum, otherwise the best of its bound and the lower bounds), ``exhaustive`` (exact, tiny
    instances), ``bounds`` (lower bounds only; the LP relaxation when ``lp``, by default only up to
    ``AUTO_MIP_QUERIES`` queries), ``auto`` (``mip`` up to ``AUTO_MIP_QUERIES`` queries, else ``bounds``).
    """
    if method not in ("auto", "mip", "exhaustive", "bounds"):
        raise InputError(f"unknown method {method!r}; choose auto, mip, exhaustive or bounds")
    n = len(workload)
    if method == "auto":
        method = "mip" if n <= AUTO_MIP_QUERIES else "bounds"
    run = offline_makespan(
        workload,
        cluster,
        router,
        eviction,
        seed=seed,
        output_len=output_len,
        router_options=router_options,
        oracle=oracle,
        evict_amount=evict_amount,
    )
    makespan = run.max_busy
    status = gap = optimum = None
    if method == "mip":
        result = joint_optimum(
            workload, cluster, output_len=output_len, solver=solver, time_limit=time_limit, formulation=formulation
        )
        bounds = dict(result.lower_bounds)
        status, gap = result.status, result.gap
        if result.bound is not None:
            bounds["mip_bound"] = result.bound
        if result.status == "optimal":
            optimum = result.makespan
    elif method == "exhaustive":
        exact = exhaustive_optimum(workload, cluster, output_len=output_len)
        optimum, status, gap = exact.makespan, "optimal", 0.0
        bounds = lower_bounds(workload, cluster, output_len=output_len)
    else:
        use_lp = (n <= AUTO_MIP_QUERIES) if lp is None else lp
        bounds = lower_bounds(
            workload, cluster, output_len=output_len, lp=use_lp, solver=solver, formulation=formulation
        )
    if optimum is not None:
        reference, kind = optimum, "optimum"
    else:
        reference, kind = best_lower_bound(bounds), "lower_bound"
    ratio = makespan / reference if reference > 0 else (1.0 if makespan == 0 else math.inf)
    return RoutingRatio(
        router=run.router,
        eviction=run.eviction,
        evict_amount=run.evict_amount,
        workers=len(cluster),
        queries=n,
        seed=seed,
        makespan=makespan,
        reference=reference,
        reference_kind=kind,
        ratio=ratio,
        method=method,
        status=status,
        gap=gap,
        optimum_makespan=optimum,
        lower_bounds=bounds,
        per_worker_load=run.busy.tolist(),
    )


#: the LP relaxation of the joint model is attempted up to this many queries by ``optimum_or_bounds``
AUTO_LP_QUERIES = 64


def optimum_or_bounds(
    workload: Workload,
    cluster: Cluster,
    *,
    output_len: int | None = None,
    solver: str = "cbc",
    time_limit: float | None = None,
    formulation: str = "edge",
    method: str = "auto",
    lp: bool | None = None,
) -> dict:
    """What ``kvtheory opt --workers M`` prints.

    ``method``: ``mip`` runs the joint MIP (within ``time_limit`` if given); ``bounds`` gives only the
    lower bounds (with the LP relaxation by default up to ``AUTO_LP_QUERIES`` queries); ``auto`` runs the
    MIP when a time limit is given or the instance has at most ``AUTO_MIP_QUERIES`` queries, else the
    bounds. ``status`` is ``optimal`` only when the solver proves it, ``bounds_only`` when no MIP ran
    (``makespan`` is then None and ``reason`` says why).
    """
    if method not in ("auto", "mip", "bounds"):
        raise InputError(f"unknown method {method!r}; choose auto, mip or bounds")
    n = len(workload)
    record: dict = {"workers": len(cluster), "queries": n, "tokens": workload.total_tokens, "budgets": cluster.budgets}
    if method == "mip" or (method == "auto" and (time_limit is not None or n <= AUTO_MIP_QUERIES)):
        result = joint_optimum(
            workload, cluster, output_len=output_len, solver=solver, time_limit=time_limit, formulation=formulation
        )
        record.update(result.to_dict())
        record["best_lower_bound"] = best_lower_bound({**result.lower_bounds, "mip_bound": result.bound})
        return record
    if method == "bounds":
        reason = "asked for bounds only"
    else:
        reason = (
            f"{n} queries, more than {AUTO_MIP_QUERIES}, and no time limit: the joint MIP was not attempted "
            "(give a time limit, or method mip, to run it)"
        )
    use_lp = n <= AUTO_LP_QUERIES if lp is None else lp
    bounds = lower_bounds(workload, cluster, output_len=output_len, lp=use_lp, solver=solver, formulation=formulation)
    record.update(
        solver=solver,
        formulation=formulation,
        status="bounds_only",
        reason=reason,
        makespan=None,
        bound=best_lower_bound(bounds),
        gap=None,
        routing=None,
        lower_bounds=bounds,
        best_lower_bound=best_lower_bound(bounds),
    )
    return record
