"""FIF's compiled core (kvtheory/optimum/compiled_fif.py) against the per-edge FurthestInFuture, hit for
hit and token for token in the final cache: random prefix-tree workloads at batch sizes 1 to 4 with the
boundary instances, flat workloads, and long edges whose groups drain as wide bands over many levels."""

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import BATCHED_BOUNDARIES, UNBATCHED_BOUNDARIES, boundary_examples, deep_prefix_queries, instances

from kvtheory import Workload, run_fif
from kvtheory.model.batches import batches
from kvtheory.optimum.fif import FurthestInFuture, run_compiled_fif


def _assert_same(workload, budget, batch):
    fif = FurthestInFuture(workload.trie, budget, batches(len(workload), batch))
    expected = [h for group in batches(len(workload), batch) for h in fif.serve(group)]
    hits, kept = run_compiled_fif(workload.trie, budget, batch)
    assert hits.tolist() == expected
    assert {v: int(k) for v, k in enumerate(kept) if k} == fif.kept()
    assert run_fif(workload, budget, batch=batch).query_hits.tolist() == expected


# The kernel is compiled (or loaded from numba's cache) on its first call, inside the first example:
# no per-example deadline here.
@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(instance=instances(max_queries=16, max_length=7, alphabet=3, max_batch=4))
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES)
def test_compiled_fif_matches_per_edge_fif(instance):
    _assert_same(*instance)


def test_flat_workloads():
    rng = np.random.default_rng(11)
    for _ in range(150):
        pages = int(rng.integers(2, 12))
        lengths = rng.integers(1, 4, size=pages)
        edges = [[p * 100 + i for i in range(int(lengths[p]))] for p in range(pages)]
        queries = [edges[int(rng.integers(0, pages))] for _ in range(int(rng.integers(1, 60)))]
        batch = int(rng.integers(1, 4))
        need = batch * max(len(q) for q in queries)
        _assert_same(Workload.from_token_lists(queries), int(rng.integers(need, need + 8)), batch)


@pytest.mark.parametrize("seed", range(6))
def test_long_edges_drain_as_bands(seed):
    """Shared prefixes with long tails of equal tokens: many edges of one group (above all the never
    requested again) at equal depths, lowered together over many levels, and part levels to the larger ids."""
    rng = np.random.default_rng(seed)
    prefixes = [rng.integers(0, 4, size=int(rng.integers(1, 30))).tolist() for _ in range(12)]
    queries = [
        prefixes[int(rng.integers(0, 12))]
        + [int(rng.integers(0, 3))] * int(rng.integers(0, 60))
        + rng.integers(0, 2, size=int(rng.integers(0, 5))).tolist()
        for _ in range(150)
    ]
    workload = Workload.from_token_lists(queries)
    for batch in (1, 2, 3):
        _assert_same(workload, batch * max(len(q) for q in queries) + int(rng.integers(0, 100)), batch)


@pytest.mark.parametrize("batch", [1, 2])
def test_a_long_run_drops_its_stale_heap_entries(batch):
    """Thousands of queries over deep shared prefixes: every batch pushes an entry per path node, so the heap
    passes its compaction threshold (1,024 entries, then twice what survived) many times, and the entries it keeps
    are exactly the valid ones, at small and at large budgets."""
    workload = Workload.from_token_lists(deep_prefix_queries(np.random.default_rng(3), 2500))
    trie = workload.trie
    assert sum(len(trie.path(j)) for j in range(len(workload))) > 8 * 1024  # pushes: one per path node
    longest = batch * workload.max_length
    for budget in (longest, longest + 40, trie.distinct_tokens // 2):
        _assert_same(workload, budget, batch)


def test_a_batch_larger_than_the_budget_is_an_error():
    workload = Workload.from_token_lists([[1, 1], [2, 2, 2]])
    with pytest.raises(RuntimeError, match="nothing left to evict"):
        run_compiled_fif(workload.trie, 2, 1)
