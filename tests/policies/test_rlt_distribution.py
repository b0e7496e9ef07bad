"""The fast block sampler of kvtheory/policies/edge_cache.py has the distribution of one-token-at-a-time
eviction (docs/policies.md §Per edge and per token: RLT and random-leaf evict a uniformly random
eligible leaf token, one at a time).

Method. On fixed small instances where queries evict many tokens from several leaves of different
lengths, the fast policy and the per-token reference (kvtheory.reference) each run over N seeds; the
final cache state (tokens kept per radix edge, or a coarse function of it) is recorded, and the two
empirical distributions are compared with Pearson's chi-square two-sample test
(scipy.stats.chi2_contingency on the 2 x K table of counts; categories seen fewer than 10 times in
both samples together are pooled into one "other" column). The level is ALPHA = 0.001: a test fails
when p < ALPHA. Seeds are fixed, so every test is deterministic; with a correct sampler each one would
fail by chance with probability 0.001 for a fresh choice of seeds.

Where the state space is small the exact distribution of the definition is also computed by dynamic
programming and both samples are checked against it (chi-square goodness of fit, same level).

The test can fail: deliberately wrong samplers (leaves weighted by their cached token count instead of
uniformly; a block sampler that does not cut its block where a leaf empties) are rejected by the same
tests on the same instances.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency, chisquare
from strategies import EXAMPLE_DEADLINE

from kvtheory import ONLINE_POLICIES, RandomizedLeafToken, RandomLeaf, Workload
from kvtheory.reference import reference_policy

ALPHA = 0.001
N = 2000
MIN_POOLED = 10

# One query of 8 fresh tokens evicts 8 of 14 cached tokens: leaves of 2, 3 and 5 tokens under a shared
# head token, and a separate root run of 3; the head becomes a leaf once its three children are gone.
ONE_BIG_EVICTION = ([[0, 1, 1], [0, 2, 2, 2], [0, 3, 3, 3, 3, 3], [7, 7, 7], [9] * 8], 14)
# A parent joins the candidates mid-eviction: [1]*5 ends where [1]*5+[2] goes on, so once the one-token
# leaf [2] is gone its 5-token parent run is a leaf; 7 of 14 tokens go. A block sampler that did not cut
# its block where a leaf empties would under-draw that parent.
PARENT_JOINS = ([[1] * 5, [1] * 5 + [2], [3] * 6, [4] * 2, [9] * 7], 14)
# Phases and marks: [9]*5 starts phase 2 and evicts 5 tokens; [0,1,1] is then marked (its head too), so
# [8]*4 evicts only among the unmarked leaves left ([0,2..], [0,3..], [7..] remnants).
ACROSS_PHASES = ([[0, 1, 1], [0, 2, 2, 2], [0, 3, 3, 3, 3, 3], [7, 7, 7], [9] * 5, [0, 1, 1], [8] * 4], 14)
# Long leaves (30, 60, 120, 250 tokens) and 120 evictions: many draws per block, and a block cut where
# the shortest leaf empties (about half the time).
LONG_LEAVES = ([[0] + [1] * 30, [0] + [2] * 60, [0] + [3] * 120, [0] + [4] * 250, [9] * 120], 461)


def final_state(policy, workload: Workload, from_reference: bool) -> tuple:
    for j in range(len(workload)):
        policy.serve([j])
    kept = policy.kept(workload.trie) if from_reference else policy.kept()
    return tuple(sorted(kept.items()))


def sample_fast(instance, name, seeds, cls=None, statistic=lambda s: s) -> Counter:
    queries, budget = instance
    workload = Workload.from_token_lists(queries)
    cls = cls or ONLINE_POLICIES[name]
    return Counter(statistic(final_state(cls(workload.trie, budget, seed=s), workload, False)) for s in seeds)


def sample_reference(instance, name, seeds, statistic=lambda s: s) -> Counter:
    queries, budget = instance
    workload = Workload.from_token_lists(queries)
    return Counter(
        statistic(final_state(reference_policy(workload, budget, name, seed=s), workload, True)) for s in seeds
    )


FAST_SEEDS = range(N)
REFERENCE_SEEDS = range(10**6, 10**6 + N)


def two_sample_pvalue(a: Counter, b: Counter) -> float:
    """Chi-square two-sample test p-value; categories rarer than MIN_POOLED (both samples together) pooled."""
    categories = sorted(set(a) | set(b), key=repr)
    common = [c for c in categories if a[c] + b[c] >= MIN_POOLED]
    rare = [c for c in categories if a[c] + b[c] < MIN_POOLED]
    table = [[a[c] for c in common], [b[c] for c in common]]
    if rare:
        table[0].append(sum(a[c] for c in rare))
        table[1].append(sum(b[c] for c in rare))
    if len(table[0]) < 2:
        return 1.0
    return float(chi2_contingency(np.array(table)).pvalue)


def goodness_of_fit_pvalue(sample: Counter, exact: dict) -> float:
    """Chi-square goodness of fit of a sample to exact probabilities (expected counts under 5 pooled)."""
    n = sum(sample.values())
    assert set(sample) <= set(exact), "a state the definition cannot reach was sampled"
    common = [c for c in exact if exact[c] * n >= 5]
    rare = [c for c in exact if exact[c] * n < 5]
    observed = [sample[c] for c in common]
    expected = [exact[c] * n for c in common]
    if rare:
        observed.append(sum(sample[c] for c in rare))
        expected.append(sum(exact[c] for c in rare) * n)
    return float(chisquare(observed, expected).pvalue)


def exact_last_query(instance) -> dict:
    """Exact distribution of the final kept-per-edge state when the earlier queries fill the cache and
    only the last query (fresh tokens) evicts, straight from the definition: nothing is marked then (RLT
    has just started a phase; random-leaf never marks), and each evicted token is a uniform choice among
    the cached leaf tokens, one at a time."""
    queries, budget = instance
    trie = Workload.from_token_lists(queries).trie
    prefixes = {tuple(q[:i]) for q in queries[:-1] for i in range(1, len(q) + 1)}
    last = queries[-1]
    assert not {tuple(last[:i]) for i in range(1, len(last) + 1)} & prefixes

    @cache
    def dist(cached: frozenset, left: int) -> tuple:
        if left == 0:
            return ((cached, 1.0),)
        leaves = [p for p in cached if not any(len(c) == len(p) + 1 and c[:-1] == p for c in cached)]
        out: Counter = Counter()
        for leaf in leaves:
            for state, prob in dist(cached - {leaf}, left - 1):
                out[state] += prob / len(leaves)
        return tuple(out.items())

    result: Counter = Counter()
    for cached, prob in dist(frozenset(prefixes), len(prefixes) + len(last) - budget):
        full = cached | {tuple(last[:i]) for i in range(1, len(last) + 1)}
        kept: Counter = Counter()
        for j, q in enumerate(queries):
            for u in trie.path(j):
                lo, hi = trie.depth[trie.parent[u]], trie.depth[u]
                kept[u] = sum(1 for d in range(lo + 1, hi + 1) if tuple(q[:d]) in full)
        result[tuple(sorted((u, k) for u, k in kept.items() if k))] += prob
    assert abs(sum(result.values()) - 1) < 1e-9
    return dict(result)


@pytest.mark.slow
@pytest.mark.parametrize("instance", [ONE_BIG_EVICTION, PARENT_JOINS], ids=["one-big-eviction", "parent-joins"])
@pytest.mark.parametrize("name", ["rlt", "random-leaf"])
def test_block_sampler_matches_one_token_at_a_time(name, instance):
    fast = sample_fast(instance, name, FAST_SEEDS)
    ref = sample_reference(instance, name, REFERENCE_SEEDS)
    assert len(fast) > 10  # many reachable states, several of them visited often
    assert two_sample_pvalue(fast, ref) >= ALPHA
    exact = exact_last_query(instance)
    assert goodness_of_fit_pvalue(ref, exact) >= ALPHA
    assert goodness_of_fit_pvalue(fast, exact) >= ALPHA


def test_rlt_marks_and_phases_match_reference():
    fast = sample_fast(ACROSS_PHASES, "rlt", FAST_SEEDS)
    ref = sample_reference(ACROSS_PHASES, "rlt", REFERENCE_SEEDS)
    assert len(fast) >= 4
    assert two_sample_pvalue(fast, ref) >= ALPHA


@pytest.mark.slow
def test_random_leaf_across_batches_matches_reference():
    # coarse statistic: kept per edge in bins of 2 tokens (the raw state has ~160 values)
    def coarse(state):
        return tuple((u, k // 2) for u, k in state)

    fast = sample_fast(ACROSS_PHASES, "random-leaf", FAST_SEEDS, statistic=coarse)
    ref = sample_reference(ACROSS_PHASES, "random-leaf", REFERENCE_SEEDS, statistic=coarse)
    assert two_sample_pvalue(fast, ref) >= ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rlt", "random-leaf"])
def test_long_leaves_many_draws_per_block(name):
    # whether the 30-token leaf was emptied, and what is left of the 60- and 120-token ones (bins of 4, 8)
    trie = Workload.from_token_lists(LONG_LEAVES[0]).trie
    leaves = sorted((trie.end[j] for j in range(4)), key=lambda u: trie.edge_len[u])

    def coarse(state):
        kept = dict(state)
        return (kept.get(leaves[0], 0) == 0, kept.get(leaves[1], 0) // 4, kept.get(leaves[2], 0) // 8)

    fast = sample_fast(LONG_LEAVES, name, range(1000), statistic=coarse)
    ref = sample_reference(LONG_LEAVES, name, range(10**6, 10**6 + 1000), statistic=coarse)
    assert len(fast) > 10
    assert two_sample_pvalue(fast, ref) >= ALPHA


@st.composite
def candidates_and_draws(draw):
    """Cached leaves of 1..6 tokens under the root (all candidates) and a block of draws over them."""
    caps = draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    draws = draw(st.lists(st.integers(0, len(caps) - 1), min_size=1, max_size=40))
    return caps, draws


@pytest.mark.slow
@settings(max_examples=300, deadline=EXAMPLE_DEADLINE)
@given(candidates_and_draws())
def test_scanned_and_counted_blocks_apply_the_same_draws_and_cut_at_the_same_place(case):
    """The two ways of applying a block (a Python scan for short blocks, numpy counts for long ones) are
    one rule: apply the draws in order up to and including the first that empties a candidate (all of
    them if none does). Checked exactly, draw for draw, against that rule written out here."""
    caps, draws = case
    workload = Workload.from_token_lists([[leaf + 1] * cap for leaf, cap in enumerate(caps)])
    outcomes = []
    for take in ("_take_scanning", "_take_vectorized"):
        policy = RandomLeaf(workload.trie, sum(caps))
        for j in range(len(caps)):
            policy.serve([j])  # fills the cache; nothing evicted, every leaf a candidate
        nodes = policy._pool[: policy._pool_size].copy()
        held = policy._kept[nodes]
        counts = [0] * len(nodes)
        expected_taken = len(draws)
        for position, index in enumerate(draws):
            counts[index] += 1
            if counts[index] == held[index]:
                expected_taken = position + 1
                break
        applied = draws[:expected_taken]
        expected_kept = {int(v): int(held[i]) - applied.count(i) for i, v in enumerate(nodes)}
        taken = getattr(policy, take)(draws if take == "_take_scanning" else np.array(draws), nodes, held.copy())
        assert taken == expected_taken, take
        assert policy.kept() == {v: k for v, k in expected_kept.items() if k}, take
        # an emptied leaf leaves the candidates; the others stay
        assert sorted(policy._pool[: policy._pool_size].tolist()) == sorted(v for v, k in expected_kept.items() if k)
        outcomes.append((taken, policy.kept()))
    assert outcomes[0] == outcomes[1]


class TokenWeightedRLT(RandomizedLeafToken):
    """A wrong sampler on purpose: each eviction picks a candidate leaf with probability proportional to
    the tokens it has cached (instead of uniformly), one token at a time."""

    name = "rlt-token-weighted"

    def _evict(self, tokens, overflow, on_paths):
        rng, kept, parent, children = self._rng, self._kept, self.trie.parent, self._cached_children
        while tokens > 0:
            if self._pool_size == 0:
                if not self._no_candidates(on_paths):
                    raise RuntimeError("nothing left to evict")
                continue
            nodes = self._pool[: self._pool_size].copy()
            weights = kept[nodes].astype(float)
            v = int(nodes[rng.choice(len(nodes), p=weights / weights.sum())])
            kept[v] -= 1
            self.size -= 1
            tokens -= 1
            if kept[v] == 0:
                self._leave_pool(v)
                p = parent[v]
                children[p] -= 1
                if p and children[p] == 0 and not self._marked[p]:
                    self._join_pool(p)


class UncutBlockRLT(RandomizedLeafToken):
    """A wrong block sampler on purpose: draws a whole block i.i.d. over the current candidates and clamps
    each leaf at what it holds, without cutting the block where a leaf empties, so a parent that becomes
    a leaf mid-block gets no draws from that block."""

    name = "rlt-uncut-blocks"

    def _evict(self, tokens, overflow, on_paths):
        rng, kept, parent, children = self._rng, self._kept, self.trie.parent, self._cached_children
        while tokens > 0:
            if self._pool_size == 0:
                if not self._no_candidates(on_paths):
                    raise RuntimeError("nothing left to evict")
                continue
            n = self._pool_size
            nodes = self._pool[:n].copy()
            caps = kept[nodes]
            draws = rng.integers(n, size=min(tokens, int(caps.sum())))
            counts = np.minimum(np.bincount(draws, minlength=n), caps)
            kept[nodes] -= counts
            tokens -= int(counts.sum())
            self.size -= int(counts.sum())
            for v in nodes[kept[nodes] == 0].tolist():
                self._leave_pool(v)
                p = parent[v]
                children[p] -= 1
                if p and children[p] == 0 and not self._marked[p]:
                    self._join_pool(p)


@pytest.mark.slow
@pytest.mark.parametrize(
    "wrong, instance",
    [(TokenWeightedRLT, ONE_BIG_EVICTION), (TokenWeightedRLT, PARENT_JOINS), (UncutBlockRLT, PARENT_JOINS)],
    ids=["token-weighted/one-big-eviction", "token-weighted/parent-joins", "uncut-blocks/parent-joins"],
)
def test_a_wrong_sampler_is_rejected(wrong, instance):
    bad = sample_fast(instance, "rlt", FAST_SEEDS, cls=wrong)
    ref = sample_reference(instance, "rlt", REFERENCE_SEEDS)
    assert two_sample_pvalue(bad, ref) < ALPHA
    assert goodness_of_fit_pvalue(bad, exact_last_query(instance)) < ALPHA
