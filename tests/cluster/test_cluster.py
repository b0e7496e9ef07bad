"""Several workers (docs/cluster.md): routers, the time-based simulation, the joint optimum, claims 8 and 9."""

from __future__ import annotations

import math
import re

import numpy as np
import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import (
    BATCHED_BOUNDARIES,
    EQUAL_QUERIES_IN_BATCHES,
    EQUAL_TRIPLE_AND_SHORT_LAST_BATCH,
    EXAMPLE_DEADLINE,
    SHARED_BATCHES_AT_BUDGET,
    instances,
    token_lists,
)

from kvtheory import Workload, run_policy, write_workload
from kvtheory.cli import main
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.optimum import (
    exhaustive_optimum,
    joint_optimum,
    lower_bounds,
    offline_makespan,
    routing_ratio,
)
from kvtheory.cluster.routers import ROUTERS, RouterView, router_class
from kvtheory.cluster.routers.approx_tree import ApproxTrees
from kvtheory.cluster.simulation import simulate
from kvtheory.errors import InputError
from kvtheory.model.query import Query
from kvtheory.policies import ONLINE_POLICIES
from kvtheory.workloads import generate

PAPER_ROUTERS = (
    "round-robin",
    "random",
    "least-load",
    "cache-aware",
    "lbgr",
    "lbgr-calibrated",
    "lbgr-full",
    "cache-aware-adaptive",
)
LIGHT = settings(max_examples=40, deadline=EXAMPLE_DEADLINE)  # simulations of tiny instances, pure Python
MIP = settings(max_examples=25, deadline=None)


def small_gsp(seed=0, **params):
    base = {"groups": 6, "prompts": 5, "lengths": [40, 80, 120], "rate": 20.0, "output_len": 3}
    return generate("gsp", {**base, **params}, seed=seed)


def l40_like(m: int, budget: int = 2000) -> Cluster:
    return Cluster(tuple(Worker(1.8e-4, 1.5e-7, budget, 0.0186, 1.5e-7) for _ in range(m)))


def with_arrivals(workload: Workload, times) -> Workload:
    return Workload(tuple(Query(q.tokens, float(t), q.output_len) for q, t in zip(workload, times)))


# -- routers ------------------------------------------------------------------------------------------


def test_every_router_of_the_issue_is_registered():
    assert set(PAPER_ROUTERS) <= set(ROUTERS)
    with pytest.raises(InputError, match="known routers"):
        router_class("nope")


def test_router_options_are_typed_and_checked():
    w = small_gsp()
    with pytest.raises(InputError, match="no option"):
        simulate(w, l40_like(2), "cache-aware", "lru", router_options={"threshold": "1"})
    with pytest.raises(InputError, match="not a valid"):
        simulate(w, l40_like(2), "cache-aware", "lru", router_options={"cache_threshold": "high"})
    with pytest.raises(InputError, match="no oracle"):
        simulate(w, l40_like(2), "round-robin", "lru", oracle=True)
    run = simulate(w, l40_like(2), "lbgr-calibrated", "lru", router_options={"rho": "0.5", "learn": "none"})
    assert run.router_state["updates"] == 0


def test_routers_do_not_see_true_caches_without_the_oracle_switch():
    w = small_gsp()
    view = RouterView(w, l40_like(2), [0] * len(w))
    with pytest.raises(RuntimeError):
        view.true_cached(0, 0)
    with pytest.raises(RuntimeError):
        view.true_backlog(0, 0.0)
    for name in PAPER_ROUTERS:  # a non-oracle run never asks (it would raise)
        simulate(w, l40_like(3), name, "lru", seed=1)
    for name in ("least-load", "cache-aware", "lbgr", "lbgr-calibrated", "cache-aware-adaptive"):
        simulate(w, l40_like(3), name, "rlt", seed=1, oracle=True)


