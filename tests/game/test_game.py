"""kvtheory.game (docs/game.md) against independent brute forces: every sequence of the smallest universes
served plainly (the policy's own engine on the sequence's own workload, the token-by-token reference
policies with every draw enumerated), OPT from FIF (batch 1) and the exact batched optimum."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from game_brute_force import ScriptedRng, plain_opt, reference_expectation, sequences, valid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kvtheory as kv
from kvtheory.errors import InputError
from kvtheory.game import Universe, worst
from kvtheory.game.branching import outcomes
from kvtheory.game.universe import count_configurations
from kvtheory.model.workload import Workload
from kvtheory.optimum.exact import solve_optimum
from kvtheory.optimum.fif import run_fif
from kvtheory.reference import ReferenceAuthorsRLT
from kvtheory.simulate import run_policy

PAGING3 = [[0], [1], [2]]  # classic paging, n = 3 pages
TREE = [[0, 1], [0, 2], [3]]  # a shared prefix with two leaves, and a lone page
DEEP = [[0, 1, 2], [0, 1, 3], [4]]


def brute_worst(queries, budget: int, policy, horizon: int, batch: int = 1) -> Fraction:
    """max ALG/OPT over every valid sequence, each served plainly from scratch."""
    universe = Workload.from_token_lists(queries)
    best = Fraction(0)
    for seq in sequences(len(queries), horizon):
        if not valid(universe, seq, budget, batch):
            continue
        w = universe.select(list(seq))
        alg = run_policy(w, budget, policy, batch=batch, backend="python").misses
        best = max(best, Fraction(alg, plain_opt(w, budget, batch)))
    return best


# -- OPT: the work function is the exact optimum ----------------------------------------------------------
@pytest.mark.parametrize("queries, budget", [(PAGING3, 2), (TREE, 3), (DEEP, 4)])
def test_the_work_function_minimum_is_fif_at_batch_one(queries, budget):
    universe = Universe(Workload.from_token_lists(queries), budget)
    for seq in sequences(len(queries), 5):
        w = Workload.from_token_lists([queries[j] for j in seq])
        assert universe.optimum(list(seq)) == run_fif(w, budget).misses, seq


def test_the_work_function_minimum_is_the_exact_batched_optimum():
    queries, budget = [[0, 1], [0, 2], [3], [4]], 4
    universe = Universe(Workload.from_token_lists(queries), budget, batch=2)
    rng = random.Random(7)
    for _ in range(25):
        seq = [rng.randrange(len(queries)) for _ in range(rng.randrange(2, 9))]
        if not valid(Workload.from_token_lists(queries), seq, budget, 2):
            continue
        w = Workload.from_token_lists([queries[j] for j in seq])
        assert universe.optimum(seq) == plain_opt(w, budget, 2), seq
    # where FIF is not optimal at batch 2 (kvtheory.optimum.exact's example): the work function is not FIF
    lines = [[2], [3], [1], [4, 1], [2, 1], [0], [3, 4], [3]]
    distinct = sorted(set(map(tuple, lines)))
    universe = Universe(Workload.from_token_lists(distinct), 4, batch=2)
    seq = [distinct.index(tuple(q)) for q in lines]
    opt = solve_optimum(Workload.from_token_lists(lines), 4, batch=2)
    assert universe.optimum(seq) == opt.misses < opt.fif_misses


def test_configurations_are_counted_and_listed_alike():
    for queries, budget in [(PAGING3, 2), (TREE, 3), (DEEP, 3), (DEEP, 5), ([[0, 1, 2, 3]], 4)]:
        universe = Universe(Workload.from_token_lists(queries), budget)
        assert universe.n_configs == len(universe.configs) == len(set(universe.configs))
    # by hand: the 3-token chain 0-1-2 under B = 2: {}, {0}, {0,1}
    assert count_configurations([-1, 0, 1], 2) == 3
    # n pages, B = k: sum of C(n, i) for i <= k
    assert Universe(Workload.from_token_lists([[i] for i in range(5)]), 2).n_configs == 1 + 5 + 10


# -- deterministic policies against the brute force --------------------------------------------------------
@pytest.mark.parametrize(
    "queries, budget, horizon, policy",
    [
        (PAGING3, 2, 5, "lru"),
        (PAGING3, 2, 5, "lfu"),
        (TREE, 3, 4, "fifo"),
        (TREE, 3, 4, "lfu"),
        (TREE, 2, 5, "lru"),
        (TREE, 2, 5, "token-lru"),
        (DEEP, 4, 4, "lru"),
        (DEEP, 4, 4, "token-lru"),
        (DEEP, 4, 4, "fifo"),
    ],
)
def test_worst_is_the_brute_force_maximum(queries, budget, horizon, policy):
    found = worst(Workload.from_token_lists(queries), budget, policy, horizon)
    assert found.ratio == brute_worst(queries, budget, policy, horizon)
    # the witness is a sequence that reaches it, served plainly
    w = Workload.from_token_lists([queries[j] for j in found.sequence])
    assert Fraction(run_policy(w, budget, policy, backend="python").misses, run_fif(w, budget).misses) == found.ratio
    assert found.alg / found.opt == found.ratio and len(found.sequence) <= horizon


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=3), min_size=2, max_size=3, unique_by=tuple),
    st.integers(0, 2),
    st.sampled_from(["lru", "token-lru", "fifo", "lfu"]),
)
def test_worst_is_the_brute_force_maximum_on_drawn_universes(queries, extra, policy):
    budget = max(map(len, queries)) + extra
    assert worst(Workload.from_token_lists(queries), budget, policy, 3).ratio == brute_worst(queries, budget, policy, 3)


@pytest.mark.parametrize("policy", ["lru"])
def test_worst_at_batch_two_is_the_brute_force_maximum(policy):
    queries, budget, horizon = [[0], [1], [2], [0, 3]], 3, 4
    found = worst(Workload.from_token_lists(queries), budget, policy, horizon, batch=2)
    assert found.ratio == brute_worst(queries, budget, policy, horizon, batch=2)


small_universes = st.lists(
    st.lists(st.integers(0, 2), min_size=1, max_size=3), min_size=2, max_size=3, unique_by=tuple
).filter(lambda qs: sum(Workload.from_token_lists(qs).trie.edge_len) <= 6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_universes, st.integers(0, 2), st.sampled_from(["lru", "fifo", "token-lru", "lfu", "rlt"]))
def test_merging_states_changes_nothing(queries, extra, policy):
    """The merged search (state keys, dominance) finds the plain enumeration's maximum."""
    w = Workload.from_token_lists(queries)
    budget = int(w.max_length) + extra
    horizon = 4 if policy != "rlt" else 3
    merged = worst(w, budget, policy, horizon)
    plain = worst(w, budget, policy, horizon, merge=False)
    assert merged.ratio == plain.ratio
    assert merged.states <= plain.states


