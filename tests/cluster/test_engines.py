"""The continuous-batching engine (kvtheory/cluster/engines.py, docs/cluster.md §Engines).

Hand-computed runs use binary-fraction coefficients, so the expected times are exact floats. The
low-load runs compare the two engines exactly (==): a request alone on a worker goes through the same
cost functions in both.
"""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import EXAMPLE_DEADLINE, instances

from kvtheory import Workload, write_workload
from kvtheory.cli import main
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.costmodel import cost_model, gpu, model
from kvtheory.cluster.engines import ContinuousWorker
from kvtheory.cluster.simulation import Simulation, simulate
from kvtheory.errors import InputError
from kvtheory.model.batches import footprint
from kvtheory.model.query import Query
from kvtheory.policies import ONLINE_POLICIES, policy_class
from kvtheory.workloads import generate


def workload(queries) -> Workload:
    """(tokens, arrival, output length) triples."""
    return Workload(tuple(Query.of(tokens, float(arrival), output) for tokens, arrival, output in queries))


def spaced(w: Workload, gap: float) -> Workload:
    """The same queries, ``gap`` seconds apart."""
    return Workload(tuple(Query.of(q.tokens, j * gap, q.output_len) for j, q in enumerate(w)))


def l40(m: int, budget: int) -> Cluster:
    spec = Worker.from_cost_model(cost_model(gpu("L40"), model("Llama-3.1-8B")))
    return Cluster(tuple(Worker(**{**spec.__dict__, "budget": budget}) for _ in range(m)))


LOW_LOAD = {
    "gsp": ("gsp", {"groups": 6, "prompts": 4, "lengths": [64, 256, 512], "output_len": 3}),
    "multiturn": ("multiturn", {"conversations": 8, "turns": [2, 4], "user_len": 96, "output_len": 5}),
    "longdoc": ("longdoc", {"documents": 6, "questions": 3, "lengths": [128, 512], "question_len": 16}),
}


def _same_clocks(a, b) -> None:
    assert a.worker.tolist() == b.worker.tolist()
    assert a.hits.tolist() == b.hits.tolist()
    assert a.start.tolist() == b.start.tolist()
    assert a.prefill_end.tolist() == b.prefill_end.tolist()
    assert a.finish.tolist() == b.finish.tolist()
    assert a.ttft.tolist() == b.ttft.tolist() and a.latency.tolist() == b.latency.tolist()


@pytest.mark.parametrize("name", sorted(LOW_LOAD))
# vllm left out: the continuous engine takes a served prompt to be cached whole (section 1's residency), which
# vLLM's block pool never gives (its partial last block and last token), so it refuses vllm
@pytest.mark.parametrize("policy", sorted(name for name, cls in ONLINE_POLICIES.items() if not cls.block_engine))
def test_at_low_load_continuous_batching_equals_batch_one_exactly(name, policy):
    generator, params = LOW_LOAD[name]
    w = generate(generator, {**params, "order": "random"}, seed=5)
    budget = 700
    assert footprint(w.trie, [w.trie.path(j) for j in range(len(w))]) > 2 * budget  # evictions happen
    w = spaced(w, 60.0)  # every query is done long before the next arrives
    for workers, router in ((1, "round-robin"), (2, "cache-aware"), (3, "lbgr")):
        cluster = l40(workers, budget)
        batch = simulate(w, cluster, router, policy, seed=2)
        continuous = simulate(w, cluster, router, policy, seed=2, engine="continuous")
        _same_clocks(batch, continuous)
        assert batch.hit_rate < 1.0 and max(continuous.engine_state["max_running"]) == 1  # one at a time


@pytest.mark.parametrize("policy", ["lru", "rlt"])
def test_at_low_load_a_cut_prefill_takes_the_same_time_as_a_whole_one(policy):
    """Prompts longer than the chunk size are prefilled over several iterations; with binary-fraction
    coefficients the chunks' times add up to the batch engine's prefill exactly."""
    w = spaced(generate("gsp", {"groups": 4, "prompts": 4, "lengths": [40, 100], "output_len": 2}, seed=1), 1000.0)
    cluster = Cluster.uniform(2, 150, a_miss=1.0, a_cached=0.25, decode_base=0.5)
    batch = simulate(w, cluster, "round-robin", policy, seed=0)
    continuous = simulate(w, cluster, "round-robin", policy, seed=0, engine="continuous", chunk_size=16)
    _same_clocks(batch, continuous)
    assert continuous.engine_state["prefill_iterations"] > len(w)  # prompts were cut