@LIGHT
@given(token_lists(max_queries=12, max_length=6, alphabet=3), st.lists(st.integers(0, 2), min_size=12, max_size=12))
@example(tokens=[[1, 2], [1, 2], [1, 2], [1]], targets=[0, 1, 2, 0] + [0] * 8)  # equal matches everywhere
@example(tokens=[[1, 2, 3], [1, 2], [1]], targets=[2] * 12)  # later queries are prefixes: no new tokens
def test_approximate_trees_match_the_longest_prefix_sent_to_each_worker(tokens, targets):
    w = Workload.from_token_lists(tokens)
    trees = ApproxTrees(w.trie, 3)
    sent: list[list[list[int]]] = [[], [], []]
    for j, q in enumerate(tokens):
        expected = [max((_lcp(q, p) for p in sent[i]), default=0) for i in range(3)]
        assert trees.match_all(j) == expected
        i = targets[j]
        trees.insert(i, j)
        sent[i].append(q)
        assert trees.size[i] == len({tuple(p[:k]) for p in sent[i] for k in range(1, len(p) + 1)})


def _lcp(a, b) -> int:
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


def test_bounded_approximate_trees_stay_within_their_size():
    w = small_gsp()
    trees = ApproxTrees(w.trie, 2, max_tokens=300)
    for j in range(len(w)):
        trees.insert(j % 2, j)
        assert max(trees.size) <= max(300, max(q.length for q in w))


def _cache_aware(loads, sizes, matched, length=10, **opts):
    w = Workload.from_token_lists([[1] * length])
    router = router_class("cache-aware")(RouterView(w, Cluster.uniform(len(loads), 100), [0]), options=opts)
    router.in_flight = list(loads)
    router.trees.size = list(sizes)
    router.trees.match_all = lambda j: list(matched)
    return router.choose(0, 0.0)


def test_cache_aware_follows_sglang_rules():
    # imbalance above both thresholds: least loaded, whatever the matches
    assert _cache_aware([40, 5, 3], [0, 0, 0], [10, 0, 0]) == 2
    # abs threshold not exceeded: best match when its rate > cache_threshold
    assert _cache_aware([30, 5, 3], [0, 0, 0], [6, 0, 0]) == 0
    # rate exactly at the threshold is not above it: smallest tree
    assert _cache_aware([3, 5, 3], [9, 4, 7], [5, 0, 0]) == 1
    # relative threshold: max_load must exceed balance_rel * min_load too
    assert _cache_aware([40, 5, 3], [0, 0, 0], [10, 0, 0], balance_rel=20.0) == 0
    # SGLang's current defaults
    assert _cache_aware([3, 5, 3], [9, 4, 7], [4, 0, 0], cache_threshold=0.3) == 0


# -- the simulation -----------------------------------------------------------------------------------


@LIGHT
@given(
    instances(max_queries=12, max_length=6, max_batch=3), st.sampled_from(sorted(ONLINE_POLICIES)), st.integers(0, 9)
)
# batches whose footprint equals the budget exactly must be served whole, as run_policy serves them
@example(instance=(Workload.from_token_lists([[1, 2, 3], [1, 2, 4, 5]]), 5, 2), policy="lru", seed=0)
@example(instance=EQUAL_QUERIES_IN_BATCHES, policy="token-lru", seed=0)
@example(instance=SHARED_BATCHES_AT_BUDGET, policy="rlt", seed=3)
@example(instance=EQUAL_TRIPLE_AND_SHORT_LAST_BATCH, policy="lfu", seed=0)
@example(instance=BATCHED_BOUNDARIES[1], policy="fifo", seed=0)
@example(instance=(Workload.from_token_lists([[0], [0]]), 1, 2), policy="vllm", seed=0)  # refused by both
def test_one_worker_reproduces_run_policy_hits_exactly(instance, policy, seed):
    workload, budget, batch = instance
    cluster = Cluster.uniform(1, budget, a_miss=1.0, a_cached=0.1, decode_base=0.5)
    try:
        expected = run_policy(workload, budget, policy, batch=batch, seed=seed).query_hits
    except InputError as refused:  # vllm's own fit rule (a block per query's last token) may refuse a batch
        with pytest.raises(InputError, match=re.escape(str(refused))):  # and then the cluster refuses it alike
            simulate(workload, cluster, "round-robin", policy, batch=batch, seed=seed, rate=math.inf)
        return
    # every query at 0: batches are consecutive groups of beta, as in run_policy
    run = simulate(workload, cluster, "round-robin", policy, batch=batch, seed=seed, rate=math.inf)
    assert run.hits.tolist() == expected.tolist()
    if batch == 1:  # batch 1: any arrivals, the worker serves in arrival order
        run = simulate(workload, cluster, "least-load", policy, seed=seed, rate=3.0)
        assert run.hits.tolist() == expected.tolist()


