"""vllm (vLLM v1's block pool with prefix caching): the policy equals its reference (a transliteration of vLLM's
data structures) hit for hit, cache for cache and free queue for free queue on every workload family at block
sizes 1, 2, 4 and 16, batches of 1 to 3 and several pool sizes; hand-computed cases of each rule; the engine's
block ledger; and, where vLLM is installed, vLLM's own KVCacheManager request by request."""

from __future__ import annotations

import pytest

from kvtheory import InputError, Workload, generate, run_policy
from kvtheory.policies import policy_class
from kvtheory.policies.block_chain import chain_keys, parent_key
from kvtheory.policies.ledger import CheckedPolicy, ModelViolation
from kvtheory.reference.vllm import ReferenceVllm

VLLM = policy_class("vllm")

#: (family, parameters): every workload family, small enough to serve token by token in the reference
FAMILIES = {
    "gsp": {"groups": 3, "prompts": 4, "lengths": [40, 72, 100], "vocab": 300},
    "gsp-grouped": {"groups": 3, "prompts": 4, "lengths": [40, 72], "order": "grouped", "vocab": 300},
    "multiturn": {"conversations": 4, "turns": [2, 3], "user_len": 24, "output_len": 5, "vocab": 50},
    "longdoc": {"documents": 3, "questions": 3, "lengths": [64, 96], "question_len": 9, "vocab": 50},
    "heavytail": {"queries": 24, "groups": 3, "prefix_len": 20, "mean_len": 30, "max_len": 120, "vocab": 50},
    "chat-blocks": {
        "conversations": 4,
        "turns": [2, 3],
        "system_prompts": 2,
        "system_len": 32,
        "user_len": 16,
        "output_len": 8,
        "block_size": 16,
    },
    "paging": {"pages": 6, "requests": 40},
    "random-tree": {},
}


def family(name: str, seed: int) -> Workload:
    return generate(name.split("-grouped")[0], FAMILIES[name], seed=seed)


