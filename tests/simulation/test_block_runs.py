"""Runs at block size b (docs/model.md §Blocks): every policy and FIF at b equal, hit for hit, the same policy on
the block-level workload built independently from the chains (tests/blocks_reference.py); b = 1 is the token
model; queries without a full block; the contract of a policy that handles blocks itself (``block_engine``)."""

from __future__ import annotations

import numpy as np
import pytest
from blocks_reference import explicit_block_workload, in_tokens

from kvtheory import ONLINE_POLICIES, Workload, run_fif, run_policy
from kvtheory.errors import InputError
from kvtheory.model.blocks import block_workload
from kvtheory.policies.base import EvictionPolicy
from kvtheory.simulate import run_seeds
from kvtheory.workloads.registry import generate

GSP = {"groups": "3", "prompts": "6", "lengths": "24,40", "vocab": "8", "separator": "2"}


def block_policies() -> list[str]:
    """Every registered policy that runs on the block-level workload (not a block engine)."""
    return [name for name, cls in ONLINE_POLICIES.items() if not cls.block_engine]


def workloads() -> list[tuple[str, Workload]]:
    rng = np.random.default_rng(5)
    tiny = Workload.from_token_lists(rng.integers(0, 2, size=int(rng.integers(1, 25))).tolist() for _ in range(60))
    gsp = generate("gsp", GSP, seed=2)
    chat = generate("chat-blocks", {"conversations": "8", "block_size": "4", "system_len": "12", "user_len": "6",
                                    "output_len": "3", "system_prompts": "2"}, seed=3)  # fmt: skip
    return [("tiny", tiny), ("gsp", gsp), ("chat-blocks", chat)]


CASES = [(name, w, b) for name, w in workloads() for b in (2, 4, 8)]