@pytest.mark.parametrize("policy", ["lru", "token-lru", "fifo", "lfu", "rlt", "random-leaf", "rlt-authors"])
def test_equal_state_keys_have_equal_futures(policy):
    """Two objects with equal keys, reached by different sequences, serve any continuation alike (the
    deterministic ones: the same hits and keys; the randomized ones: the same distribution of keys)."""
    w = Workload.from_token_lists([[0, 1], [0, 2], [0, 1, 3], [4]])
    cls = kv.policy_class(policy)
    rng = random.Random(3)
    by_key: dict = {}
    pairs = 0
    for _ in range(40 if cls.randomized else 100):
        p = cls.create(w.trie, 4, seed=0, backend="python")
        for j in [rng.randrange(4) for _ in range(rng.randrange(1, 6))]:
            if cls.randomized:
                _, branches = outcomes(p, [j])
                p = branches[rng.randrange(len(branches))][1]
            else:
                p.serve([j])
        other = by_key.setdefault(p.state_key(), p)
        if other is p:
            continue
        pairs += 1
        tail = [rng.randrange(4) for _ in range(5)]
        a, b = other, p
        for j in tail:
            ha, oa = outcomes(a, [j])
            hb, ob = outcomes(b, [j])
            assert ha == hb
            dist = lambda branches: sorted((x.state_key(), q) for q, x in branches)  # noqa: E731
            merged_a: dict = {}
            for key, q in dist(oa):
                merged_a[key] = merged_a.get(key, 0) + q
            merged_b: dict = {}
            for key, q in dist(ob):
                merged_b[key] = merged_b.get(key, 0) + q
            assert merged_a == merged_b
            a, b = oa[0][1], next(x for q, x in ob if x.state_key() == oa[0][1].state_key())
    assert pairs > 5