SATURATED = workload([([1, 2, 3, 4], 0, 3), ([5, 6, 7, 8], 0, 3), ([9, 10, 11, 12], 0, 3), ([13, 14, 15, 16], 0, 3)])


def test_continuous_batching_beats_batch_one_at_saturation():
    cluster = Cluster.uniform(1, 100, a_miss=1.0, a_cached=0.0, decode_base=2.0)
    one = simulate(SATURATED, cluster, "round-robin", "lru")
    # batch 1: each query 4 (prefill) + 3 x 2 (decode) = 10, one after another
    assert one.finish.tolist() == [10.0, 20.0, 30.0, 40.0] and one.to_dict()["throughput_qps"] == 4 / 40
    cont = simulate(SATURATED, cluster, "round-robin", "lru", engine="continuous")
    # all four prefilled in one iteration (16 tokens), then three decode iterations of 2 s for all four
    assert cont.prefill_end.tolist() == [16.0] * 4 and cont.finish.tolist() == [22.0] * 4
    assert cont.service == [[16.0, 6.0]] and cont.to_dict()["throughput_qps"] == 4 / 22
    # 8 prefill tokens per iteration: two prefill iterations, decode only once nothing is left to prefill
    chunked = simulate(SATURATED, cluster, "round-robin", "lru", engine="continuous", chunk_size=8)
    assert chunked.prefill_end.tolist() == [8.0, 8.0, 16.0, 16.0] and chunked.finish.tolist() == [22.0] * 4
    assert chunked.service == [[8.0, 8.0, 6.0]]


def test_a_decode_iteration_is_the_larger_of_compute_and_memory_time():
    # 0.75 s of compute per decoded token: one sequence is memory-bound (2 s), four are compute-bound (3 s)
    cluster = Cluster((Worker(1.0, 0.0, 100, decode_base=2.0, decode_compute=0.75),))
    assert simulate(SATURATED, cluster, "round-robin", "lru").finish.tolist() == [10.0, 20.0, 30.0, 40.0]
    cont = simulate(SATURATED, cluster, "round-robin", "lru", engine="continuous")
    assert cont.finish.tolist() == [25.0] * 4 and cont.service == [[16.0, 9.0]]


def test_admission_waits_until_the_prompt_fits_next_to_the_running_ones():
    cluster = Cluster.uniform(1, 8, a_miss=1.0, a_cached=0.0, decode_base=1.0)
    # q0 and q1 fill the 8 tokens; q2 waits for them to finish, and q3 (1 token, would fit) waits behind it
    w = workload([([1, 2, 3, 4], 0, 2), ([5, 6, 7, 8], 0, 2), ([9, 10, 11, 12], 0, 2), ([13], 0, 2)])
    run = simulate(w, cluster, "round-robin", "lru", engine="continuous")
    assert run.start.tolist() == [0.0, 0.0, 10.0, 10.0]
    assert run.prefill_end.tolist() == [8.0, 8.0, 15.0, 15.0]
    assert run.finish.tolist() == [10.0, 10.0, 17.0, 17.0]
    assert run.engine_state["max_running"] == [2]
    # shared tokens count once: q0 and q1 share [1, 2, 3], so both fit in 5 tokens; q2 needs 3 more
    w = workload([([1, 2, 3, 4], 0, 1), ([1, 2, 3, 5], 0, 1), ([6, 7, 8], 0, 1)])
    run = simulate(w, Cluster.uniform(1, 6, decode_base=1.0), "round-robin", "lru", engine="continuous")
    assert run.hits.tolist() == [0, 0, 0]  # q0 and q1 in one batch: each pays its misses
    assert run.start.tolist() == [0.0, 0.0, 9.0] and run.finish.tolist() == [9.0, 9.0, 13.0]


