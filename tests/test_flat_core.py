"""The compiled flat cores against the per-edge Python policies and FIF, hit for hit (and, for FIF,
token for token in the final cache), on random flat workloads: every query one radix edge off the root,
edges of one to three tokens, batch sizes 1 to 3, budgets from the footprint up, with evictions."""

import numpy as np
import pytest

from kvtheory import Workload
from kvtheory.model.batches import batches
from kvtheory.optimum.fif import FurthestInFuture, run_fif
from kvtheory.optimum.flat_fif import run_flat_fif
from kvtheory.policies import policy_class
from kvtheory.policies.flat_core import flat_trie_arrays
from kvtheory.simulate import drive, run_policy


def _flat_instances(seed: int, count: int, max_edge: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        pages = int(rng.integers(2, 12))
        lengths = rng.integers(1, max_edge + 1, size=pages)
        edges = [[p * 100 + i for i in range(int(lengths[p]))] for p in range(pages)]
        queries = [edges[int(rng.integers(0, pages))] for _ in range(int(rng.integers(1, 60)))]
        batch = int(rng.integers(1, 4))
        need = batch * max(len(q) for q in queries)
        yield Workload.from_token_lists(queries), int(rng.integers(need, need + 8)), batch


def _per_edge_hits(workload, budget, name, batch):
    cls = policy_class(name)
    return drive(workload, budget, cls(workload.trie, budget), name, batch, None).query_hits


@pytest.mark.parametrize(("name", "max_edge"), [("lru", 3), ("token-lru", 1), ("fifo", 1)])
def test_radix_core_matches_per_edge_policy(name, max_edge):
    evicted_somewhere = False
    for workload, budget, batch in _flat_instances(7, 150, max_edge):
        assert flat_trie_arrays(workload.trie) is not None
        assert policy_class(name).run_compiled(workload.trie, budget, batch) is not None
        fast = run_policy(workload, budget, name, batch=batch)
        slow = _per_edge_hits(workload, budget, name, batch)
        assert fast.query_hits.tolist() == slow.tolist()
        evicted_somewhere |= workload.trie.distinct_tokens > budget
    assert evicted_somewhere


def test_radix_core_not_used_where_it_does_not_apply():
    nested = Workload.from_token_lists([[1, 2], [1, 3], [1]])
    assert policy_class("lru").run_compiled(nested.trie, 4, 1) is None
    long_edges = Workload.from_token_lists([[1, 2], [3, 4]])
    assert policy_class("token-lru").run_compiled(long_edges.trie, 4, 1) is None
    assert policy_class("rlt").run_compiled(long_edges.trie, 4, 1) is None


def test_fif_core_matches_per_edge_fif():
    for workload, budget, batch in _flat_instances(11, 200, 3):
        fif = FurthestInFuture(workload.trie, budget, batches(len(workload), batch))
        slow = [h for group in batches(len(workload), batch) for h in fif.serve(group)]
        fast = run_fif(workload, budget, batch=batch)
        assert fast.query_hits.tolist() == slow
        kept = run_flat_fif(workload.trie, budget, batch)[1]
        assert {v: int(k) for v, k in enumerate(kept) if k} == fif.kept()