def pool_needed(workload: Workload, b: int, batch: int) -> int:
    """Blocks a batch's requests hold at most at once: the sum of their ceil(L / b)."""
    lengths = workload.lengths
    return max(sum(-(-int(n) // b) for n in lengths[s : s + batch]) for s in range(0, len(workload), batch))


def lockstep(workload: Workload, budget: int, b: int, batch: int) -> list[int]:
    """Serve policy and reference batch by batch; after each one compare hits, cached blocks, kept() and the
    free queue; return the hits."""
    policy = VLLM(workload.trie, budget, block_size=b)
    reference = ReferenceVllm(workload, budget, block_size=b)
    checked = CheckedPolicy(VLLM(workload.trie, budget, block_size=b), VLLM, budget)
    hits = []
    for start in range(0, len(workload), batch):
        group = list(range(start, min(start + batch, len(workload))))
        got = policy.serve(group)
        assert got == reference.serve(group) == checked.serve(group), (start, got)
        for j in set(range(len(workload))):
            assert [key in policy.cached for key in policy.keys(j)] == reference.cached_blocks(j), (start, j)
        assert policy.kept() == reference.kept(workload.trie)
        assert list(policy.queue) == reference.free_block_queue.block_ids()
        assert policy.size == reference.size
        hits.extend(got)
    return hits


CASES = [
    pytest.param(name, seed, b, batch, extra, id=f"{name}-s{seed}-b{b}-beta{batch}-x{extra}")
    for name in FAMILIES
    for seed in (0, 1)
    for b, batch, extra in ((16, 1, 0), (16, 2, 3), (16, 3, 40), (1, 1, 0), (2, 2, 5), (4, 3, 1))
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "seed", "b", "batch", "extra"), CASES)
def test_the_policy_is_its_reference_on_every_family(name, seed, b, batch, extra):
    """96 runs (8 families x 2 seeds x 6 settings): pools from the tightest that fits vLLM's allocation up."""
    workload = family(name, seed)
    budget = b * (pool_needed(workload, b, batch) + extra)
    hits = lockstep(workload, budget, b, batch)
    assert hits == run_policy(workload, budget, "vllm", batch=batch, block_size=b).query_hits.tolist()


def test_the_fast_tier_compares_one_workload_of_each_family_at_block_size_16():
    for name in FAMILIES:
        workload = family(name, 2)
        lockstep(workload, 16 * (pool_needed(workload, 16, 2) + 2), 16, 2)


# -- the rules, by hand -------------------------------------------------------------------------------------


def test_a_finished_prompt_is_freed_tail_first_so_its_tail_is_evicted_before_its_head():
    # b = 2, a pool of 3 blocks: [1..5] takes blocks 1 (key A = [1,2]), 2 (key B = [1..4]) and 3 (its partial
    # last block, never keyed), freed in reverse: 3 to the front, then B, then A at the back. [7..10] needs two
    # blocks: 3 (fresh) and 2, whose key B (the tail) goes; A (the head) stays, and [1..5] hits it.
    workload = Workload.from_token_lists([[1, 2, 3, 4, 5], [7, 8, 9, 10], [1, 2, 3, 4, 5]])
    policy = VLLM(workload.trie, 6, block_size=2)
    head, tail = policy.keys(0)
    assert policy.serve([0]) == [0] and list(policy.queue) == [3, 2, 1]
    assert policy.serve([1]) == [0] and policy.evicted == [[tail]]
    assert head in policy.cached and tail not in policy.cached
    assert policy.serve([2]) == [2]


def test_a_freed_block_keeps_its_key_until_it_is_reused():
    # lazy eviction: all of [1,2,3,4]'s blocks are free after it, and still hit by [1,2,3,4,5]
    workload = Workload.from_token_lists([[1, 2, 3, 4], [1, 2, 3, 4, 5]])
    policy = VLLM(workload.trie, 6, block_size=2)
    policy.serve([0])
    assert len(policy.queue) == 3 and policy.ref == [0, 0, 0, 0]
    assert policy.serve([1]) == [4]


def test_a_prompt_cached_whole_recomputes_its_last_token_and_its_last_block():
    workload = Workload.from_token_lists([[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3], [1, 2, 3]])
    assert run_policy(workload, 4, "vllm", block_size=2).query_hits.tolist() == [0, 2, 2, 2]
    assert run_policy(workload, 4, "vllm", block_size=1).query_hits.tolist() == [0, 3, 2, 2]
    # the recomputed last block is a second block under the same key: a lookup takes the older one
    policy = VLLM(workload.trie, 6, block_size=2)
    policy.serve([0])
    policy.serve([1])
    assert list(policy.cached[policy.keys(0)[1]]) == [2, 3]


def test_the_partial_last_block_is_never_keyed_and_goes_to_the_front_of_the_queue():
    workload = Workload.from_token_lists([[1, 2, 3], [5, 6, 7, 8]])
    policy = VLLM(workload.trie, 8, block_size=2)
    policy.serve([0])  # blocks 1 (keyed (1,2)) and 2 (partial): 2 goes to the front, 1 to the back
    assert list(policy.queue) == [2, 3, 4, 1] and policy.size == 2
    policy.serve([1])  # two new blocks: 2 and 3, no eviction
    assert policy.evicted == [[]] and len(policy.cached) == 3


def test_a_later_request_of_a_batch_hits_what_an_earlier_one_just_cached():
    workload = Workload.from_token_lists([[1, 2, 3, 4], [1, 2, 3, 4, 5]])
    assert run_policy(workload, 16, "vllm", batch=2, block_size=2).query_hits.tolist() == [0, 4]


def test_a_batch_that_does_not_fit_the_pool_is_one_line():
    workload = Workload.from_token_lists([[1, 2], [1, 2]])  # the second recomputes its block: 3 blocks in all
    with pytest.raises(InputError, match=r"^query 1: vLLM's allocation needs 1 free blocks") as refused:
        run_policy(workload, 2, "vllm", batch=2)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("budget", "b", "amount", "message"),
    [
        (30, 16, "shortfall", r"^budget B = 30 is not a multiple of the block size b = 16$"),
        (32, 0, "shortfall", r"^block size must be a positive number of tokens, got 0$"),
        (32, 16, "allocation", r"^policy 'vllm' does not take an eviction amount \(evict_amount\) 'allocation'"),
    ],
)
def test_bad_settings_are_one_line_input_errors(budget, b, amount, message):
    trie = Workload.from_token_lists([[1]]).trie
    with pytest.raises(InputError, match=message):
        VLLM(trie, budget, evict_amount=amount, block_size=b)


def test_the_cache_stays_prefix_closed_in_blocks_on_every_family():
    for name in FAMILIES:
        workload = family(name, 3)
        for b, batch in ((1, 1), (16, 3)):
            budget = b * pool_needed(workload, b, batch)
            policy = VLLM(workload.trie, budget, block_size=b)
            for start in range(0, len(workload), batch):
                policy.serve(range(start, min(start + batch, len(workload))))
                assert all(parent_key(workload.trie, k, b) in (None, *policy.cached) for k in policy.cached)


def test_block_keys_are_the_chain_positions():
    trie = Workload.from_token_lists([[1, 2, 3, 4, 5], [1, 2, 3, 9]]).trie
    first, second = chain_keys(trie, trie.end[0], 2), chain_keys(trie, trie.end[1], 2)
    assert first[0] == second[0] and first[1] != second[1] and len(first) == len(second) == 2


# -- the engine's block ledger ----------------------------------------------------------------------------


class _NoCap(VLLM):
    """Hits the last token too: the engine counts the cap."""

    name = "vllm-no-cap"

    def _lookup(self, j):
        hit = []
        for key in self.keys(j):
            if key not in self.cached:
                break
            hit.append(next(iter(self.cached[key])))
        return hit


class _EvictsHeld(VLLM):
    """Reports, from the second query on, an eviction of the first block, which the query hits."""

    name = "vllm-evicts-held"

    def serve(self, batch):
        hits = super().serve(batch)
        if batch[-1] > 0:
            self.evicted[-1] = [*self.evicted[-1], *self.keys(batch[-1])[:1]]
        return hits


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (_NoCap, r"reports 4 hits for query 1, the engine counts 2$"),
        (_EvictsHeld, r"query 1 evicted block \(\d+, 2\), which a request of the batch holds$"),
    ],
)
def test_the_block_ledger_refuses_what_vllm_does_not_do(rule, message):
    workload = Workload.from_token_lists([[1, 2, 3, 4], [1, 2, 3, 4]])
    checked = CheckedPolicy(rule(workload.trie, 8, block_size=2), rule, 8)
    with pytest.raises(ModelViolation, match=message):
        checked.serve([0])
        checked.serve([1])