def test_chunked_prefill_cuts_a_long_prompt_and_shares_the_chunk_with_new_requests():
    cluster = Cluster.uniform(1, 100, a_miss=1.0, a_cached=0.25, decode_base=0.5)
    w = workload([(list(range(1, 9)), 0, 1), ([20, 21], 1, 1)])
    run = simulate(w, cluster, "round-robin", "lru", engine="continuous", chunk_size=3)
    # q0's 8 tokens: 3 + 3 + 2; q1 (arrived at 1) gets the one token left of the third iteration and
    # its second token in the fourth; then one decode iteration for both
    assert run.service == [[3.0, 3.0, 3.0, 1.0, 0.5]]
    assert run.start.tolist() == [0.0, 6.0]
    assert run.prefill_end.tolist() == [9.0, 10.0] and run.finish.tolist() == [10.5, 10.5]
    assert run.ttft.tolist() == [9.0, 9.0]


def test_a_request_admitted_during_a_cut_prefill_hits_only_its_computed_part():
    cluster = Cluster.uniform(1, 100, a_miss=1.0, a_cached=0.25)
    q0 = list(range(1, 11))
    w = workload([(q0, 0, 0), (q0[:9] + [99], 1, 0)])
    run = simulate(w, cluster, "round-robin", "lru", engine="continuous", chunk_size=4)
    # q0: chunks of 4, 4, 2 tokens. q1 is admitted into the third iteration, when 8 of q0's tokens are
    # computed: it shares 9 with q0 but hits 8 and computes 2: 0.25 * 8 + 2 = 4, so 2 + 4 = 6
    assert run.hits.tolist() == [0, 8] and run.engine_state["early_hit_tokens"] == 1
    assert run.service == [[4.0, 4.0, 6.0]] and run.finish.tolist() == [14.0, 14.0]


def test_running_requests_are_never_evicted_and_a_finished_request_counts_as_accessed():
    cluster = Cluster.uniform(1, 8, a_miss=1.0, a_cached=0.0, decode_base=1.0)
    w = workload([([1, 2, 3, 4], 0, 10), ([9, 10], 4.5, 0), ([5, 6, 7, 8], 7.5, 0)])
    sim = Simulation(w, cluster, "round-robin", "lru", engine="continuous")
    run = sim.run()
    # q0 decodes from 4; q1 arrives at 4.5 and is prefilled after the first decode iteration (5 to 7);
    # q2 arrives at 7.5 and is prefilled after the next one (8 to 12). Admitting q2 must evict 2 tokens:
    # the least recently used leaf is q0's (accessed at 0; q1 finished at 7), but q0 runs, so q1 goes.
    assert run.start.tolist() == [0.0, 5.0, 8.0]
    assert run.finish.tolist() == [20.0, 7.0, 12.0]
    assert run.engine_state["protected_serves"] == 1
    policy = sim.workers[0].policy
    assert [policy.cached_prefix(j) for j in range(3)] == [4, 0, 4]


class _Held:
    """A radix-family policy that also never evicts the paths of ``held`` (sequence indices), without
    serving them: the lock SGLang holds on running requests, which the policy interface cannot express."""

    held: list[int] = []

    def _evict(self, tokens, locked, *rest):
        paths = (self.trie.path(j) for j in self.held)
        extra = {id(node) for path in paths for node in self._match(path, mutate=False)[2]}
        super()._evict(tokens, locked | extra, *rest)


def _serve_with_locks(self, new, matched):
    held = getattr(self.policy, "policy", self.policy)  # a test's policy is served through the engine's checks
    held.held = self.admitted[: len(self.admitted) - len(new)]
    self.policy.serve(new)