def test_single_worker_route_command_reproduces_evict(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    write_workload(generate("gsp", {"groups": 12, "prompts": 6, "lengths": [2048, 4096, 8192]}, seed=3), path)
    for policy in ("lru", "rlt"):
        assert main(["costmodel", "--gpu", "L40", "--model", "Llama-3.1-8B", "--mem-fraction", "0.45", "--json"]) == 0
        budget = orjson.loads(capsys.readouterr().out)["budget"]
        assert (
            main(
                ["evict", "--workload", str(path), "--budget", str(budget), "--policy", policy, "--seed", "4", "--json"]
            )
            == 0
        )
        evict = orjson.loads(capsys.readouterr().out)
        argv = [
            "route",
            "--workload",
            str(path),
            "--workers",
            "1",
            "--router",
            "lbgr",
            "--eviction",
            policy,
            "--gpu",
            "L40",
            "--model",
            "Llama-3.1-8B",
            "--mem-fraction",
            "0.45",
            "--seed",
            "4",
            "--json",
        ]
        assert main(argv) == 0
        route = orjson.loads(capsys.readouterr().out)
        assert route["hits"] == evict["hits"] > 0 and route["hit_rate"] == evict["hit_rate"]


@LIGHT
@given(st.integers(0, 10_000), st.sampled_from(PAPER_ROUTERS), st.sampled_from(["lru", "rlt"]), st.integers(1, 3))
def test_busy_time_is_the_sum_of_service_times(seed, router, eviction, batch):
    w = small_gsp(seed=seed % 7)
    cluster = l40_like(3, budget=600)
    run = simulate(w, cluster, router, eviction, seed=seed, batch=batch)
    for i in range(3):
        assert run.busy[i] == pytest.approx(sum(run.service[i]), rel=1e-12)
        mine = np.flatnonzero(run.worker == i)
        if batch == 1:  # each service time is Cost_ij = a_cached h + a_miss (L - h) + O_ij
            costs = [cluster[i].cost(int(run.length[j]), int(run.hits[j]), int(run.output_len[j])) for j in mine]
            assert run.busy[i] == pytest.approx(sum(costs), rel=1e-9)
            assert np.allclose(run.finish[mine] - run.start[mine], costs)
        # the worker never serves two batches at once, and serves its queue in arrival order
        order = mine[np.lexsort((mine, run.arrival[mine]))]
        assert np.all(np.diff(run.start[order]) >= 0)
        starts = np.unique(run.start[mine])
        ends = np.array([run.finish[mine][run.start[mine] == s].max() for s in starts])
        assert np.all(ends[:-1] <= starts[1:] + 1e-9)
    assert np.all(run.start >= run.arrival)
    assert np.all(run.arrival <= run.prefill_end) and np.all(run.prefill_end <= run.finish)
    record = run.to_dict()
    assert record["ttft_p50"] <= record["latency_p50"]
    assert sum(p["queries"] for p in record["per_worker"]) == len(w)


def test_simulation_is_deterministic_under_seed():
    w = small_gsp(seed=2)
    for router in PAPER_ROUTERS:
        a = simulate(w, l40_like(3, 500), router, "rlt", seed=11, rate=30.0).to_dict()
        b = simulate(w, l40_like(3, 500), router, "rlt", seed=11, rate=30.0).to_dict()
        assert a == b
    a = simulate(w, l40_like(3, 500), "random", "rlt", seed=1)
    b = simulate(w, l40_like(3, 500), "random", "rlt", seed=2)
    assert a.worker.tolist() != b.worker.tolist()


def test_arrivals_come_from_the_file_or_poisson_at_rate():
    w = small_gsp()
    run = simulate(w, l40_like(2), "round-robin", "lru")
    assert run.arrival.tolist() == [q.arrival for q in w]
    bare = Workload.from_token_lists([[1, 2], [1, 3]])
    with pytest.raises(InputError, match="--rate"):
        simulate(bare, l40_like(2), "round-robin", "lru")
    poisson = simulate(bare, l40_like(2), "round-robin", "lru", rate=5.0, seed=3)
    assert poisson.arrival[0] == 0.0 < poisson.arrival[1]
    with pytest.raises(InputError, match="budget"):
        simulate(w, l40_like(2, budget=50), "round-robin", "lru")


def test_route_command_prints_the_required_fields(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    write_workload(small_gsp(lengths=[1024, 2048]), path)
    argv = [
        "route",
        "--workload",
        str(path),
        "--workers",
        "4",
        "--router",
        "cache-aware",
        "--eviction",
        "rlt",
        "--gpu",
        "L40",
        "--model",
        "Llama-3.1-8B",
        "--rate",
        "12",
        "--json",
    ]
    assert main(argv) == 0
    record = orjson.loads(capsys.readouterr().out)
    for key in (
        "hit_rate",
        "latency_mean",
        "latency_p50",
        "latency_p95",
        "ttft_p50",
        "ttft_p95",
        "throughput_qps",
        "makespan",
        "per_worker",
    ):
        assert key in record
    assert {"queries", "hit_rate", "busy"} <= set(record["per_worker"][0])
    bad = argv[:-1] + ["--router", "nope"]
    assert main(bad) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(argv[:13] + ["--model", "Llama-3.1-70B", "--gpu", "H200"]) == 2
    assert "short" in capsys.readouterr().err
    assert (
        main(argv[:13] + ["--model", "Llama-3.1-8B", "--gpu", "L40,H100-SXM", "--router-opt", "cache_threshold=0.3"])
        == 0
    )


# -- the offline model and the joint optimum ----------------------------------------------------------


@st.composite
def cluster_instances(draw, max_queries=7, max_length=4, alphabet=2):
    tokens = draw(token_lists(max_queries, max_length, alphabet))
    w = Workload.from_token_lists(tokens)
    m = draw(st.integers(2, 3))
    budget = draw(st.integers(max(len(t) for t in tokens), max(len(t) for t in tokens) + 4))
    a_cached = draw(st.sampled_from([0.0, 0.25, 1.0]))
    return w, Cluster.uniform(m, budget, a_miss=1.0, a_cached=a_cached, decode_base=draw(st.sampled_from([0.0, 0.5])))


# equal queries on identical workers whose budget is the query length
EQUAL_QUERIES_CLUSTER = (
    Workload.from_token_lists([[0, 1], [0, 1], [0, 1], [0, 1]]),
    Cluster.uniform(2, 2, a_miss=1.0, a_cached=0.25, decode_base=0.5),
)


@pytest.mark.slow
@MIP
@given(cluster_instances())
@example(EQUAL_QUERIES_CLUSTER)
def test_joint_mip_equals_the_exhaustive_optimum_and_bounds_hold(instance):
    w, cluster = instance
    mip = joint_optimum(w, cluster, output_len=1)
    exact = exhaustive_optimum(w, cluster, output_len=1)
    assert mip.status == "optimal"
    assert mip.makespan == pytest.approx(exact.makespan, abs=1e-6)
    for value in mip.lower_bounds.values():
        assert value is None or value <= exact.makespan + 1e-6


@pytest.mark.slow
@MIP
@given(cluster_instances(), st.sampled_from(["lru", "rlt", "fifo"]))
@example(EQUAL_QUERIES_CLUSTER, "lru")
def test_claim_8_greedy_least_load_within_graham_bound_of_the_joint_mip(instance, eviction):
    """Claim 8: with a_cached = a_miss, greedy least-load has makespan <= (2 - 1/M) OPT."""
    w, cluster = instance
    m = len(cluster)
    nocache = Cluster.uniform(m, cluster.budgets[0], a_miss=1.0, a_cached=1.0, decode_base=cluster[0].decode_base)
    opt = joint_optimum(w, nocache, output_len=2)
    assert opt.status == "optimal"
    greedy = offline_makespan(w, nocache, "least-load", eviction, output_len=2).max_busy
    assert greedy <= (2 - 1 / m) * opt.makespan + 1e-9
    ratio = routing_ratio(w, nocache, "least-load", eviction, method="mip", output_len=2)
    assert ratio.reference_kind == "optimum" and ratio.ratio <= 2 - 1 / m + 1e-9


def test_claim_8_bound_is_tight_on_graham_instance():
    # M(M-1) unit jobs then one job of M: greedy gives 2M - 1, OPT gives M.
    m = 3
    tokens = [[10 + j] for j in range(m * (m - 1))] + [[1] * m]
    w = Workload.from_token_lists(tokens)
    cluster = Cluster.uniform(m, m, a_miss=1.0, a_cached=1.0)
    greedy = offline_makespan(w, cluster, "least-load", "lru").max_busy
    opt = joint_optimum(w, cluster)
    assert opt.status == "optimal" and opt.makespan == pytest.approx(m)
    assert greedy == pytest.approx(2 * m - 1) and greedy / opt.makespan == pytest.approx(2 - 1 / m)


def test_lbgr_calibrated_degenerates_to_least_load_without_caching_benefit():
    w = small_gsp(seed=5)
    cluster = Cluster.uniform(3, 400, a_miss=1e-3, a_cached=1e-3, decode_base=0.01)
    # offline model (every query at 0): no completion is seen while routing, so no learning, no decay
    lbgr = offline_makespan(w, cluster, "lbgr-calibrated", "lru")
    least = offline_makespan(w, cluster, "least-load", "lru")
    assert lbgr.worker.tolist() == least.worker.tolist() and lbgr.max_busy == least.max_busy
    # time-based: the same once LBGR's decay and residual are off (rho = 1, learn = none)
    options = {"rho": 1.0, "learn": "none"}
    for rate in (5.0, 50.0):
        a = simulate(w, cluster, "lbgr-calibrated", "rlt", seed=1, rate=rate, router_options=options)
        b = simulate(w, cluster, "least-load", "rlt", seed=1, rate=rate)
        assert a.worker.tolist() == b.worker.tolist()


@given(token_lists(max_queries=12, max_length=5, alphabet=3), st.integers(2, 4))
@example([[1, 2]] * 6, 3)  # equal loads at every step: the ties decide every routing
@example([[1], [2], [3], [4]], 4)
@LIGHT
def test_lbgr_calibrated_degenerates_to_least_load_on_random_instances(tokens, m):
    w = Workload.from_token_lists(tokens)
    cluster = Cluster.uniform(m, 5, a_miss=1.0, a_cached=1.0)
    a = offline_makespan(w, cluster, "lbgr-calibrated", "lru")
    b = offline_makespan(w, cluster, "least-load", "lru")
    assert a.worker.tolist() == b.worker.tolist()


def hot_prefix(n: int, prefix: int = 6, suffix: int = 1) -> Workload:
    return Workload.from_token_lists([[0] * prefix + [100 + j] * suffix for j in range(n)])


AFFINITY = {"cache_threshold": 0.0, "balance_abs": math.inf}


def test_claim_9_cache_affinity_ratio_against_the_joint_mip():
    """Claim 9: pure cache affinity puts a single hot prefix on one worker."""
    w = hot_prefix(8)
    cluster = Cluster.uniform(2, 20, a_miss=1.0, a_cached=0.1)
    affinity = offline_makespan(w, cluster, "cache-aware", "lru", router_options=AFFINITY)
    assert set(affinity.worker.tolist()) == {0}
    opt = joint_optimum(w, cluster)
    assert opt.status == "optimal"
    assert opt.makespan == pytest.approx(exhaustive_optimum(w, cluster).makespan)
    # everything on one worker (7 misses, then 6 hits at 0.1 + 1 miss, 7 times) against a 4/4 split
    assert affinity.max_busy == pytest.approx(7 + 7 * 1.6)
    assert opt.makespan == pytest.approx(7 + 3 * 1.6)
    assert affinity.max_busy / opt.makespan > 1.5


@pytest.mark.parametrize("m", [2, 4])
def test_claim_9_cache_affinity_ratio_tends_to_m(m):
    ratios = []
    for n in (16, 64, 256):
        w = hot_prefix(n, prefix=4, suffix=4)
        cluster = Cluster.uniform(m, 10_000, a_miss=1.0, a_cached=0.0)
        affinity = offline_makespan(w, cluster, "cache-aware", "lru", router_options=AFFINITY).max_busy
        # OPT <= the makespan of a balanced split (each worker pays the prefix once)
        balanced = offline_makespan(w, cluster, "round-robin", "lru").max_busy
        ratios.append(affinity / balanced)
    assert ratios == sorted(ratios)
    assert ratios[-1] > m * 0.97
    assert all(r <= m for r in ratios)


def high_sharing(groups: int, per_group: int, prefix: int = 12) -> Workload:
    return Workload.from_token_lists([[g] * prefix + [50 + k] for g in range(groups) for k in range(per_group)])


def test_claim_9_load_only_routing_loses_up_to_the_hit_benefit():
    """Claim 9, other side: load-only routing spreads every group over every worker."""
    m = 2
    w = high_sharing(groups=2, per_group=4)
    cluster = Cluster.uniform(m, 13, a_miss=1.0, a_cached=0.0)
    opt = joint_optimum(w, cluster)
    assert opt.status == "optimal"
    least = offline_makespan(w, cluster, "least-load", "lru").max_busy
    ratio = least / opt.makespan
    # the hit benefit: max_j (all-miss cost) / (best-case cost, with the longest prefix seen before cached)
    tokens = w.token_lists()
    seen = [max((_lcp(q, p) for p in tokens[:j]), default=0) for j, q in enumerate(tokens)]
    benefit = max(len(q) / (len(q) - h) for q, h in zip(tokens, seen))
    assert 1.5 < ratio <= (2 - 1 / m) * benefit
    # and cache affinity is optimal here
    affinity = offline_makespan(w, cluster, "cache-aware", "lru", router_options=AFFINITY).max_busy
    assert affinity == pytest.approx(opt.makespan)


def test_routing_ratio_uses_bounds_when_the_instance_is_too_large():
    w = small_gsp(groups=8, prompts=6, lengths=[30, 60])
    cluster = l40_like(2, budget=400)
    ratio = routing_ratio(w, cluster, "lbgr", "rlt", method="bounds", lp=False)
    assert ratio.reference_kind == "lower_bound" and ratio.ratio >= 1.0
    bounds = lower_bounds(w, cluster)
    assert ratio.reference == pytest.approx(max(bounds.values()))
    tiny = Workload.from_token_lists([[1, 2], [1, 2], [3, 4], [3, 4]])
    exact = routing_ratio(tiny, Cluster.uniform(2, 4, a_miss=2.0, a_cached=1.0), "cache-aware", "lru", method="mip")
    assert exact.reference_kind == "optimum" and exact.optimum_makespan == pytest.approx(6.0)


def test_optimum_or_bounds_solves_small_instances_and_bounds_large_ones():
    from kvtheory.cluster.optimum import optimum_or_bounds

    tiny = Workload.from_token_lists([[1, 2], [1, 2], [3, 4], [3, 4]])
    cluster = Cluster.uniform(2, 4, a_miss=2.0, a_cached=1.0)
    record = optimum_or_bounds(tiny, cluster)
    assert record["status"] == "optimal" and record["makespan"] == pytest.approx(6.0)
    assert record["best_lower_bound"] <= record["makespan"] + 1e-9
    large = small_gsp(groups=10, prompts=8, lengths=[8, 16])
    record = optimum_or_bounds(large, Cluster.uniform(2, 40, a_miss=1.0, a_cached=0.1), lp=False)
    assert record["status"] == "bounds_only" and record["makespan"] is None
    assert record["bound"] == pytest.approx(max(record["lower_bounds"].values()))


def test_route_command_accepts_plain_coefficients(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    write_workload(small_gsp(), path)
    base = ["route", "--workload", str(path), "--workers", "2", "--router", "least-load", "--eviction", "lru", "--json"]
    assert main(base + ["--budget", "500", "--a-miss", "1", "--a-cached", "0.5"]) == 0
    record = orjson.loads(capsys.readouterr().out)
    assert record["cluster"][0]["budget"] == 500 and record["cluster"][0]["a_cached"] == 0.5
    assert main(base + ["--gpu", "L40", "--model", "Llama-3.1-8B", "--a-miss", "1"]) == 2
    assert main(base) == 2
    capsys.readouterr()