def test_a_checked_run_is_the_plain_run():
    workload = family("gsp", 4)
    budget = 16 * pool_needed(workload, 16, 2)
    plain = run_policy(workload, budget, "vllm", batch=2, block_size=16)
    checked = run_policy(workload, budget, "vllm", batch=2, block_size=16, check=True)
    assert plain.query_hits.tolist() == checked.query_hits.tolist() and plain.hits > 0


# -- vLLM's own code --------------------------------------------------------------------------------------


def vllm_hits(token_lists: list[list[int]], blocks: int, b: int, batch: int) -> list[int]:
    """Hits per request from vLLM's KVCacheManager over a pool of ``blocks`` blocks (the null block included),
    as its scheduler drives it: per step, each request's get_computed_blocks and allocate_slots in order, then
    each one freed."""
    import torch
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.request import Request

    init_none_hash(sha256)
    spec = FullAttentionSpec(block_size=b, num_kv_heads=1, head_size=1, dtype=torch.float32)
    config = KVCacheConfig(num_blocks=blocks, kv_cache_tensors=[], kv_cache_groups=[KVCacheGroupSpec(["l"], spec)])
    longest = max(map(len, token_lists))
    manager = KVCacheManager(config, max_model_len=longest + 1, scheduler_block_size=b, hash_block_size=b)
    hasher = get_request_block_hasher(b, sha256)
    hits = []
    for start in range(0, len(token_lists), batch):
        step = []
        for j in range(start, min(start + batch, len(token_lists))):
            request = Request(f"r{j}", token_lists[j], SamplingParams(max_tokens=1), None, block_hasher=hasher)
            computed, hit, _ = manager.get_computed_blocks(request)
            assert manager.allocate_slots(request, len(token_lists[j]) - hit, hit, computed) is not None
            hits.append(hit)
            step.append(request)
        for request in step:
            manager.free(request)
    return hits


@pytest.mark.slow
@pytest.mark.parametrize(("name", "seed", "b", "batch", "extra"), CASES)
def test_the_policy_is_vllms_own_kv_cache_manager(name, seed, b, batch, extra):
    pytest.importorskip("vllm")
    workload = family(name, seed)
    pool = pool_needed(workload, b, batch) + extra
    ours = run_policy(workload, b * pool, "vllm", batch=batch, block_size=b).query_hits.tolist()
    assert ours == vllm_hits(workload.token_lists(), pool + 1, b, batch)