def budgets(workload: Workload, b: int) -> list[int]:
    """Block budgets from the longest query's blocks (the least valid) to about half the distinct blocks."""
    view = block_workload(workload, b)
    distinct = view.workload.trie.distinct_tokens
    return sorted({b * max(view.max_blocks, slots) for slots in (0, distinct // 4, distinct // 2)})


@pytest.mark.parametrize("name,workload,b", CASES, ids=[f"{n}-b{b}" for n, _, b in CASES])
def test_every_policy_and_fif_in_blocks_equal_the_run_on_the_explicit_block_workload(name, workload, b):
    served, explicit = explicit_block_workload(workload, b)
    for budget in budgets(workload, b):
        for policy in [*block_policies(), "fif"]:
            seeds = [0, 1] if policy != "fif" and ONLINE_POLICIES[policy].randomized else [0]
            for seed in seeds:
                if policy == "fif":
                    got, ref = run_fif(workload, budget, block_size=b), run_fif(explicit, budget // b)
                else:
                    got = run_policy(workload, budget, policy, seed=seed, block_size=b)
                    ref = run_policy(explicit, budget // b, policy, seed=seed)
                expected = in_tokens(workload, served, ref.query_hits, b)
                assert got.query_hits.tolist() == expected.tolist(), (policy, budget, seed)
                assert got.hits == b * ref.hits and got.misses == workload.total_tokens - b * ref.hits
                assert (got.block_size, got.budget, got.k) == (b, budget, ref.k)


def test_the_block_run_also_holds_at_batch_size_two_and_with_allocation_eviction():
    workload = generate("gsp", GSP, seed=4)
    b = 4
    served, explicit = explicit_block_workload(workload, b)
    budget = b * 2 * block_workload(workload, b).max_blocks
    for policy in block_policies():
        for amount in ("shortfall", "allocation"):
            got = run_policy(workload, budget, policy, batch=2, seed=3, evict_amount=amount, block_size=b)
            ref = run_policy(explicit, budget // b, policy, batch=2, seed=3, evict_amount=amount)
            assert got.query_hits.tolist() == in_tokens(workload, served, ref.query_hits, b).tolist(), policy


def test_block_size_one_is_the_token_model_for_every_policy_and_fif():
    """b = 1 runs the token model's own code; and the block-level workload at b = 1, run as any workload, gives
    the same hits: the transform is exact where it changes nothing."""
    _, workload = workloads()[1]
    budget = workload.max_length + 7
    view = block_workload(workload, 1)
    for policy in block_policies():
        token = run_policy(workload, budget, policy, seed=2)
        assert run_policy(workload, budget, policy, seed=2, block_size=1) == token
        assert run_policy(view.workload, budget, policy, seed=2).query_hits.tolist() == token.query_hits.tolist()
    assert run_fif(workload, budget, block_size=1) == run_fif(workload, budget)
    assert run_fif(view.workload, budget).query_hits.tolist() == run_fif(workload, budget).query_hits.tolist()


def test_queries_without_a_full_block_miss_all_their_tokens_and_leave_the_cache_alone():
    """Short queries interleaved with long ones: the run equals the run without them, plus their misses."""
    long = [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 9, 9, 9, 9], [5, 5, 5, 5, 1], [1, 2, 3, 4, 5, 6, 7, 8]]
    short = [[1, 2, 3], [9], [1, 2]]
    mixed = Workload.from_token_lists([long[0], short[0], long[1], short[1], long[2], short[2], long[3]])
    alone = Workload.from_token_lists(long)
    for policy in [*block_policies(), "fif"]:
        if policy == "fif":
            got, ref = run_fif(mixed, 8, block_size=4), run_fif(alone, 8, block_size=4)
        else:
            got = run_policy(mixed, 8, policy, seed=1, block_size=4)
            ref = run_policy(alone, 8, policy, seed=1, block_size=4)
        assert got.query_hits.tolist() == [*ref.query_hits[:1], 0, ref.query_hits[1], 0, ref.query_hits[2], 0,
                                           ref.query_hits[3]]  # fmt: skip
        assert got.misses == ref.misses + 6


def test_a_block_larger_than_every_query_misses_everything():
    workload = Workload.from_token_lists([[1, 2, 3], [1, 2, 3], [4]])
    for policy in block_policies():
        run = run_policy(workload, 16, policy, block_size=16)
        assert (run.hits, run.misses, run.hit_rate) == (0, 7, 0.0)
    assert run_fif(workload, 16, block_size=16).misses == 7


@pytest.mark.parametrize(
    "budget,b,batch,message",
    [
        (10, 4, 1, "budget B = 10 is not a multiple of the block size b = 4"),
        (4, 4, 1, "query 0: query has 2 full blocks of b = 4 tokens"),
        (16, 4, 2, "query 2: query has 3 tokens, no full block of b = 4; at batch size 2"),
    ],
)
def test_invalid_block_runs_are_refused(budget, b, batch, message):
    workload = Workload.from_token_lists([[1] * 8, [2] * 4, [3] * 3, [4] * 4])
    with pytest.raises(InputError, match=message):
        run_policy(workload, budget, "lru", batch=batch, block_size=b)
    with pytest.raises(InputError, match=message):
        run_fif(workload, budget, batch=batch, block_size=b)


class CountingBlockEngine(EvictionPolicy):
    """A stand-in block engine: it records how it was built and reports b tokens for every query longer than b."""

    name = "counting-block-engine"
    block_engine = True
    built: list = []

    def __init__(self, trie, budget, *, seed=None, evict_amount="shortfall", block_size=1) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        self.block_size = block_size
        CountingBlockEngine.built.append((trie, budget, seed, evict_amount, block_size))

    def serve(self, batch):
        return [self.block_size if self.trie.length(j) > self.block_size else 0 for j in batch]

    def cached_prefix(self, j):
        return 0

    def kept(self):
        return {}


def test_a_block_engine_is_built_on_the_token_trie_and_its_hits_are_tokens():
    workload = Workload.from_token_lists([[1] * 9, [1] * 9, [2] * 3])
    CountingBlockEngine.built.clear()
    unchecked = {"check": False}  # a stand-in: it keeps no books for the engine's block checks
    runs = run_seeds(workload, 12, CountingBlockEngine, [5], evict_amount="allocation", block_size=4, **unchecked)
    ((trie, budget, seed, amount, b),) = CountingBlockEngine.built
    assert trie is workload.trie and (budget, seed, amount, b) == (12, 5, "allocation", 4)
    assert runs[0].query_hits.tolist() == [4, 4, 0] and runs[0].block_size == 4
    run_policy(workload, 12, CountingBlockEngine, **unchecked)  # b = 1 still goes through it, with block_size=1
    assert CountingBlockEngine.built[-1][-1] == 1
    with pytest.raises(InputError, match="not a multiple of the block size"):
        run_policy(workload, 10, CountingBlockEngine, block_size=4, **unchecked)
