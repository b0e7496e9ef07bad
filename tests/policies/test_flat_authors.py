"""rlt-authors streamed over flat traces (kvtheory.policies.compiled.flat_authors) against its compiled core on the
whole trie and its per-edge class, hit for hit from the same seed: random oracleGeneral files read in small
chunks (so that the per-node state, the id table and the Fenwick tree grow and are renumbered mid-run), ids in
an order unlike their first appearance, several seeds; and run_policy streams it through the dispatcher."""

import numpy as np
import pytest
from flat_traces import random_traces, write_oracle_general

from kvtheory.model.traces import flat as flat_module
from kvtheory.model.traces.flat import read_oracle_general
from kvtheory.model.workload import Workload
from kvtheory.policies import policy_class
from kvtheory.policies.dispatch import compiled_object
from kvtheory.policies.flat_streams import stream_authors
from kvtheory.simulate import run_policy


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_streamed_hits_equal_the_compiled_core(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(flat_module, "CHUNK_RECORDS", 97)
    cls = policy_class("rlt-authors")
    path = tmp_path / "t.oracleGeneral"
    rules, draws = set(), 0
    for ids, budget in random_traces(seed, 16):
        write_oracle_general(path, ids)
        workload = read_oracle_general(path)
        core = compiled_object(cls, workload.trie, budget, seed=seed)
        expected = core.serve_all(1)
        total, hits = stream_authors(workload.queries.id_chunks(), budget, seed=seed, query_hits=True)
        assert hits.tolist() == expected.tolist() and total == int(expected.sum())
        rules |= {rule for rule, count in core.phase_starts.items() if count}
        draws += budget > 1 and workload.trie.n_nodes - 1 > budget  # evictions that draw among candidates
    assert draws and {"P1", "R1"} <= rules


@pytest.mark.parametrize("budget", [1, 2, 3, 5, 40, 1100])
def test_a_streamed_run_equals_the_per_edge_run_from_the_same_seed(tmp_path, budget):
    """Every budget from the one where each miss starts a phase to one past the Fenwick tree's first length
    (1,024 stamps: 3,000 misses renumber it several times)."""
    ids = np.random.default_rng(budget).integers(-1500, 1500, size=6000)
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, ids)
    whole = Workload.from_token_lists([[x] for x in ids.tolist()])
    runs = []
    for seed in (0, 1, 2):
        streamed = run_policy(read_oracle_general(path), budget, "rlt-authors", seed=seed, backend="compiled")
        assert streamed.query_hits is None  # streamed: no per-query array
        assert streamed.to_dict() == run_policy(whole, budget, "rlt-authors", seed=seed, backend="python").to_dict()
        runs.append(streamed.hits)
    assert budget == 1 or len(set(runs)) > 1  # the seed reaches the streamed run (B = 1 draws nothing)


def test_no_room_at_all_is_the_cores_error(tmp_path):
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, np.array([3, 1, 2]))
    with pytest.raises(RuntimeError, match="^nothing left to evict: the batch footprint exceeds the budget$"):
        stream_authors(read_oracle_general(path).queries.id_chunks(), 0, seed=0)


def test_a_phase_that_starts_on_a_hit_keeps_the_hit_node_out_of_the_draws(tmp_path):
    """Rule P1 on a hit with marked_count = B - 1 >= 128: the many marks are cleared by rebuilding the tree in one
    pass, which must leave the node just marked (an old stamp, not the newest) out of the candidates. B = 200:
    ids 1..200 fill the cache (the 200th mark starts a phase), 1..199 hit (the 199th starts one on a hit), 30
    new ids evict by draws over the 199 others, then 1..200 again. A core that let node 199 in would differ
    only where a draw picks the newest candidate (about 1 in 6 seeds): 40 seeds."""
    budget = 200
    ids = np.concatenate([np.arange(1, 201), np.arange(1, 200), np.arange(1000, 1030), np.arange(1, 201)])
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, ids)
    whole = Workload.from_token_lists([[x] for x in ids.tolist()])
    for seed in range(40):
        _, hits = stream_authors(read_oracle_general(path).queries.id_chunks(), budget, seed=seed, query_hits=True)
        python = run_policy(whole, budget, "rlt-authors", seed=seed, backend="python")
        assert hits.tolist() == list(python.query_hits), seed
