"""Policies that follow predictions on the workers of a cluster (kvtheory.cluster.predicted): each worker is told
the ``learned`` predictor's predictions over the batches it serves. One worker at batch 1 is ``run_policy`` on the
trace in arrival order, hit for hit and eta for eta; on several workers each worker's run is ``run_policy`` on
the queries it served (padded to the trace's length, which only writes "never"); a predictor that reads the
future is refused in one line, in Python and on the command line."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from cli_runner import run_cli

from kvtheory import InputError, Workload, run_policy, write_workload
from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.simulation import simulate, worker_seed
from kvtheory.model.batches import batches
from kvtheory.model.predictions import predict
from kvtheory.policies import PREDICTIVE_POLICIES
from kvtheory.workloads import generate


def small_conversations(seed: int) -> Workload:
    return generate(
        "multiturn",
        {"conversations": 6, "turns": [2, 4, 6], "system_len": 8, "user_len": 5, "output_len": 3},
        seed=seed,
    )


def in_order(workload: Workload, order) -> Workload:
    lists = workload.token_lists()
    return Workload.from_token_lists([lists[j] for j in order])


@pytest.mark.parametrize("policy", sorted(PREDICTIVE_POLICIES))
def test_one_worker_is_run_policy_in_arrival_order(policy):
    """Random arrival times (so the order served is not the file's), three budgets, four seeds."""
    for seed in range(4):
        workload = small_conversations(seed)
        arrivals = np.random.default_rng(seed).uniform(0, 100, len(workload))
        order = np.argsort(arrivals, kind="stable")
        served = in_order(workload, order)
        for budget in (workload.max_length, 2 * workload.max_length, 4 * workload.max_length):
            cluster = Cluster.uniform(1, budget)
            got = simulate(workload, cluster, "round-robin", policy, predictor="learned", seed=seed, arrivals=arrivals)
            want = run_policy(served, budget, f"{policy}@learned", seed=seed)
            assert np.array_equal(got.hits[order], want.query_hits), (seed, budget)
            assert (
                got.eta == pytest.approx(want.eta, rel=1e-12) and got.predictor == "learned"
            )  # summed in another order


def padded(workload: Workload, served: list[int]) -> Workload:
    """The queries ``served`` (in that order), then one-token queries of fresh tokens up to the trace's length n:
    a schedule of n steps, so that "never" is n + 1 as on a worker, changing no earlier prediction or hit."""
    lists = workload.token_lists()
    fresh = max(t for tokens in lists for t in tokens) + 1
    return Workload.from_token_lists(
        [lists[j] for j in served] + [[fresh + i] for i in range(len(lists) - len(served))]
    )


@pytest.mark.parametrize("policy", sorted(PREDICTIVE_POLICIES))
def test_each_worker_learns_from_its_own_batches(policy):
    """Three workers behind the cache-aware router at batch 1: worker i's hits are ``run_policy``'s on the queries
    it served, in the order it started them, and the run's eta is the sum over workers of the error on those."""
    for seed in range(3):
        workload = small_conversations(seed)
        budget = 2 * workload.max_length
        got = simulate(
            workload, Cluster.uniform(3, budget), "cache-aware", policy, predictor="learned", seed=seed, rate=0.5
        )
        eta = 0.0
        for i in range(3):
            served = sorted(np.flatnonzero(got.worker == i).tolist(), key=lambda j: got.start[j])
            alone = run_policy(padded(workload, served), budget, f"{policy}@learned", seed=worker_seed(seed, i))
            assert np.array_equal(alone.query_hits[: len(served)], got.hits[served]), (seed, i)
            eta += worker_eta(padded(workload, served), len(served))
        assert got.eta == pytest.approx(eta, rel=1e-12)


def worker_eta(workload: Workload, steps: int) -> float:
    """eta of ``learned`` over the first ``steps`` steps of ``workload`` at batch 1, counted from the forward scan
    of each request's next one (horizon: the padded length)."""
    p = predict(workload.trie, batches(len(workload), 1), "learned")
    trie, n = workload.trie, len(workload)
    total = 0.0
    paths = [set(trie.path(j)) for j in range(n)]
    for r, (t, v) in enumerate(zip(p.requests.steps.tolist(), p.requests.edges.tolist())):
        if t > steps:
            break
        later = [s for s in range(t + 1, n + 1) if v in paths[s - 1]]
        actual = later[0] if later else n + 1
        total += trie.edge_len[v] * abs(p.predicted[r] - actual)
    return total


def test_the_record_has_the_predictor_and_eta_only_when_told():
    workload = small_conversations(0)
    cluster = Cluster.uniform(2, 2 * workload.max_length)
    told = simulate(workload, cluster, "cache-aware", "blind-oracle@learned", rate=1.0).to_dict()
    assert told["predictor"] == "learned" and told["eta"] > 0 and told["eviction"] == "blind-oracle@learned"
    assert "predictor" not in simulate(workload, cluster, "cache-aware", "lru", rate=1.0).to_dict()


@pytest.mark.parametrize(
    ("eviction", "options", "message"),
    [
        ("blind-oracle", {"predictor": "oracle"}, "reads each worker's future requests"),
        ("predictive-marker@logdis=0.5", {}, "reads each worker's future requests"),
        ("blind-oracle", {}, "follows predictions: give a predictor"),
        ("lru", {"predictor": "learned"}, "does not follow predictions"),
        ("blind-oracle", {"predictor": "learned", "noise": 0.5}, "takes no noise"),
        ("blind-oracle@learned", {"predictor": "learned"}, "names its predictor already"),
        ("blind-oracle@learned", {"engine": "continuous"}, "runs on the batch engine only"),
    ],
)
def test_what_a_cluster_cannot_predict_is_refused(eviction, options, message):
    workload = small_conversations(0)
    with pytest.raises(InputError, match=message):
        simulate(workload, Cluster.uniform(2, 2 * workload.max_length), "cache-aware", eviction, rate=1.0, **options)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("cluster_predictions") / "multiturn.jsonl"
    write_workload(small_conversations(1), path)
    return path


def test_route_tells_every_worker(capsys, trace):
    workload = small_conversations(1)
    budget = 2 * workload.max_length
    common = ["route", "--workload", trace, "--workers", 2, "--router", "cache-aware", "--budget", budget]
    code, out, _ = run_cli(
        capsys, *common, "--rate", 1, "--eviction", "blind-oracle", "--predictor", "learned", "--json"
    )
    record = orjson.loads(out)
    want = simulate(workload, Cluster.uniform(2, budget), "cache-aware", "blind-oracle@learned", rate=1.0, seed=0)
    assert code == 0 and record["eta"] == want.eta and record["hits"] == int(want.hits.sum())


def test_single_worker_route_command_is_evict_with_learned(capsys, trace):
    """The command line's cross-check: one worker at batch 1 (queries served in the file's order, since --rate
    draws increasing arrival times) hits what ``evict`` hits, with the same eta."""
    workload = small_conversations(1)
    budget = 2 * workload.max_length
    for policy in sorted(PREDICTIVE_POLICIES):
        code, out, _ = run_cli(
            capsys, "evict", "--workload", trace, "--budget", budget, "--policy", policy, "--predictor", "learned",
            "--seed", 5, "--json",
        )  # fmt: skip
        evict = orjson.loads(out)
        assert code == 0
        code, out, _ = run_cli(
            capsys, "route", "--workload", trace, "--workers", 1, "--router", "round-robin", "--budget", budget,
            "--rate", 1, "--policy", policy, "--predictor", "learned", "--seed", 5, "--json",
        )  # fmt: skip
        route = orjson.loads(out)
        assert code == 0 and route["hits"] == evict["hits"] and route["eta"] == evict["eta"], policy


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--eviction", "blind-oracle", "--predictor", "oracle"], "reads each worker's future requests"),
        (["--eviction", "lru", "--predictor", "learned"], "only a policy that follows predictions takes one"),
        (["--eviction", "blind-oracle"], "follows predictions: give a predictor"),
        (["--eviction", "blind-oracle", "--noise", "0.5"], "--noise is the strength of a predictor"),
    ],
)
def test_route_refuses_in_one_line(capsys, trace, extra, message):
    common = ["route", "--workload", trace, "--workers", 2, "--router", "cache-aware", "--budget", 100, "--rate", 1]
    code, out, err = run_cli(capsys, *common, *extra)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, err