# -- randomized policies: exact expectations ---------------------------------------------------------------
@pytest.mark.parametrize("policy", ["rlt", "random-leaf"])
@pytest.mark.parametrize("queries, budget, horizon", [(PAGING3, 2, 5), (TREE, 3, 4), (DEEP, 4, 3)])
def test_randomized_worst_is_the_brute_force_maximum_of_exact_expectations(policy, queries, budget, horizon):
    universe = Workload.from_token_lists(queries)
    best = Fraction(0)
    for seq in sequences(len(queries), horizon):
        w = universe.select(list(seq))
        best = max(best, reference_expectation(queries, budget, policy, seq) / run_fif(w, budget).misses)
    assert worst(universe, budget, policy, horizon).ratio == best


class UniformRule(kv.SamplerRule):
    """random-leaf as a plug-in: a uniform draw over the candidate leaf tokens."""

    name = "game-uniform-rule"


class Recency(kv.PriorityRule):
    """token-LRU's order as a plug-in on one-token queries: the least recently requested leaf goes first."""

    name = "game-recency-rule"

    def priority(self, leaf):
        return leaf.last_access


def test_a_sampler_plugin_is_enumerated_exactly():
    w = Workload.from_token_lists(TREE)
    assert worst(w, 3, UniformRule, 4).ratio == worst(w, 3, "random-leaf", 4).ratio


def test_a_priority_plugin_without_state_key_is_searched_sequence_by_sequence():
    w = Workload.from_token_lists(PAGING3)
    assert Recency(w.trie, 2).state_key() is None
    found = worst(w, 2, Recency, 5)
    assert found.ratio == brute_worst(PAGING3, 2, Recency, 5)


def test_a_plugin_subclass_does_not_inherit_a_built_in_state_key():
    """A plug-in subclass may change the rule: the key it inherits is not used (each sequence kept apart), and
    the answer is the same as the parent's when the rule is the same."""
    from kvtheory.game.search import trusted_key

    class SameAsLRU(kv.policy_class("lru")):
        name = "game-same-as-lru"

    class KeyedLRU(SameAsLRU):
        name = "game-keyed-lru"

        def state_key(self):
            return super().state_key()

    assert trusted_key(kv.policy_class("lru")) and not trusted_key(SameAsLRU) and trusted_key(KeyedLRU)
    w = Workload.from_token_lists(TREE)
    plain = worst(w, 3, SameAsLRU, 4)
    assert plain.ratio == worst(w, 3, "lru", 4).ratio == worst(w, 3, KeyedLRU, 4).ratio
    keyed = worst(w, 3, KeyedLRU, 4)
    assert plain.states > keyed.states and keyed.merged and not plain.merged


def authors_expectation(queries, budget: int, seq) -> Fraction:
    """E[misses] of rlt-authors' reference (SGLang's radix nodes, written apart from the policy) on ``seq``,
    batch 1: every ``integers(n)`` draw of the whole run enumerated, each of the n values with probability 1/n."""
    chosen = [queries[j] for j in seq]
    total = sum(len(q) for q in chosen)
    expected = Fraction(0)
    pending = [((), Fraction(1))]
    while pending:
        script, p = pending.pop()
        ref = ReferenceAuthorsRLT(chosen, budget, seed=0)
        ref.rng = ScriptedRng(script)
        try:
            hits = sum(h for j in range(len(chosen)) for h in ref.serve([j]))
        except ScriptedRng.Past as past:
            n = past.args[0]
            pending.extend((script + (c,), p / n) for c in range(n))
            continue
        expected += p * (total - hits)
    return expected


@pytest.mark.parametrize("queries, budget, horizon", [(PAGING3, 2, 5), (TREE, 3, 4), (DEEP, 4, 3)])
def test_rlt_authors_worst_is_the_brute_force_maximum_over_its_reference(queries, budget, horizon):
    universe = Workload.from_token_lists(queries)
    best = Fraction(0)
    for seq in sequences(len(queries), horizon):
        w = universe.select(list(seq))
        best = max(best, authors_expectation(queries, budget, seq) / run_fif(w, budget).misses)
    found = worst(universe, budget, "rlt-authors", horizon)
    assert found.ratio == best and found.merged
    assert worst(universe, budget, "rlt-authors", horizon, merge=False).ratio == best


def test_a_randomized_policy_without_enumeration_is_refused():
    class CoinFlip(kv.EvictionPolicy):  # a randomized plug-in that draws inside serve(): nothing to enumerate
        name = "coin-flip"
        randomized = True

        def serve(self, batch):
            return [0 for _ in batch]

        def cached_prefix(self, j):
            return 0

        def kept(self):
            return {}

    with pytest.raises(InputError, match="cannot be enumerated"):
        worst(Workload.from_token_lists(PAGING3), 2, CoinFlip, 3)


