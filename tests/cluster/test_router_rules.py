"""Router rules pinned on exact routes (from mutants of the cluster code that no test told apart): the
round-robin order, least-load on the true backlog of a worker busy with an empty queue, the approximate
trees' trim (least recently stamped leaf edges first, a tree that stays prefix-closed), a refused router
option named in one line, the seed in a simulation's record, and an emptied worker's load reset to 0."""

from __future__ import annotations

import pytest

from kvtheory import InputError, Workload
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.routers import RouterView, router_class
from kvtheory.cluster.routers.approx_tree import ApproxTrees
from kvtheory.cluster.simulation import simulate

#: prefill 1e-3 s per missed token, no decode: a query of L tokens takes L ms when nothing is cached
WORKER = Worker(1e-3, 1e-4, 1_000, 0.0, 0.0)


def _cluster(m: int) -> Cluster:
    return Cluster(tuple(WORKER for _ in range(m)))


@pytest.mark.parametrize("m", [2, 3, 5])
def test_round_robin_sends_query_n_to_worker_n_mod_m(m):
    workload = Workload.from_token_lists([[j, j + 1] for j in range(4 * m + 1)])
    run = simulate(
        workload, _cluster(m), "round-robin", "lru", seed=0, arrivals=[0.01 * j for j in range(len(workload))]
    )
    assert run.worker.tolist() == [j % m for j in range(len(workload))]


def test_least_load_on_the_true_backlog_counts_the_query_in_service():
    """Worker 0 serves q_0 (100 ms) from t = 0 with nothing queued behind it; at t = 0.01 its true backlog
    is the 90 ms left of q_0, so q_1 goes to the idle worker 1; at t = 0.02 worker 0 has 80 ms left and
    worker 1 90 ms, so q_2 goes to worker 0."""
    workload = Workload.from_token_lists([list(range(100)), list(range(200, 300)), [7]])
    run = simulate(
        workload,
        _cluster(2),
        "least-load",
        "lru",
        seed=0,
        arrivals=[0.0, 0.01, 0.02],
        router_options={"load": "work", "oracle": True},
    )
    assert run.worker.tolist() == [0, 1, 0]


def test_trim_drops_least_recently_stamped_leaves_and_keeps_the_tree_prefix_closed():
    workload = Workload.from_token_lists([[1, 2, 3], [1, 2, 4], [5, 6]])
    trie = workload.trie
    trees = ApproxTrees(trie, 1)
    for j in (0, 1, 2):
        trees.insert(0, j)
    assert trees.size[0] == trie.distinct_tokens == 6
    trees.trim(0, 5)  # the oldest leaf edge goes: q_0's own last token
    assert trees.match_all(0) == [2] and trees.match_all(1) == [3] and trees.match_all(2) == [2]
    trees.trim(0, 2)  # then q_1's leaf, then the edge 1 2 (a leaf now), never an edge with a child held
    assert trees.match_all(0) == [0] and trees.match_all(1) == [0] and trees.match_all(2) == [2]
    assert trees.size[0] == 2
    for v in range(1, trie.n_nodes):
        if trees.owners[v]:
            assert trie.parent[v] == 0 or trees.owners[trie.parent[v]], v


def test_a_router_option_outside_its_choices_is_one_line_naming_it():
    workload = Workload.from_token_lists([[1], [2]])
    with pytest.raises(InputError, match=r"^least-load: load='most' is not one of work, requests, tokens$"):
        simulate(workload, _cluster(2), "least-load", "lru", rate=1.0, router_options={"load": "most"})


def test_the_record_of_a_simulation_names_its_seed():
    workload = Workload.from_token_lists([[1], [2], [1]])
    record = simulate(workload, _cluster(2), "random", "rlt", seed=17, rate=1.0).to_dict()
    assert record["seed"] == 17 and record["router"] == "random" and record["eviction"] == "rlt"


def test_least_load_resets_an_emptied_worker_to_exactly_zero():
    """Released by subtraction, 0.1 + 0.2 leaves 5.6e-17 behind (0.30000000000000004 - 0.1 - 0.2): a worker
    with nothing in flight is reset to 0 instead, so an emptied worker ties with an idle one and the tie goes
    to the lower index."""
    workload = Workload.from_token_lists([[1], [2, 3], [4, 5], [6]])
    view = RouterView(workload, Cluster((Worker(0.1, 0.01, 1_000, 0.0, 0.0),) * 2), [0] * len(workload))
    router = router_class("least-load")(view, options={"load": "work"})
    assert [router.dispatch(0, 0.0), router.dispatch(1, 0.0), router.dispatch(2, 0.0)] == [0, 1, 0]
    router.complete(0, 0, 1.0, 1.0, 1.0)
    router.complete(2, 0, 2.0, 2.0, 2.0)
    router.complete(1, 1, 3.0, 3.0, 3.0)
    assert router.in_flight == [0, 0]
    assert router.dispatch(3, 4.0) == 0
