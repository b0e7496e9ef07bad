"""The streamed engines of flat traces (kvtheory.policies.compiled.flat_stream) against the general compiled
cores on the whole trie, hit for hit: random oracleGeneral files read in small chunks (so that batches of state,
the id table and the heap all grow mid-run), every radix policy and LFU at batch size 1; and the dispatcher
streams exactly the runs it names (an oracleGeneral file, batch size 1, a policy with a streamed core), and
gives a whole trie of one-token queries at batch size 1 the same cores."""

import numpy as np
import pytest
from flat_traces import random_traces, write_oracle_general

from kvtheory.model.traces import flat as flat_module
from kvtheory.model.traces.flat import read_oracle_general
from kvtheory.model.workload import Workload
from kvtheory.policies import dispatch, policy_class
from kvtheory.policies.dispatch import compiled_hits, compiled_object, streamed_hits
from kvtheory.policies.flat_streams import stream_run
from kvtheory.policies.lru import LeafLRU
from kvtheory.simulate import run_policy


@pytest.mark.parametrize("policy", ["lru", "token-lru", "fifo", "lfu"])
def test_streamed_hits_equal_the_general_core(tmp_path, monkeypatch, policy):
    monkeypatch.setattr(flat_module, "CHUNK_RECORDS", 97)
    path = tmp_path / "t.oracleGeneral"
    cls = policy_class(policy)
    evicted = False
    for ids, budget in random_traces(3, 25):
        write_oracle_general(path, ids)
        workload = read_oracle_general(path)
        trie = Workload.from_token_lists([[x] for x in ids.tolist()]).trie
        expected = compiled_object(cls, trie, budget).serve_all(1)
        kind = "lfu" if policy == "lfu" else "radix"
        chunks = workload.queries.id_chunks()
        total, hits = stream_run(chunks, budget, kind, refresh=getattr(cls, "refresh_on_hit", True), query_hits=True)
        assert hits.tolist() == expected.tolist() and total == int(expected.sum())
        evicted |= trie.n_nodes - 1 > budget
    assert evicted


@pytest.mark.parametrize("policy", ["lru", "token-lru", "fifo", "lfu", "rlt", "random-leaf", "rlt-authors"])
def test_one_token_tries_take_the_streamed_cores_at_batch_size_1_only(monkeypatch, policy):
    """compiled_hits serves a whole trie of one-token queries at batch size 1 with shortfall eviction by the
    streamed core (the trie's nodes as one chunk of ids), with the general core's hits from the same seed; any
    other run (batch size 2, allocation, a nested trie) takes the general core."""
    cls = policy_class(policy)
    rng = np.random.default_rng(11)
    one_token = Workload.from_token_lists([[int(x)] for x in rng.integers(-40, 40, size=600)]).trie
    nested = Workload.from_token_lists([[1, 2], [1, 3], [4]] * 20).trie
    streamed = []
    real = dispatch._streamed
    monkeypatch.setattr(dispatch, "_streamed", lambda *args, **kw: streamed.append(args[1]) or real(*args, **kw))
    for seed in range(3):
        hits = compiled_hits(cls, one_token, 25, 1, seed=seed, backend="compiled")
        expected = compiled_object(cls, one_token, 25, seed=seed).serve_all(1)
        assert hits.tolist() == expected.tolist()
    assert len(streamed) == 3
    for trie, batch, amount in ((one_token, 2, "shortfall"), (one_token, 1, "allocation"), (nested, 1, "shortfall")):
        hits = compiled_hits(cls, trie, 4, batch, seed=0, evict_amount=amount, backend="compiled")
        expected = compiled_object(cls, trie, 4, seed=0, evict_amount=amount).serve_all(batch)
        assert hits.tolist() == expected.tolist()
    assert len(streamed) == 3


@pytest.mark.parametrize("policy", ["lru", "token-lru", "fifo", "lfu"])
def test_a_streamed_run_equals_the_run_on_the_whole_workload(tmp_path, policy):
    ids = np.random.default_rng(5).integers(0, 300, size=2000)
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, ids)
    streamed = run_policy(read_oracle_general(path), 50, policy, backend="compiled")
    whole = run_policy(Workload.from_token_lists([[x] for x in ids.tolist()]), 50, policy, backend="python")
    assert streamed.query_hits is None  # streamed: no per-query array
    assert streamed.to_dict() == whole.to_dict()


def test_only_batch_size_1_runs_of_streamable_policies_on_oracle_general_files_stream(tmp_path):
    ids = np.arange(30) % 7
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, ids)
    workload = read_oracle_general(path)
    assert streamed_hits(LeafLRU, workload, 3, 1, backend="compiled") is not None
    assert streamed_hits(LeafLRU, workload, 3, 2, backend="compiled") is None  # batch size 2
    assert streamed_hits(LeafLRU, workload, 3, 1, "allocation", backend="compiled") is None
    assert streamed_hits(LeafLRU, workload, 3, 1, backend="python") is None
    assert streamed_hits(policy_class("rlt-authors"), workload, 3, 1, backend="compiled") is not None
    whole = Workload.from_token_lists([[x] for x in ids.tolist()])
    assert streamed_hits(LeafLRU, whole, 3, 1, backend="compiled") is None  # not a file read lazily

    class Renamed(LeafLRU):  # inherits the rule but did not opt in to the compiled core itself
        name = "renamed-lru"

    assert streamed_hits(Renamed, workload, 3, 1, backend="compiled") is None