@pytest.mark.parametrize("policy", ["lru", "token-lru", "fifo"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_serving_running_requests_with_an_eviction_is_a_lock_for_the_radix_policies(policy, seed, monkeypatch):
    """The engine protects running requests by serving them with any admission that evicts. For L-LRU,
    token-LRU and FIFO-leaf that gives the same run, hit for hit, as a lock that leaves them unserved:
    their refreshed stamps are overwritten when they finish (served again then) before they can be evicted.
    (Checked the other way: with held = [] and no served running requests, L-LRU and token-LRU evict running
    requests' tokens here and the engine stops with an error.)"""
    w = generate("gsp", {"groups": 10, "prompts": 8, "lengths": [64, 256, 512], "output_len": 6}, seed=seed)
    cluster = l40(2, 1500)
    options = {"seed": seed, "engine": "continuous", "rate": 40.0, "chunk_size": 256}
    served = simulate(w, cluster, "cache-aware", policy, **options)
    assert served.engine_state["protected_serves"] > 20 and max(served.engine_state["max_running"]) > 3
    held = type("Held", (_Held, policy_class(policy)), {"name": policy})
    monkeypatch.setattr(ContinuousWorker, "_serve", _serve_with_locks)
    locked = simulate(w, cluster, "cache-aware", held, **options)
    _same_clocks(served, locked)


@settings(max_examples=60, deadline=EXAMPLE_DEADLINE)
@given(
    instances(max_queries=12, max_length=6),
    st.sampled_from(sorted(name for name, cls in ONLINE_POLICIES.items() if not cls.block_engine)),  # see above
    st.lists(st.integers(0, 3), min_size=12, max_size=12),
    st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.0]), min_size=12, max_size=12),
    st.integers(1, 4),
    st.integers(1, 2),
)
def test_every_request_runs_to_completion_in_order_of_its_clocks(instance, policy, outputs, gaps, chunk, m):
    """Random tiny workloads with tight budgets, bursts and several workers: every policy keeps the running
    requests' prompts (the engine checks at each completion), and each request's clocks are in order."""
    base, budget, _ = instance
    n = len(base)
    arrivals = np.cumsum(gaps[:n]) - gaps[0]
    w = Workload(tuple(Query.of(q.tokens, float(a), o) for q, a, o in zip(base, arrivals, outputs)))
    cluster = Cluster.uniform(m, budget, a_miss=1.0, a_cached=0.25, decode_base=0.5)
    run = simulate(w, cluster, "round-robin", policy, seed=3, engine="continuous", chunk_size=chunk)
    assert np.all(run.arrival <= run.start) and np.all(run.start < run.prefill_end)
    assert np.all(run.prefill_end + 0.5 * run.output_len <= run.finish)
    assert np.all(run.hits <= run.length) and run.busy.sum() <= run.makespan * m
    # no iteration prefills more than the chunk size; every output token takes a decode iteration
    computed = int((run.length - run.hits).sum())
    assert run.engine_state["prefill_iterations"] * chunk >= computed
    assert max(run.output_len) <= run.engine_state["decode_iterations"] <= sum(run.output_len)


def test_an_oracle_router_sees_the_rest_of_the_current_iteration():
    cluster = Cluster.uniform(2, 20, a_miss=1.0, a_cached=0.0)
    w = workload([([1, 2, 3, 4], 0, 0), ([5, 6], 0.5, 0), ([7], 2.5, 0), ([8], 4.5, 0)])
    run = simulate(w, cluster, "least-load", "lru", engine="continuous", oracle=True)
    # q1 at 0.5: worker 0 has 3.5 s of q0's prefill left, worker 1 none; q2 at 2.5: 1.5 left on 0, 0 on 1
    # (q1 done at 2.5 exactly: completions come first); q3 at 4.5: both idle, ties to worker 0
    assert run.worker.tolist() == [0, 1, 1, 0]


def test_the_continuous_engine_is_deterministic_under_a_seed():
    w = generate("gsp", {"groups": 8, "prompts": 6, "lengths": [64, 256], "rate": 200.0, "output_len": 4}, seed=2)
    cluster = l40(2, 900)
    runs = [simulate(w, cluster, "lbgr", "rlt", seed=7, engine="continuous", rate=300.0) for _ in range(2)]
    _same_clocks(*runs)
    assert runs[0].engine_state == runs[1].engine_state and runs[0].engine_state["max_running"] != [1, 1]


def test_engine_options_are_checked():
    w = workload([([1, 2], 0, 0)])
    cluster = Cluster.uniform(1, 4)
    with pytest.raises(InputError, match="unknown engine"):
        simulate(w, cluster, "round-robin", "lru", engine="vllm")
    with pytest.raises(InputError, match="--batch"):
        simulate(w, cluster, "round-robin", "lru", engine="continuous", batch=2)
    with pytest.raises(InputError, match="--chunk-size goes with"):
        simulate(w, cluster, "round-robin", "lru", chunk_size=8)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="--chunk-size must be"):
            simulate(w, cluster, "round-robin", "lru", engine="continuous", chunk_size=bad)


