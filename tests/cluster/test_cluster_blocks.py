"""The cluster simulation at block size b > 1 (kvtheory/cluster/blocks.py, docs/cluster.md §Blocks in the cluster).

Three independent checks: one worker's hits equal ``run_policy(..., block_size=b)``'s query for query (every online
policy, batch 1 and 2); with a budget that never evicts, every query's hits on any cluster behind any router are
b x the full blocks it shares with a prompt served before it on its worker (vllm: at most floor((L - 1) / b)
blocks), computed here from the token lists; and the prefill charged is a_cached h + a_miss (L - h) to the bit.
b = 1 is the token model's own path: tests/cluster/test_cluster_timing.py holds 71 stored runs to the bit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import run_cli

from kvtheory import Workload, write_workload
from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.costmodel import cost_model, gpu, model
from kvtheory.cluster.simulation import simulate
from kvtheory.errors import InputError
from kvtheory.policies import ONLINE_POLICIES
from kvtheory.simulate import run_policy
from kvtheory.workloads import generate

#: (workload, block size): short queries with much sharing and queries shorter than b; prompts whose lengths
#: are no multiple of b; a block trace (hash ids of 16 tokens) read at a cache block of 8
CASES = {
    "random-tree": (lambda: generate("random-tree", {"queries": 40, "max_length": 12, "alphabet": 2}, seed=5), 3),
    "gsp": (lambda: generate("gsp", {"groups": 3, "prompts": 5, "lengths": [40, 72, 100]}, seed=2), 16),
    "multiturn": (lambda: generate("multiturn", {"conversations": 5, "user_len": 20, "turns": [2, 3]}, seed=3), 8),
    "chat-blocks": (
        lambda: generate("chat-blocks", {"conversations": 6, "block_size": 16, "system_len": 40}, seed=4),
        8,
    ),
}


def common_blocks(a: list[int], c: list[int], b: int) -> int:
    """The full blocks of b tokens two prompts share: floor(their common prefix / b)."""
    n = 0
    for x, y in zip(a, c):
        if x != y:
            break
        n += 1
    return n // b


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("batch", [1, 2])
def test_one_worker_hits_equal_run_policy_query_for_query(case, batch):
    """Every query arrives at 0, so one worker serves batches of consecutive queries as run_policy does; the
    budget leaves room for two queries' blocks and no more than a few, so policies evict."""
    make, b = CASES[case]
    w = make()
    lengths = np.array([q.length for q in w])
    if batch > 1 and (lengths < b).any():
        pytest.skip("run_policy takes batches of equal size: it refuses a query without a full block at batch > 1")
    slots = batch * int(-(-lengths.max() // b)) + 2
    budget = b * slots
    for name in ONLINE_POLICIES:
        expected = run_policy(w, budget, name, batch=batch, seed=7, block_size=b)
        got = simulate(w, Cluster.uniform(1, budget), "round-robin", name, batch=batch, seed=7, rate=float("inf"),
                       block_size=b)  # fmt: skip
        assert got.hits.tolist() == expected.query_hits.tolist(), name
        assert got.to_dict()["block_size"] == b


ROUTERS = [("round-robin", False), ("cache-aware", False), ("lbgr", False), ("least-load", False),
           ("cache-aware", True), ("lbgr", True)]  # fmt: skip


@pytest.mark.parametrize("case", ["random-tree", "gsp", "chat-blocks"])
@pytest.mark.parametrize("policy", ["lru", "vllm"])
def test_hits_without_eviction_are_the_blocks_shared_with_earlier_prompts_on_the_worker(case, policy):
    """With B at least every token, nothing is evicted: query j on worker i hits b x max over the prompts served
    before it on i of their common full blocks, capped at n_j (vllm: at floor((L_j - 1) / b), its last-token
    rule), whatever the router; each service takes a decode step, so starts on a worker are strictly ordered."""
    make, b = CASES[case]
    w = make()
    tokens = [q.tokens.tolist() for q in w]
    budget = b * -(-sum(len(t) for t in tokens) // b)
    cluster = Cluster.uniform(3, budget, a_miss=1.0, a_cached=0.25, decode_base=0.5)
    for router, oracle in ROUTERS:
        r = simulate(w, cluster, router, policy, seed=1, rate=2.0, output_len=1, oracle=oracle, block_size=b)
        for j, t in enumerate(tokens):
            before = [k for k in range(len(w)) if r.worker[k] == r.worker[j] and r.start[k] < r.start[j]]
            shared = max((common_blocks(t, tokens[k], b) for k in before), default=0)
            cap = (len(t) - 1) // b if policy == "vllm" else len(t) // b
            assert r.hits[j] == b * min(shared, cap), (router, oracle, j)


@pytest.mark.parametrize("policy", ["lru", "rlt", "vllm"])
def test_prefill_charges_the_recomputed_tokens(policy):
    """Batch 1, every query alone: prefill end - start = a_cached h + a_miss (L - h) to the bit (binary-fraction
    coefficients), h a whole number of blocks, and some query hits with a partial last block it recomputes."""
    make, b = CASES["gsp"]
    w = make()
    slots = int(-(-max(q.length for q in w) // b)) + 3
    cluster = Cluster.uniform(2, b * slots, a_miss=1.0, a_cached=0.25, decode_base=0.5)
    r = simulate(w, cluster, "cache-aware", policy, seed=2, rate=4.0, output_len=2, block_size=b)
    assert (r.hits % b == 0).all() and (r.hits <= b * (r.length // b)).all()
    hits, lengths = r.hits.tolist(), r.length.tolist()
    assert r.prefill_end.tolist() == [
        s + (0.25 * h + 1.0 * (n - h)) for s, h, n in zip(r.start.tolist(), hits, lengths)
    ]
    assert ((r.hits > 0) & (r.length % b > 0)).any()


def test_block_size_one_is_the_token_model():
    """block_size=1 is the default run, record for record, and its record has no block_size field."""
    make, _ = CASES["gsp"]
    w = make()
    cluster = Cluster.uniform(2, 400, a_miss=1.0, a_cached=0.25)
    default = simulate(w, cluster, "lbgr", "lru", seed=3, rate=5.0).to_dict()
    assert simulate(w, cluster, "lbgr", "lru", seed=3, rate=5.0, block_size=1).to_dict() == default
    assert "block_size" not in default


def test_bad_block_settings_are_refused_in_one_line(capsys, tmp_path):
    make, _ = CASES["gsp"]
    w = make()
    path = tmp_path / "w.jsonl"
    write_workload(w, path)
    cluster = ["--workers", 2, "--router", "lbgr", "--eviction", "vllm"]
    code, _, err = run_cli(capsys, "route", "--workload", path, *cluster, "--budget", 1000, "--block-size", 16)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.strip().endswith("budget B = 1000 is not a multiple of the block size b = 16")
    code, out, err = run_cli(
        capsys, "route", "--workload", path, *cluster, "--budget", 1600, "--block-size", 16, "--json"
    )
    assert code == 0 and '"block_size":16' in out
    for bad in (
        ["--block-size", 0],
        ["--block-size", 16, "--engine", "continuous"],
        ["--block-size", 16, "--budget", 64],
    ):
        argv = ["--budget", 1600, *bad] if "--budget" not in bad else bad
        code, _, err = run_cli(capsys, "route", "--workload", path, *cluster, *argv)
        assert code == 2 and len(err.strip().splitlines()) == 1, (bad, err)
    small = Cluster.uniform(1, 16 * 6)  # the longest prompt (100 tokens) has 6 full blocks and needs 7 in vLLM
    assert simulate(w, small, "round-robin", "lru", rate=1.0, block_size=16).hits.size == len(w)
    with pytest.raises(
        InputError, match="allocates 7 blocks of b = 16 tokens, more than worker 0's B / b = 96 / 16 = 6"
    ):
        simulate(w, small, "round-robin", "vllm", rate=1.0, block_size=16)
    for bad in (0, -4, True, 2.0):
        with pytest.raises(InputError, match="block size must be a positive number of tokens"):
            simulate(w, small, "round-robin", "lru", rate=1.0, block_size=bad)


def test_a_query_shorter_than_a_block_hits_nothing_and_costs_its_tokens():
    w = Workload.from_token_lists([[1, 2, 3, 4, 5], [1, 2], [1, 2, 3, 4, 6], [1, 2]])
    r = simulate(w, Cluster.uniform(1, 8), "round-robin", "lru", rate=float("inf"), block_size=4)
    assert r.hits.tolist() == [0, 0, 4, 0]
    assert r.busy.tolist() == [5 + 2 + 1 + 2]


def test_a_batch_is_cut_where_its_blocks_would_overflow():
    """vllm: prompts of 73 and 101 tokens at b = 16 allocate 5 or 7 blocks, so with B / b = 7 no two fit together
    (5 + 5 > 7) and at batch 3 every batch is one query: the batch-1 run's hits. lru at b = 2, B / b = 3, by hand:
    q0 and q1 share 2 of their 3 blocks (union 4 > 3), q1 and q2 one (4 > 3), q2 and q3 one (union 3): batches
    [q0], [q1], [q2, q3]; q1 hits (1 2)(3 4), q2 and q3 hit (1 2) against the cache before their batch."""
    w = generate("gsp", {"groups": 3, "prompts": 5, "lengths": [72, 100]}, seed=2)
    got = simulate(w, Cluster.uniform(1, 16 * 7), "round-robin", "vllm", batch=3, seed=1, rate=float("inf"),
                   block_size=16)  # fmt: skip
    assert got.hits.tolist() == run_policy(w, 16 * 7, "vllm", seed=1, block_size=16).query_hits.tolist()
    assert len(got.service[0]) == len(w)
    w = Workload.from_token_lists([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 7, 8], [1, 2, 9, 9], [1, 2, 9, 8]])
    got = simulate(w, Cluster.uniform(1, 6), "round-robin", "lru", batch=3, rate=float("inf"), block_size=2)
    assert got.hits.tolist() == [0, 4, 2, 2]
    assert got.start.tolist() == [0.0, 6.0, 8.0, 8.0]


def test_route_rounds_the_cost_models_budget_down_to_whole_blocks(capsys, tmp_path):
    """Without --budget the cost model's B (any number of tokens) becomes b x floor(B / b), as vLLM sizes its pool."""
    path = tmp_path / "w.jsonl"
    write_workload(CASES["gsp"][0](), path)
    argv = ["--workers", 2, "--router", "cache-aware", "--eviction", "vllm", "--gpu", "H200", "--model", "Llama-3.1-8B"]
    code, out, _ = run_cli(capsys, "route", "--workload", path, *argv, "--block-size", 16, "--json")
    budget = cost_model(gpu("H200"), model("Llama-3.1-8B")).budget
    assert budget % 16 and code == 0
    assert [w["budget"] for w in json.loads(out)["cluster"]] == [16 * (budget // 16)] * 2


def test_routers_match_tokens_whatever_the_block_size():
    """A router does not know the engines' block size: on gsp, whose prompts share half their tokens plus one
    (a match rate just over cache-aware's 0.5 in tokens, just under it in whole blocks of 16), cache-aware routes
    by match as often at b = 16 as at b = 1, and with no eviction its decisions are the same."""
    w = generate("gsp", {"groups": 8, "prompts": 8}, seed=0)
    cluster = Cluster.uniform(4, 16 * 4000)
    states = [
        simulate(w, cluster, "cache-aware", policy, seed=0, rate=12.0, block_size=b).to_dict()["router_state"]
        for policy, b in (("lru", 1), ("vllm", 16))
    ]
    assert states[0]["decisions"]["match"] > len(w) // 2
    assert states[0] == states[1]
