"""The entry points a short run takes in a fresh process, where numba is not loaded and no compiled core pays
off (kvtheory.policies.compiled.core_pays_off): run_policy, run_fif and ``create`` then serve through the
per-edge classes. This test process has numba loaded (tests/conftest.py), so every other test reaches the
cores; here ``core_pays_off`` is switched off wherever it is consulted, and each entry point must give what
its core gives: the same hits for every policy and FIF, on random tries, batch sizes 1 to 3 and both
eviction amounts."""

from __future__ import annotations

from core_switch import per_edge_paths
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import BATCHED_BOUNDARIES, UNBATCHED_BOUNDARIES, boundary_examples, instances

from kvtheory import ONLINE_POLICIES, Workload, batches, run_fif, run_policy
from kvtheory.policies.base import EVICT_AMOUNTS


def _served(policy, workload, batch: int) -> list[int]:
    """The hits of every batch, each a Python int (they go into records and JSON as counts of tokens)."""
    hits = [h for group in batches(len(workload), batch) for h in policy.serve(group)]
    assert all(type(h) is int for h in hits), hits
    return hits


def test_the_switch_reaches_every_entry_point():
    """Without the switch a core serves (numba is loaded); with it, every whole run and the radix and LFU
    families' ``create`` take the per-edge class. (The samplers' and rlt-authors' ``create`` always serve
    through their cores, whatever the length of the run.)"""
    workload = Workload.from_token_lists([[1, 2], [1, 3], [1, 2]])
    per_edge_create = ("lru", "token-lru", "fifo", "lfu")
    for name in (*per_edge_create, "rlt", "random-leaf", "rlt-authors"):
        assert ONLINE_POLICIES[name].run_compiled(workload.trie, 4, 1, 0, "shortfall") is not None, name
    with per_edge_paths():
        for cls in ONLINE_POLICIES.values():
            assert cls.run_compiled(workload.trie, 4, 1, 0, "shortfall") is None, cls.name
        for name in per_edge_create:
            assert type(ONLINE_POLICIES[name].create(workload.trie, 4, seed=0)) is ONLINE_POLICIES[name], name


@settings(max_examples=40)
@given(instances(max_queries=10, max_batch=3), st.sampled_from(EVICT_AMOUNTS), st.integers(0, 3))
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, amount="allocation", seed=0)
def test_short_runs_give_what_the_cores_give(instance, amount, seed):
    workload, budget, batch = instance
    expected_fif = run_fif(workload, budget, batch=batch)
    expected = {
        name: run_policy(workload, budget, name, batch=batch, seed=seed, evict_amount=amount)
        for name in ONLINE_POLICIES
    }
    made = {
        name: _served(cls.create(workload.trie, budget, seed=seed, evict_amount=amount), workload, batch)
        for name, cls in ONLINE_POLICIES.items()
    }
    with per_edge_paths():
        fif = run_fif(workload, budget, batch=batch)  # the record too: policy name, counts, seed
        assert (fif.query_hits.tolist(), fif.to_dict()) == (expected_fif.query_hits.tolist(), expected_fif.to_dict())
        for name, cls in ONLINE_POLICIES.items():
            run = run_policy(workload, budget, name, batch=batch, seed=seed, evict_amount=amount)
            assert run.query_hits.tolist() == expected[name].query_hits.tolist(), name
            assert run.to_dict() == expected[name].to_dict(), name
            policy = cls.create(workload.trie, budget, seed=seed, evict_amount=amount)
            assert _served(policy, workload, batch) == made[name] == expected[name].query_hits.tolist(), name
