"""rlt-authors (docs/policies.md §RLT as the authors' engine runs it): scripted scenarios in which each of
its rules fires, with exact hits; lockstep agreement with the independent token-list reference; and how
much an eviction frees, shortfall or allocation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import BATCHED_BOUNDARIES, EXAMPLE_DEADLINE, UNBATCHED_BOUNDARIES, boundary_examples, instances

from kvtheory import AuthorsRLT, RandomizedLeafToken, Workload, batches, run_policy
from kvtheory.reference import ReferenceAuthorsRLT

SEEDS = range(20)


def serve_all(queries, budget, *, seed=0, batch=1, evict_amount="shortfall", cls=AuthorsRLT):
    """Serve ``queries`` batch by batch; return the policy and, per batch, (hits, phase_starts, marked_count)."""
    workload = Workload.from_token_lists(queries)
    policy = cls(workload.trie, budget, seed=seed, evict_amount=evict_amount)
    steps = []
    for group in batches(len(workload), batch):
        hits = policy.serve(group)
        steps.append((hits, dict(getattr(policy, "phase_starts", {})), getattr(policy, "marked_count", None)))
    return policy, steps


# -- P1: marking a node brings marked_count to B -----------------------------------------------------
P1_QUERIES = [[1, 2, 3, 4, 5], [9], [8], [1, 2, 3, 4, 5]]


@pytest.mark.parametrize("seed", SEEDS)
def test_p1_clears_the_marks_and_remarks_the_new_nodes_path(seed):
    # B = 6. [1..5] is marked (count 5); inserting [9] makes the count 6 = B: P1 clears every mark and
    # marks [9]'s path again (count 1). [8] then overflows by 1 and k + count = 2 < B (no R1): the only
    # unmarked leaf is [1..5], which loses its last token, whatever the seed. [1..5] then hits 4.
    policy, steps = serve_all(P1_QUERIES, 6, seed=seed)
    assert [s[0] for s in steps] == [[0], [0], [0], [4]]
    assert steps[1][1:] == ({"P1": 1}, 1)
    assert steps[2][1:] == ({"P1": 1}, 2)  # no R1, no R2 at [8]
    # at the last query nothing is unmarked ([9] and [8] are, [1..4] is locked): R2
    assert steps[3][1]["R2"] == 1


def test_p1_makes_a_difference_textbook_rlt_does_not_make():
    # textbook RLT keeps [1..5] marked until no candidate is left, then draws between [1..5] and [9]:
    # with some seeds [1..5] is intact at the last query (hits 5), with rlt-authors never
    textbook = {serve_all(P1_QUERIES, 6, seed=s, cls=RandomizedLeafToken)[1][3][0][0] for s in SEEDS}
    assert textbook == {4, 5}


# -- R1: k + marked_count >= B at the start of evict(k) -----------------------------------------------
R1_QUERIES = [[1, 2, 3], [4, 5], [1, 2, 3, 6, 7], [4, 5]]


@pytest.mark.parametrize("evict_amount, last_hits, size", [("shortfall", 1, 6), ("allocation", 0, 5)])
def test_r1_clears_every_mark_before_collecting(evict_amount, last_hits, size):
    # B = 6, marked_count 5 after two queries. [1,2,3,6,7] matches [1,2,3] (locked) and overflows by 1:
    # k + 5 >= 6, R1 clears every mark, and [4,5] is the one candidate (holding 2 >= k tokens: no R2).
    # Shortfall evicts one token of it, allocation (k = 2 uncached tokens) both.
    policy, steps = serve_all(R1_QUERIES[:3], 6, evict_amount=evict_amount)
    assert steps[2] == ([3], {"R1": 1}, 5)  # [1,2,3] and the new leaf [6,7] marked again by insert
    assert policy.cached_prefix(1) == last_hits and policy.size == size
    assert serve_all(R1_QUERIES, 6, evict_amount=evict_amount)[1][3][0] == [last_hits]


# -- R2: the unmarked, unlocked leaves hold fewer than k tokens -------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_r2_clears_the_marks_when_the_candidates_hold_too_few_tokens(seed):
    # B = 8. [7,8] brings the count to 8: P1 keeps only [7,8] marked (count 2). [1..5,9,10,11] matches
    # [1..5] (locked) and overflows by 3; 3 + 2 < 8 (no R1); the unmarked leaf [6] holds 1 < 3 tokens: R2
    # clears the marks and collects [6] and [7,8], exactly the 3 tokens to evict, whatever the seed.
    queries = [[1, 2, 3, 4, 5], [6], [7, 8], [1, 2, 3, 4, 5, 9, 10, 11]]
    policy, steps = serve_all(queries, 8, seed=seed)
    assert steps[2][1:] == ({"P1": 1}, 2)
    assert steps[3][0] == [5] and steps[3][1]["R2"] == 1 and "R1" not in steps[3][1]
    assert policy.cached_prefix(1) == policy.cached_prefix(2) == 0 and policy.cached_prefix(3) == 8


@pytest.mark.parametrize("seed", SEEDS)
def test_locks_protect_every_matched_path_of_a_batch(seed):
    # batches of 2, B = 5. Batch 2 matches [1,2] and nothing, and overflows by 1; R1 clears every mark,
    # [1,2] is locked by the batch, so [3,4] loses a token whatever the seed.
    queries = [[1, 2], [3, 4], [1, 2, 5], [7], [3, 4], [1, 2, 5]]
    policy, steps = serve_all(queries, 5, seed=seed, batch=2)
    assert [s[0] for s in steps] == [[0, 0], [2, 0], [1, 3]]
    assert steps[1][1] == {"R1": 1}


# -- allocation ---------------------------------------------------------------------------------------
def test_allocation_stops_early_when_nothing_evictable_is_left():
    # B = 6: [2,3,4,5,6,7] matches [2,3] (locked) and misses 4 tokens, overflowing by 1: allocation asks
    # for 4 (R1: 4 + 3 >= 6), only [1] is evictable (1 token < 4: R2; 1 = the overflow): it goes, and that
    # is no error. Inserting the new leaf then brings the count to 6 (P1).
    queries = [[1], [2, 3], [2, 3, 4, 5, 6, 7], [1]]
    policy, steps = serve_all(queries, 6, evict_amount="allocation")
    assert [s[0] for s in steps] == [[0], [0], [2], [0]]
    assert steps[2][1] == {"R1": 1, "R2": 1, "P1": 1}


def test_allocation_frees_more_than_the_shortfall_through_run_policy():
    workload = Workload.from_token_lists(R1_QUERIES)
    shortfall = run_policy(workload, 6, "rlt-authors", seed=0)
    allocation = run_policy(workload, 6, "rlt-authors", seed=0, evict_amount="allocation")
    assert shortfall.query_hits.tolist() == [0, 0, 3, 1] and shortfall.evict_amount == "shortfall"
    assert allocation.query_hits.tolist() == [0, 0, 3, 0] and allocation.evict_amount == "allocation"


# -- properties on random instances --------------------------------------------------------------------
any_instance = st.one_of(
    instances(max_queries=14, max_length=6, alphabet=3, max_batch=1),
    instances(max_queries=14, max_length=5, alphabet=3, max_batch=3),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=EXAMPLE_DEADLINE)
@given(instance=any_instance, seed=st.integers(0, 2**32 - 1), evict_amount=st.sampled_from(["shortfall", "allocation"]))
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, seed=0, evict_amount="allocation")
def test_lockstep_with_the_reference(instance, seed, evict_amount):
    """Hits, cache, marked_count and rule counts equal the token-list reference's after every batch."""
    workload, budget, batch = instance
    fast = AuthorsRLT(workload.trie, budget, seed=seed, evict_amount=evict_amount)
    ref = ReferenceAuthorsRLT(workload.token_lists(), budget, seed=seed, evict_amount=evict_amount)
    everyone = range(len(workload))
    for group in batches(len(workload), batch):
        where = f"B={budget} batch={batch} {evict_amount} seed={seed} {workload.token_lists()} at {list(group)}"
        assert fast.serve(group) == ref.serve(group), where
        assert [fast.cached_prefix(j) for j in everyone] == [ref.cached_prefix(j) for j in everyone], where
        assert (fast.size, fast.marked_count, fast.phase_starts) == (ref.size, ref.marked_count, ref.phase_starts), (
            where
        )


@pytest.mark.slow
@settings(max_examples=150, deadline=EXAMPLE_DEADLINE)
@given(instance=any_instance, seed=st.integers(0, 2**32 - 1), evict_amount=st.sampled_from(["shortfall", "allocation"]))
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, seed=0, evict_amount="allocation")
def test_an_eviction_frees_k_tokens_or_everything_off_the_batch(instance, seed, evict_amount):
    """When a batch overflows B, the tokens freed are min(k, the cached tokens off the batch's paths), with
    k = the overflow (shortfall) or the batch's uncached tokens (allocation); otherwise none."""
    workload, budget, batch = instance
    trie = workload.trie
    policy = AuthorsRLT(trie, budget, seed=seed, evict_amount=evict_amount)
    for group in batches(len(workload), batch):
        before = policy.kept()
        on_paths = {v for j in group for v in trie.path(j)}
        locked = sum(before.get(v, 0) for v in on_paths)
        missing = sum(trie.edge_len[v] - before.get(v, 0) for v in on_paths)
        size = policy.size
        overflow = size + missing - budget
        policy.serve(group)
        freed = size + missing - policy.size
        k = missing if evict_amount == "allocation" else overflow
        assert freed == (min(k, size - locked) if overflow > 0 else 0)
