"""The compiled RLT / random-leaf core (kvtheory/policies/compiled/edge_cache.py) against the per-edge classes
(kvtheory/policies/edge_cache.py), hit for hit and draw for draw, on random tries, batch sizes 1 to 4,
several seeds, both eviction amounts: its whole run (``serve_all``) and its object served batch by
batch (``create``, the cluster's workers). Then the eviction amounts on scripted instances: allocation
frees the whole batch's missing tokens where shortfall frees the overflow, RLT starts a phase for it,
and both stop early only when nothing is left to evict."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import BATCHED_BOUNDARIES, UNBATCHED_BOUNDARIES, boundary_examples, instances

from kvtheory import InputError, Workload
from kvtheory.model.batches import batches
from kvtheory.policies import RandomizedLeafToken, RandomLeaf, dispatch, policy_class
from kvtheory.policies.compiled.edge_cache import CompiledLeafSampler
from kvtheory.policies.dispatch import compiled_object
from kvtheory.policies.edge_cache import LeafTokenSampler
from kvtheory.simulate import drive, run_policy

SAMPLERS = ("rlt", "random-leaf")
AMOUNTS = ("shortfall", "allocation")


def _serve_all(policy, workload, batch):
    hits = [h for group in batches(len(workload), batch) for h in policy.serve(group)]
    return hits, policy.kept(), policy.size


# The kernel is compiled (or loaded from numba's cache) on its first call, inside the first example:
# no per-example deadline here.
@settings(max_examples=150, deadline=None)
@given(
    instance=instances(max_queries=14, max_length=6, alphabet=3, max_batch=4),
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(SAMPLERS),
    amount=st.sampled_from(AMOUNTS),
)
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, seed=0, name="rlt", amount="allocation")
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, seed=1, name="random-leaf", amount="allocation")
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, seed=2, name="rlt", amount="shortfall")
def test_compiled_core_matches_per_edge_class_hit_for_hit(instance, seed, name, amount):
    workload, budget, batch = instance
    cls = policy_class(name)
    per_edge = cls(workload.trie, budget, seed=seed, evict_amount=amount)
    compiled = cls.create(workload.trie, budget, seed=seed, evict_amount=amount, backend="compiled")
    assert isinstance(compiled, CompiledLeafSampler) and not isinstance(per_edge, CompiledLeafSampler)
    expected = _serve_all(per_edge, workload, batch)
    assert _serve_all(compiled, workload, batch) == expected
    whole_run = compiled_object(cls, workload.trie, budget, seed=seed, evict_amount=amount).serve_all(batch)
    assert whole_run.tolist() == expected[0]
    if name == "rlt":
        assert compiled.phases == per_edge.phases
    assert all(compiled.cached_prefix(j) == per_edge.cached_prefix(j) for j in range(len(workload)))


@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("amount", AMOUNTS)
def test_long_runs_with_long_edges_and_many_blocks(name, amount):
    """Many evictions per batch over long edges (blocks cut mid-way, scanned and counted per-edge paths)."""
    rng = np.random.default_rng(23)
    prefixes = [rng.integers(0, 50, size=int(rng.integers(1, 40))).tolist() for _ in range(30)]
    queries = [
        prefixes[int(rng.integers(0, 30))] + rng.integers(0, 3, size=int(rng.integers(0, 300))).tolist()
        for _ in range(400)
    ]
    workload = Workload.from_token_lists(queries)
    for batch, seed in ((1, 4), (3, 5)):
        budget = 3 * max(len(q) for q in queries) + 200
        per_edge = policy_class(name)(workload.trie, budget, seed=seed, evict_amount=amount)
        expected = drive(workload, budget, per_edge, name, batch, seed).query_hits.tolist()
        fast = run_policy(workload, budget, name, batch=batch, seed=seed, evict_amount=amount, backend="compiled")
        assert fast.query_hits.tolist() == expected


def _both(cls, workload, budget, amount, seed=0):
    """The per-edge object and the compiled one."""
    return cls(workload.trie, budget, seed=seed, evict_amount=amount), cls.create(
        workload.trie, budget, seed=seed, evict_amount=amount, backend="compiled"
    )


@pytest.mark.parametrize("cls", [RandomizedLeafToken, RandomLeaf])
def test_allocation_frees_the_missing_tokens_not_just_the_overflow(cls):
    # 6 tokens cached, B = 7; [3, 3] misses 2 tokens and overflows by 1
    workload = Workload.from_token_lists([[1, 1, 1], [2, 2, 2], [3, 3]])
    for amount, size_after in (("shortfall", 7), ("allocation", 6)):
        for policy in _both(cls, workload, 7, amount):
            policy.serve([0])
            policy.serve([1])
            assert policy.size == 6
            assert policy.serve([2]) == [0]
            assert policy.size == size_after
            assert sum(policy.kept().values()) == size_after


@pytest.mark.parametrize("cls", [RandomizedLeafToken, RandomLeaf])
def test_allocation_stops_when_nothing_is_left_to_evict(cls):
    # [1, 1] cached, B = 4: [2, 2, 2, 2] misses 4 and overflows by 2; only the 2 cached tokens can go
    workload = Workload.from_token_lists([[1, 1], [2, 2, 2, 2]])
    for policy in _both(cls, workload, 4, "allocation"):
        policy.serve([0])
        assert policy.serve([1]) == [0]
        assert policy.kept() == {2: 4}
    # and the batch's own path is never evicted: [1, 1, 5, 5] misses 2 and overflows by 1; [3] goes, [1, 1]
    # stays although the allocation asked for one token more
    workload = Workload.from_token_lists([[1, 1], [3], [1, 1, 5, 5]])
    for policy in _both(cls, workload, 4, "allocation"):
        policy.serve([0])
        policy.serve([1])
        assert policy.serve([2]) == [2]
        assert policy.size == 4
        assert policy.cached_prefix(2) == 4 and policy.cached_prefix(1) == 0


def test_rlt_allocation_starts_a_phase_to_free_the_allocation():
    # [1, 1] and [2, 2] cached and marked, B = 5: [3, 3, 3] misses 3, overflows by 2; no unmarked leaf is
    # left, so a new phase starts, and allocation frees 3 tokens of the 4 unmarked
    workload = Workload.from_token_lists([[1, 1], [2, 2], [3, 3, 3]])
    for amount, size_after in (("shortfall", 5), ("allocation", 4)):
        for policy in _both(RandomizedLeafToken, workload, 5, amount):
            policy.serve([0])
            policy.serve([1])
            assert policy.phases == 1
            policy.serve([2])
            assert policy.phases == 2
            assert policy.size == size_after


@pytest.mark.parametrize("cls", [RandomizedLeafToken, RandomLeaf])
@pytest.mark.parametrize("amount", AMOUNTS)
def test_a_batch_larger_than_the_budget_is_an_error(cls, amount):
    workload = Workload.from_token_lists([[1, 1], [2, 2, 2]])
    for policy in _both(cls, workload, 2, amount):
        policy.serve([0])
        with pytest.raises(RuntimeError, match="nothing left to evict"):
            policy.serve([1])


def test_allocation_and_shortfall_differ_on_random_tries():
    """The amounts are not the same rule under two names: on batched random tries they part somewhere."""
    rng = np.random.default_rng(8)
    queries = [rng.integers(0, 3, size=int(rng.integers(1, 8))).tolist() for _ in range(300)]
    workload = Workload.from_token_lists(queries)
    for name in SAMPLERS:
        runs = [run_policy(workload, 16, name, batch=2, seed=1, evict_amount=a).misses for a in AMOUNTS]
        assert runs[0] != runs[1]


def test_a_subclass_that_does_not_opt_in_runs_per_edge(monkeypatch):
    monkeypatch.setattr(dispatch, "CORE_MIN_QUERIES", 1)  # "auto" would take a core for any run

    class Other(RandomLeaf):
        name = "other-leaf"

    workload = Workload.from_token_lists([[1, 2], [1, 3]])
    assert compiled_object(Other, workload.trie, 3, seed=0) is None
    assert type(Other.create(workload.trie, 3, seed=0, backend="auto")) is Other
    with pytest.raises(InputError, match="^policy 'other-leaf' has no compiled engine for this run"):
        Other.create(workload.trie, 3, seed=0, backend="compiled")
    assert issubclass(Other, LeafTokenSampler)
    # create hands the per-edge class its seed and eviction amount: the same generator state as constructing
    # it directly, and the amount asked for
    for amount in AMOUNTS:
        made = Other.create(workload.trie, 3, seed=7, evict_amount=amount)
        assert made.evict_amount == amount
        assert made._rng.bit_generator.state == Other(workload.trie, 3, seed=7)._rng.bit_generator.state
