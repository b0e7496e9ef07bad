"""The time-based simulation's clocks on hand-computed examples: start of service, prefill end, finish,
TTFT and latency of queued queries, the batch whose footprint equals the budget exactly, the batch of
exactly ``batch`` queries, and the event loop's same-instant ordering rule (docs/cluster.md §The event loop)
at its boundaries; and every clock of 71 stored runs, unchanged to the bit (tests/data/cluster_reference.py).

The model: a worker takes its queue in arrival order when it is idle; the prefill of a batch lasts
sum_q a_cached h_q + a_miss (L_q - h_q) from the start of service, then the batch decodes in lock step.
So prefill end = start of service + prefill time, TTFT = prefill end - arrival, latency = finish - arrival.
Every coefficient below is a binary fraction, so the expected times are exact floats.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import orjson
import pytest

from kvtheory import Workload, run_policy
from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.simulation import simulate
from kvtheory.model.query import Query


def workload(queries) -> Workload:
    """(tokens, arrival, output length) triples."""
    return Workload(tuple(Query.of(tokens, float(arrival), output) for tokens, arrival, output in queries))


ONE_WORKER = Cluster.uniform(1, 10, a_miss=1.0, a_cached=0.25, decode_base=0.5)


def test_a_queued_query_starts_when_the_worker_is_free_and_ttft_counts_its_wait():
    w = workload([([1, 2, 3, 4], 0.0, 2), ([1, 2, 5], 1.0, 1)])
    run = simulate(w, ONE_WORKER, "round-robin", "lru")
    # q0: served at once; prefill 4 tokens x 1.0 = 4, two decode steps x 0.5 = 1
    # q1: arrives at 1 while q0 runs, starts at 5; hits [1, 2]: prefill 2 x 0.25 + 1 x 1.0 = 1.5, decode 0.5
    assert run.hits.tolist() == [0, 2]
    assert run.start.tolist() == [0.0, 5.0]
    assert run.prefill_end.tolist() == [4.0, 6.5]
    assert run.finish.tolist() == [5.0, 7.0]
    assert run.ttft.tolist() == [4.0, 5.5]  # 6.5 - 1: from arrival, through the wait, to the prefill end
    assert run.latency.tolist() == [5.0, 6.0]
    assert run.busy.tolist() == [7.0]
    record = run.to_dict()
    assert record["ttft_mean"] == 4.75 and record["latency_mean"] == 5.5
    assert record["makespan"] == 7.0 and record["throughput_qps"] == 2 / 7.0


def test_a_queued_batch_prefills_together_and_decodes_in_lock_step():
    w = workload([([1, 2, 3, 4], 0.0, 2), ([1, 2, 5], 1.0, 1), ([1, 2, 3, 6], 2.0, 2)])
    run = simulate(w, ONE_WORKER, "round-robin", "lru", batch=2)
    # q0 alone at 0 (nothing else queued): prefill 4, decode 1, done at 5. q1 and q2 wait and are served
    # together at 5 against the cache q0 left: hits 2 and 3; prefill (0.5 + 1) + (0.75 + 1) = 3.25, so both
    # prefills end at 8.25; lock-step decode: q1 after one step (8.75), q2 after two (9.25)
    assert run.hits.tolist() == [0, 2, 3]
    assert run.start.tolist() == [0.0, 5.0, 5.0]
    assert run.prefill_end.tolist() == [4.0, 8.25, 8.25]
    assert run.finish.tolist() == [5.0, 8.75, 9.25]
    assert run.ttft.tolist() == [4.0, 7.25, 6.25]
    assert run.latency.tolist() == [5.0, 7.75, 7.25]
    assert run.service == [[5.0, 4.25]] and run.busy.tolist() == [9.25]


def test_two_workers_serve_in_parallel_and_each_queue_waits_on_its_own_worker():
    cluster = Cluster.uniform(2, 10, a_miss=1.0, a_cached=0.25, decode_base=0.5)
    w = workload([([1, 2], 0.0, 0), ([3, 4, 5], 0.0, 0), ([1, 2, 6], 0.5, 0), ([7], 0.75, 0)])
    run = simulate(w, cluster, "round-robin", "lru")
    # round-robin: q0, q2 on worker 0; q1, q3 on worker 1. No output: finish = prefill end.
    assert run.worker.tolist() == [0, 1, 0, 1]
    assert run.start.tolist() == [0.0, 0.0, 2.0, 3.0]
    assert run.prefill_end.tolist() == [2.0, 3.0, 3.5, 4.0]  # q2: hits 2, prefill 0.5 + 1
    assert run.ttft.tolist() == [2.0, 3.0, 3.0, 3.25]
    assert run.finish.tolist() == run.prefill_end.tolist()


@pytest.mark.parametrize("engine", ["batch", "continuous"])
def test_at_one_instant_completions_come_before_arrivals(engine):
    """q1 finishes at 1.0 exactly when q2 arrives: the router sees worker 1 free (least-load counting
    queries in flight: 1 on worker 0, 0 on worker 1), and worker 1 starts q2 at once."""
    cluster = Cluster.uniform(2, 10, a_miss=1.0, a_cached=0.25)
    w = workload([([1, 2, 3, 4, 5, 6, 7, 8], 0.0, 0), ([9], 0.0, 0), ([10], 1.0, 0)])
    run = simulate(w, cluster, "least-load", "lru", router_options={"load": "requests"}, engine=engine)
    assert run.worker.tolist() == [0, 1, 1]  # ties (q0: both idle) go to the lower index
    assert run.start.tolist() == [0.0, 0.0, 1.0]
    assert run.ttft.tolist() == [8.0, 1.0, 1.0]


def test_a_query_arriving_as_the_worker_frees_joins_the_batch_taken_then():
    """Batch 2: q0 keeps the worker busy over [0, 4]; q1 (queued since 1) and q2 (arriving at 4.0
    exactly) form the batch taken at 4: at one instant arrivals are queued before free workers start."""
    w = workload([([1, 2, 3, 4], 0.0, 0), ([5], 1.0, 0), ([6], 4.0, 0)])
    run = simulate(w, ONE_WORKER, "round-robin", "lru", batch=2)
    assert run.start.tolist() == [0.0, 4.0, 4.0]
    assert run.prefill_end.tolist() == [4.0, 6.0, 6.0] and run.service == [[4.0, 2.0]]


def test_a_batch_takes_at_most_batch_queries():
    """Batch 2 with three queued (footprint 3 of B = 10): q1 and q2 together, then q3 alone."""
    w = workload([([1, 2, 3, 4], 0.0, 0), ([5], 1.0, 0), ([6], 1.0, 0), ([7], 1.0, 0)])
    run = simulate(w, ONE_WORKER, "round-robin", "lru", batch=2)
    assert run.start.tolist() == [0.0, 4.0, 4.0, 6.0]
    assert run.service == [[4.0, 2.0, 1.0]]


# -- the batch whose footprint is the budget exactly -------------------------------------------------------

# footprint of the pair: token nodes (1), (1,2), (1,2,3), (1,2,4), (1,2,4,5) = 5
PAIR = [[1, 2, 3], [1, 2, 4, 5]]


def test_a_batch_whose_footprint_equals_the_budget_is_served_whole():
    w = Workload.from_token_lists(PAIR)
    cluster = Cluster.uniform(1, 5, a_miss=1.0, a_cached=0.25)
    run = simulate(w, cluster, "round-robin", "lru", batch=2, rate=math.inf)
    # one batch: both hits counted against the empty cache; both prefills (3 + 4) end together
    assert run.hits.tolist() == [0, 0] == run_policy(w, 5, "lru", batch=2).query_hits.tolist()
    assert run.start.tolist() == [0.0, 0.0]
    assert run.prefill_end.tolist() == [7.0, 7.0]
    assert run.service == [[7.0]]


def test_a_batch_one_token_over_the_budget_is_split():
    w = Workload.from_token_lists(PAIR)
    cluster = Cluster.uniform(1, 4, a_miss=1.0, a_cached=0.25)
    run = simulate(w, cluster, "round-robin", "lru", batch=2, rate=math.inf)
    # q0 alone (3 misses), then q1 alone: hits (1), (1,2); (1,2,3) is evicted to make room
    assert run.hits.tolist() == [0, 2]
    assert run.start.tolist() == [0.0, 3.0]
    assert run.prefill_end.tolist() == [3.0, 5.5]
    assert run.service == [[3.0, 2.5]]


# -- results unchanged, event for event ----------------------------------------------------------------


def _reference_module():
    path = Path(__file__).parents[1] / "data" / "cluster_reference.py"
    spec = importlib.util.spec_from_file_location("cluster_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_engine_router_and_policy_gives_the_stored_clocks_query_for_query():
    """tests/data/cluster_reference.json holds 71 runs (both engines, every router family, five policies,
    tiny workloads whose arrivals fall on completions) as the code computed them before the engines shared
    one event loop; every clock, worker, hit and service time must stay the same, to the bit."""
    reference = orjson.loads((Path(__file__).parents[1] / "data" / "cluster_reference.json").read_bytes())
    module = _reference_module()
    runs = {name: module.outcome(*case) for name, *case in module.cases()}
    assert sorted(runs) == sorted(reference)
    for name, outcome in runs.items():
        stored = reference[name]
        for key in ("arrival", "worker", "hits", "start", "prefill_end", "finish", "service", "engine_state"):
            assert outcome[key] == stored[key], f"{name}: {key} changed"
        assert orjson.loads(orjson.dumps(outcome["router_state"], default=float)) == stored["router_state"], name
    # the ties are there: arrivals at the very instant of a completion, on both engines
    for engine in ("batch", "continuous"):
        ties = sum(
            sum(a in set(run["finish"]) for a in run["arrival"])
            for name, run in reference.items()
            if f"/{engine}" in name
        )
        assert ties > 50, engine