def test_route_command_runs_either_engine(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    write_workload(generate("gsp", {"groups": 4, "prompts": 4, "lengths": [64, 128], "output_len": 2}, seed=0), path)
    base = ["route", "--workload", str(path), "--workers", "2", "--router", "cache-aware", "--eviction", "lru"]
    base += ["--gpu", "L40", "--model", "Llama-3.1-8B", "--rate", "50", "--json"]
    assert main(base) == 0
    batch = orjson.loads(capsys.readouterr().out)
    assert batch["engine"] == "batch" and batch["engine_state"] == {}
    assert main(base + ["--engine", "continuous", "--chunk-size", "64"]) == 0
    record = orjson.loads(capsys.readouterr().out)
    assert record["engine"] == "continuous" and record["engine_state"]["chunk_size"] == 64
    assert record["queries"] == batch["queries"] and not math.isnan(record["latency_p50"])
    assert main(base + ["--engine", "continuous", "--batch", "4"]) == 2
    assert main(base + ["--chunk-size", "64"]) == 2
    with pytest.raises(SystemExit) as stop:  # argparse's choices
        main(base + ["--engine", "turbo"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--engine continuous forms its own batches" in err and "--chunk-size goes with" in err
    assert "invalid choice: 'turbo'" in err and "Traceback" not in err and len(err.splitlines()) == 3


def test_decode_iteration_seconds_is_the_sum_of_per_iteration_roofline_maxima():
    from kvtheory.cluster.costmodel import decode_iteration_seconds

    rng = np.random.default_rng(0)
    for _ in range(300):
        base, per, comp = rng.random(), rng.random() * 0.01, rng.random() * 2
        n, c, k = int(rng.integers(1, 40)), int(rng.integers(0, 500)), int(rng.integers(0, 50))
        brute = sum(max(n * comp, base + per * (c + n * s)) for s in range(k))
        assert decode_iteration_seconds(base, per, comp, n, c, k) == pytest.approx(brute, rel=1e-12, abs=1e-12)


def _load_benchmark(name: str):
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "reproduce" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"reproduce_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_lock_benchmark_runs_every_policy_both_ways(capsys):
    """reproduce/engine_locks.py (docs/cluster.md §Engines), scaled down: its true-lock subclasses still fit
    the policies they extend (a changed private signature would break them)."""
    policies = "rlt,rlt-authors,lfu,random-leaf"
    assert _load_benchmark("engine_locks").main(["--quick", "--seeds", "2", "--eviction", policies]) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert [r["eviction"] for r in out["results"]] == policies.split(",")
    for result in out["results"]:
        assert len(result["runs"]["served"]) == len(result["runs"]["locked"]) == 2
        low, high = result["served_minus_locked"]["hit_rate"]["ci95"]
        assert low <= result["served_minus_locked"]["hit_rate"]["mean_difference"] <= high


def test_the_table1_script_hands_the_engine_to_the_simulation(capsys):
    assert _load_benchmark("table1").main(["--quick", "--seeds", "1", "--engine", "continuous"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert out["simulation_options"] == {"engine": "continuous"} and len(out["rows"]) == 4


# -- the timing rules at their boundaries --------------------------------------------------------------
# One worker: a_miss 1, a_cached 0, a decode step of 1 s. q0 (4 tokens, 5 output tokens) is prefilled over
# [0, 4] and its decode steps end at 5, 6, 7, 8, 9 (one decode run, summed in closed form).
DECODING = Cluster.uniform(1, 100, a_miss=1.0, a_cached=0.0, decode_base=1.0)


def _next_to_q0(arrival: float, tokens=(9,), cluster=DECODING):
    w = workload([([1, 2, 3, 4], 0, 5), (list(tokens), arrival, 0)])
    return simulate(w, cluster, "round-robin", "lru", engine="continuous")


@pytest.mark.parametrize(
    ("arrival", "start"),
    [(6.0, 6.0), (5.5, 6.0), (6.5, 7.0), (9.0, 9.0), (4.0, 4.0), (2.0, 4.0)],
)
def test_an_admissible_arrival_ends_a_decode_run_at_the_first_boundary_at_or_after_it(arrival, start):
    """On a boundary (6.0) the request is admitted there, not one step later; between two (5.5, 6.5) at the
    next; at the run's own end (9.0) with q0's completion; at the prefill's end (4.0) before q0's first
    decode step (the instant's arrivals come before its starts, and prefill before decode); during a
    prefill iteration (2.0) at its end."""
    run = _next_to_q0(arrival)
    assert run.start.tolist() == [0.0, start]
    assert run.prefill_end.tolist() == [4.0, start + 1.0]
    if start < 9.0:  # q1's one-second prefill delays q0's remaining decode steps by one second
        assert run.finish.tolist() == [10.0, start + 1.0]
    else:
        assert run.finish.tolist() == [9.0, 10.0]


def test_the_decode_boundaries_grow_with_the_context():
    """Steps of 0.5 + 0.125 * context: from a context of 4 they last 1, 1.125, 1.25, ...: boundaries 5,
    6.125, 7.375. An arrival at 6.125 exactly is admitted at 6.125."""
    cluster = Cluster.uniform(1, 100, a_miss=1.0, a_cached=0.0, decode_base=0.5, decode_per_context=0.125)
    assert _next_to_q0(6.125, cluster=cluster).start.tolist() == [0.0, 6.125]
    assert _next_to_q0(6.0, cluster=cluster).start.tolist() == [0.0, 6.125]


def test_an_arrival_that_cannot_be_admitted_leaves_the_decode_run_alone():
    """q1's 2 new tokens fit next to q0's 4 in B = 6 exactly (admitted at the boundary at 6), not in B = 5
    (it waits for q0 to finish, and q0 decodes in one run: one service time of 5 s)."""
    fits = _next_to_q0(6.0, tokens=(9, 10), cluster=Cluster.uniform(1, 6, a_miss=1.0, decode_base=1.0))
    assert fits.start.tolist() == [0.0, 6.0] and fits.service == [[4.0, 2.0, 2.0, 3.0]]
    full = _next_to_q0(6.0, tokens=(9, 10), cluster=Cluster.uniform(1, 5, a_miss=1.0, decode_base=1.0))
    assert full.start.tolist() == [0.0, 9.0] and full.service == [[4.0, 5.0, 2.0]]


def test_an_arrival_behind_a_waiting_head_leaves_the_decode_run_alone():
    """q1 (2 new tokens, B = 5) cannot be admitted next to q0 and waits; q2 (1 token, would fit) arrives
    at 6.0 behind it and waits too (head of line): q0's decode run is not cut."""
    w = workload([([1, 2, 3, 4], 0, 5), ([9, 10], 5.5, 0), ([11], 6.0, 0)])
    run = simulate(w, Cluster.uniform(1, 5, a_miss=1.0, decode_base=1.0), "round-robin", "lru", engine="continuous")
    assert run.start.tolist() == [0.0, 9.0, 9.0]
    assert run.service == [[4.0, 5.0, 3.0]]


def test_a_prompt_that_fills_the_chunk_exactly_is_not_cut_and_leaves_no_room():
    """Chunk 4: q0's 4 missed tokens take the whole chunk (one iteration, prefill end 4), and q1 waits for
    the next iteration; with chunk 5 q1 joins the first one (its 2 tokens cut: 1 now, 1 next)."""
    w = workload([([1, 2, 3, 4], 0, 0), ([9, 10], 0, 0)])
    cluster = Cluster.uniform(1, 100, a_miss=1.0)
    exact = simulate(w, cluster, "round-robin", "lru", engine="continuous", chunk_size=4)
    assert exact.start.tolist() == [0.0, 4.0] and exact.prefill_end.tolist() == [4.0, 6.0]
    assert exact.service == [[4.0, 2.0]] and exact.engine_state["prefill_iterations"] == 2
    room = simulate(w, cluster, "round-robin", "lru", engine="continuous", chunk_size=5)
    assert room.start.tolist() == [0.0, 0.0] and room.prefill_end.tolist() == [5.0, 6.0]


def test_the_continuous_engine_refuses_a_block_engine_in_one_line():
    w = generate("gsp", {"groups": 2, "prompts": 2, "lengths": [40]}, seed=0)
    with pytest.raises(InputError, match=r"^policy 'vllm' runs on the batch engine only, not the continuous one$"):
        simulate(w, l40(1, 700), "round-robin", "vllm", engine="continuous")
