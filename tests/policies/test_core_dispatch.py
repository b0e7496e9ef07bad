"""The one dispatcher (kvtheory.policies.dispatch): the engine comes from an explicit ``backend`` and the
run's size, never from what the process has imported; every entry point (run_policy, run_fif, ``create``)
gives the same hits on either engine, on random tries, batch sizes 1 to 3 and both eviction amounts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import BATCHED_BOUNDARIES, UNBATCHED_BOUNDARIES, boundary_examples, instances

from kvtheory import ONLINE_POLICIES, InputError, Workload, batches, run_fif, run_policy
from kvtheory.policies import dispatch
from kvtheory.policies.base import EVICT_AMOUNTS

#: the policies with compiled cores and both eviction amounts: every one but vllm, a block engine (vLLM's block
#: pool, tests/policies/test_vllm.py), which has no compiled core and evicts only what its allocation lacks
COMPILED = {name: cls for name, cls in ONLINE_POLICIES.items() if not cls.block_engine}

ROOT = Path(__file__).resolve().parents[2]


def _served(policy, workload, batch: int) -> list[int]:
    """The hits of every batch, each a Python int (they go into records and JSON as counts of tokens)."""
    hits = [h for group in batches(len(workload), batch) for h in policy.serve(group)]
    assert all(type(h) is int for h in hits), hits
    return hits


def test_nothing_in_the_policies_or_optima_reads_what_the_process_has_imported():
    found = subprocess.run(
        ["grep", "-rn", "sys.modules", "kvtheory/policies", "kvtheory/optimum"], cwd=ROOT, capture_output=True
    )
    assert found.returncode == 1 and not found.stdout, found.stdout.decode()


def test_a_job_resolves_auto_once_from_its_whole_size():
    q, t = dispatch.CORE_MIN_QUERIES, dispatch.CORE_MIN_TOKENS
    assert dispatch.job_backend("auto", q - 1, t - 1) == "python"
    assert dispatch.job_backend("auto", q) == dispatch.job_backend("auto", 1, t) == dispatch.PREFER_COMPILED
    assert dispatch.job_backend("python", 10 * q) == "python" and dispatch.job_backend("compiled", 1) == "compiled"
    with pytest.raises(InputError, match="unknown backend 'fast'"):
        dispatch.job_backend("fast", 1)


def test_prefer_compiled_takes_a_core_where_there_is_one_and_the_per_edge_class_elsewhere():
    from kvtheory.policies import PriorityRule

    class NewestFirst(PriorityRule):  # a plug-in: no compiled core
        name = "newest-first-dispatch"

        def priority(self, leaf):
            return -leaf.last_access

    workload = Workload.from_token_lists([[1, 2], [1, 3], [4], [1, 2], [5, 6]])
    for cls in (ONLINE_POLICIES["lru"], NewestFirst):
        made = cls.create(workload.trie, 3, backend=dispatch.PREFER_COMPILED)
        assert (type(made) is cls) == (cls is NewestFirst)
        assert _served(made, workload, 1) == _served(cls(workload.trie, 3), workload, 1)
    with pytest.raises(InputError, match="has no compiled engine"):
        NewestFirst.create(workload.trie, 3, backend="compiled")


def test_auto_takes_a_core_from_its_thresholds_exactly():
    """long_enough at each boundary: CORE_MIN_QUERIES queries, or ``min_tokens`` tokens where given (and no
    token threshold where none is)."""
    q = dispatch.CORE_MIN_QUERIES
    assert not dispatch.long_enough(q - 1) and dispatch.long_enough(q)
    assert not dispatch.long_enough(1, 9, min_tokens=10) and dispatch.long_enough(1, 10, min_tokens=10)
    assert not dispatch.long_enough(1, 10**15)


def test_each_family_is_asked_with_its_own_token_threshold(monkeypatch):
    """The radix and LFU families count queries only; the samplers from CORE_MIN_TOKENS tokens, rlt-authors
    from CORE_MIN_DRAWN_TOKENS; each at its exact boundary, through ``create`` under "auto"."""
    expected = {
        "lru": None,
        "token-lru": None,
        "fifo": None,
        "lfu": None,
        "rlt": dispatch.CORE_MIN_TOKENS,
        "random-leaf": dispatch.CORE_MIN_TOKENS,
        "rlt-authors": dispatch.CORE_MIN_DRAWN_TOKENS,
    }
    assert {name: cls.compiled_min_tokens for name, cls in COMPILED.items()} == expected
    workload = Workload.from_token_lists([[1, 2], [1, 3, 4], [5]])
    tokens = workload.trie.sequence_tokens
    for name, cls in COMPILED.items():
        if expected[name] is None:
            continue
        monkeypatch.setattr(cls, "compiled_min_tokens", tokens + 1)
        assert type(cls.create(workload.trie, 5, seed=0)) is cls, name
        monkeypatch.setattr(cls, "compiled_min_tokens", tokens)
        assert type(cls.create(workload.trie, 5, seed=0)) is not cls, name
    monkeypatch.undo()  # the token thresholds as they were
    monkeypatch.setattr(dispatch, "CORE_MIN_QUERIES", 4)
    assert all(type(cls.create(workload.trie, 5, seed=0)) is cls for cls in ONLINE_POLICIES.values())
    monkeypatch.setattr(dispatch, "CORE_MIN_QUERIES", 3)
    assert not any(type(cls.create(workload.trie, 5, seed=0)) is cls for cls in COMPILED.values())


def test_the_backend_is_checked_word_for_word():
    workload = Workload.from_token_lists([[1], [2]])
    message = r"^unknown backend 'numba'; known: auto, python, compiled$"
    with pytest.raises(InputError, match=message):
        run_policy(workload, 2, "lru", backend="numba")
    with pytest.raises(InputError, match=message):
        run_fif(workload, 2, backend="numba")
    with pytest.raises(InputError, match=message):
        ONLINE_POLICIES["lru"].create(workload.trie, 2, backend="numba")


@settings(max_examples=40)
@given(instances(max_queries=10, max_batch=3), st.sampled_from(EVICT_AMOUNTS), st.integers(0, 3))
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, amount="allocation", seed=0)
def test_both_engines_give_the_same_hits_at_every_entry_point(instance, amount, seed):
    workload, budget, batch = instance
    fifs = [run_fif(workload, budget, batch=batch, backend=b) for b in ("compiled", "python")]
    assert fifs[0].query_hits.tolist() == fifs[1].query_hits.tolist() and fifs[0].to_dict() == fifs[1].to_dict()
    for name, cls in COMPILED.items():
        runs = [
            run_policy(workload, budget, name, batch=batch, seed=seed, evict_amount=amount, backend=b)
            for b in ("compiled", "python")
        ]
        assert runs[0].query_hits.tolist() == runs[1].query_hits.tolist(), name
        assert runs[0].to_dict() == runs[1].to_dict(), name
        for backend in ("compiled", "python"):
            policy = cls.create(workload.trie, budget, seed=seed, evict_amount=amount, backend=backend)
            assert _served(policy, workload, batch) == runs[0].query_hits.tolist(), (name, backend)
