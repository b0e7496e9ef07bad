"""RLT and random-leaf streamed over flat traces (kvtheory.policies.compiled.flat_sampler) against the compiled
sampler core on the whole trie, hit for hit from the same seed: random oracleGeneral files read in small chunks
(so that the per-node state and the id table grow mid-run), ids in an order unlike their first appearance
(negative and extreme ones too), several seeds; and run_policy streams them through the dispatcher."""

import numpy as np
import pytest
from flat_traces import random_traces, write_oracle_general

from kvtheory.model.traces import flat as flat_module
from kvtheory.model.traces.flat import read_oracle_general
from kvtheory.model.workload import Workload
from kvtheory.policies import policy_class
from kvtheory.policies.dispatch import compiled_object
from kvtheory.policies.flat_streams import stream_sampler
from kvtheory.simulate import run_policy


@pytest.mark.parametrize("policy", ["rlt", "random-leaf"])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_streamed_hits_equal_the_compiled_sampler(tmp_path, monkeypatch, policy, seed):
    monkeypatch.setattr(flat_module, "CHUNK_RECORDS", 97)
    cls = policy_class(policy)
    path = tmp_path / "t.oracleGeneral"
    phases = draws = 0
    for ids, budget in random_traces(seed, 16):
        write_oracle_general(path, ids)
        workload = read_oracle_general(path)
        core = compiled_object(cls, workload.trie, budget, seed=seed)
        expected = core.serve_all(1)
        total, hits = stream_sampler(
            workload.queries.id_chunks(), budget, marking=cls.marking, seed=seed, query_hits=True
        )
        assert hits.tolist() == expected.tolist() and total == int(expected.sum())
        phases = max(phases, core.phases)
        draws += budget > 1 and workload.trie.n_nodes - 1 > budget  # evictions that draw among candidates
    assert draws and (phases > 2 or policy == "random-leaf")


@pytest.mark.parametrize("policy", ["rlt", "random-leaf"])
def test_a_streamed_run_equals_the_per_edge_run_from_the_same_seed(tmp_path, policy):
    ids = np.random.default_rng(8).integers(-400, 400, size=3000)
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, ids)
    whole = Workload.from_token_lists([[x] for x in ids.tolist()])
    runs = []
    for seed in (0, 1, 2):
        streamed = run_policy(read_oracle_general(path), 60, policy, seed=seed, backend="compiled")
        assert streamed.query_hits is None  # streamed: no per-query array
        assert streamed.to_dict() == run_policy(whole, 60, policy, seed=seed, backend="python").to_dict()
        runs.append(streamed.hits)
    assert len(set(runs)) > 1  # the seed reaches the streamed run


@pytest.mark.parametrize("marking", [True, False])
def test_no_room_at_all_is_the_cores_error(tmp_path, marking):
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, np.array([3, 1, 2]))
    with pytest.raises(RuntimeError, match="^nothing left to evict: the batch footprint exceeds the budget$"):
        stream_sampler(read_oracle_general(path).queries.id_chunks(), 0, marking=marking, seed=0)