# -- known facts ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_on_classic_paging_randomization_rises_towards_h_k_and_marking_stays_under_it():
    """n = k + 1 = 3 pages, B = k = 2, H_k = 3/2 (Fiat et al.: randomized marking is H_k-competitive on k + 1
    pages, and no randomized algorithm does better). Over a finite horizon: the best randomized ratio never
    falls as H grows (the adversary keeps every shorter sequence), is at most RLT's (RLT is one randomized
    algorithm) and at least 1; RLT's exact worst case stays at most H_k and rises with H."""
    from kvtheory.game import best_randomized

    w = Workload.from_token_lists(PAGING3)
    h_k = Fraction(3, 2)
    best = [best_randomized(w, 2, h).upper for h in range(3, 8)]
    rlt = [worst(w, 2, "rlt", h).ratio for h in range(3, 11)]
    assert all(a <= b for a, b in zip(best, best[1:])) and best[-1] > best[0] >= 1
    assert all(b <= r for b, r in zip(best, rlt))
    assert all(a <= b for a, b in zip(rlt, rlt[1:])) and max(rlt) <= h_k and rlt[-1] > rlt[3]


@pytest.mark.parametrize("k", [2])
@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_classic_paging_lru_and_fifo_reach_the_cycle_bound(policy, k):
    """n = k + 1 pages, B = k: the cycle 0, 1, ..., k, 0, 1, ... makes LRU and FIFO miss every request while
    OPT (FIF) misses k + ceil((H - k) / k) (Belady); no sequence does better for the adversary at these H
    (the brute force), and the ratio rises towards k."""
    pages = [[i] for i in range(k + 1)]
    horizons = [k + 2, 2 * k + 2, 3 * k + 1] if k == 2 else [k + 2, 2 * k - 1]
    ratios = []
    for h in horizons:
        found = worst(Workload.from_token_lists(pages), k, policy, h).ratio
        cycle = Fraction(h, k + -(-(h - k) // k))
        assert found >= cycle
        ratios.append(found)
        if h <= 5 and k == 2:
            assert found == brute_worst(pages, k, policy, h)
    assert ratios == sorted(ratios) and ratios[-1] < k


# -- limits and input errors --------------------------------------------------------------------------
def test_a_search_past_the_state_limit_is_one_input_error_with_the_size_needed():
    with pytest.raises(InputError, match=r"needs more than 10 search states: \d+ after"):
        worst(Workload.from_token_lists(PAGING3), 2, "lru", 6, state_limit=10)


def test_a_universe_with_too_many_configurations_is_refused_with_their_number():
    with pytest.raises(InputError, match=r"has 1024 cache configurations"):
        Universe(Workload.from_token_lists([[i] for i in range(10)]), 10, config_limit=1000)


def test_a_query_longer_than_the_budget_is_an_input_error():
    with pytest.raises(InputError, match="more than the budget"):
        worst(Workload.from_token_lists(DEEP), 2, "lru", 3)


@pytest.mark.parametrize("horizon", [0, -1, True])
def test_a_bad_horizon_is_an_input_error(horizon):
    with pytest.raises(InputError, match="horizon"):
        worst(Workload.from_token_lists(PAGING3), 2, "lru", horizon)


def test_a_deterministic_outcome_is_one_branch_of_probability_one():
    w = Workload.from_token_lists(TREE)
    p = kv.policy_class("lru").create(w.trie, 3, backend="python")
    hits, branches = outcomes(p, [0])
    assert hits == [0] and len(branches) == 1 and branches[0][0] == 1 and p.size == 0


def test_randomized_outcomes_sum_to_one_and_match_the_first_draw_distribution():
    w = Workload.from_token_lists([[0, 1], [0, 2], [3], [4, 5]])
    p = kv.policy_class("random-leaf").create(w.trie, 5, backend="python")
    for j in (0, 1, 2):
        p.serve([j])
    first = p.eviction_distribution([3])  # one token is due: its distribution is the whole batch's
    before = p.kept()
    _, branches = outcomes(p, [3])
    assert sum(q for q, _ in branches) == 1 and p.kept() == before
    lost: dict = {}
    for q, after in branches:
        (v,) = [v for v in before if after.kept().get(v, 0) < before[v]]
        lost[v] = lost.get(v, 0) + q
    assert {v: float(q) for v, q in lost.items()} == pytest.approx(first)
