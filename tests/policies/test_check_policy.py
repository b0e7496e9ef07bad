"""The public conformance suite (kvtheory.testing.check_policy): every built-in policy and the example
plug-ins pass it, one test per check; each kind of broken policy fails it with an AssertionError naming the
check and the rule; the rules' distributions of their next eviction are exact."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

import kvtheory as kv
from kvtheory.testing import check_policy, parametrize_with_checks, policy_checks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
from custom_policy import MostRecentLeaf  # noqa: E402
from legacy_mru import MostRecentLeaf as LegacyMRU  # noqa: E402

# importing the example registered it; the suite's other tests run every *registered* policy, so it is
# checked here as a class alone (conftest.py unregisters plug-ins after each test, not after an import)
kv.ONLINE_POLICIES.pop(MostRecentLeaf.name, None)


class UniformLeaf(kv.SamplerRule):
    """random-leaf as a plug-in rule: a uniform draw over the candidate leaf tokens."""

    name = "uniform-leaf-rule"


class CheapestFirst(kv.PriorityRule):
    """Whole-edge eviction of the leaf requested least often (ties: inserted earliest)."""

    name = "cheapest-first"
    whole_node = True

    def priority(self, leaf):
        return (leaf.requests, leaf.inserted)


@pytest.mark.slow
@parametrize_with_checks([*kv.ONLINE_POLICIES, MostRecentLeaf, LegacyMRU, UniformLeaf, CheapestFirst])
def test_policy_conforms(policy, check):
    check()


def _failing(policy, check_name: str) -> str:
    """The message of ``check_name``'s failure on ``policy`` (unshrunk: shrinking is for the user's report)."""
    checks = dict(policy_checks(policy, examples=40, shrink=False))
    with pytest.raises(AssertionError) as failed:
        checks[check_name]()
    return str(failed.value)


def test_a_policy_reporting_wrong_hits_fails_keeps_the_model():
    class Lying(kv.PriorityRule):
        name = "lying"

        def priority(self, leaf):
            return leaf.last_access

        def serve(self, batch):
            return [h + 1 for h in super().serve(batch)]

    message = _failing(Lying, "keeps_the_model")
    assert message.startswith("check_policy('lying') keeps_the_model on workload [[")
    assert "the policy reports 1 hits for query 0, the engine counts 0" in message


def test_a_wrong_cached_prefix_fails_keeps_the_model():
    class Peeks(kv.PriorityRule):
        name = "peeks-wrong"

        def priority(self, leaf):
            return leaf.last_access

        serving = False

        def serve(self, batch):  # right hits, from the right count
            self.serving = True
            try:
                return super().serve(batch)
            finally:
                self.serving = False

        def cached_prefix(self, j):  # ... but one too many when asked from outside
            return super().cached_prefix(j) + (0 if self.serving else 1)

    assert "after batch 1, cached_prefix(0) = 2, the engine counts 1" in _failing(Peeks, "keeps_the_model")


def test_an_unseeded_policy_fails_deterministic_under_a_seed():
    class Unseeded(kv.SamplerRule):
        name = "unseeded"
        _draws = random.Random()  # noqa: S311 - nondeterminism is the point

        def weight(self, leaf):
            return self._draws.random()

    assert "two runs from one seed differ" in _failing(Unseeded, "deterministic_under_a_seed")


def test_a_rule_that_differs_from_its_reference_fails_matches_the_reference(monkeypatch):
    monkeypatch.setattr(kv.LeafLRU, "refresh_on_hit", False)  # L-LRU without SGLang's refresh
    assert "the reference's" in _failing("lru", "matches_the_reference")


def test_a_compiled_engine_that_differs_fails_engines_agree(monkeypatch):
    from kvtheory.policies import dispatch

    real = dispatch.compiled_object

    def fifo_for_token_lru(cls, trie, budget, *, seed=None, evict_amount="shortfall"):
        if cls is kv.TokenLRU:
            return kv.FifoLeaf(trie, budget, evict_amount=evict_amount)
        return real(cls, trie, budget, seed=seed, evict_amount=evict_amount)

    monkeypatch.setattr(dispatch, "compiled_object", fifo_for_token_lru)
    assert "the per-edge engine has" in _failing("token-lru", "engines_agree")


def test_a_budget_of_zero_taken_fails():
    class TakesAnything(kv.PriorityRule):
        name = "takes-anything"

        def __init__(self, trie, budget, *, seed=None, evict_amount="shortfall"):
            super().__init__(trie, max(budget, 1), seed=seed, evict_amount=evict_amount)

        def priority(self, leaf):
            return 0

    assert "refuses_a_budget_below_one: B = 0 was taken" in _failing(TakesAnything, "refuses_a_budget_below_one")


def test_check_policy_takes_a_name_or_a_class_and_nothing_else():
    assert check_policy("fifo", examples=5) is None
    with pytest.raises(kv.InputError, match="unknown policy 'nope'"):
        check_policy("nope")
    with pytest.raises(TypeError, match="takes an EvictionPolicy subclass or a registered name"):
        check_policy(42)


def test_a_legacy_plugin_is_checked_with_the_amount_it_takes():
    names = [name for name, _ in policy_checks(LegacyMRU)]
    assert names == ["declares_a_name", "refuses_a_budget_below_one", "keeps_the_model", "deterministic_under_a_seed"]
    assert [name for name, _ in policy_checks("lru")][-2:] == ["engines_agree", "matches_the_reference"]


# -- the decision as a distribution ------------------------------------------------------------------------

#: three three-token leaves under a shared head fill B = 10, then a one-token leaf: one token of the first
#: three must go
CHOICES = [[0, 1, 1, 1], [0, 2, 2, 2], [0, 3, 3, 3], [0, 4]]


#: the leaves (by query) each randomized rule may evict first on CHOICES, all equally likely: rlt and
#: random-leaf choose among every unmarked leaf token; rlt-authors' third insert brings its marked count to
#: B = 10 (1 + 3 * 3 tokens), so rule P1 starts a phase that marks the third query's path again, and evict(1)
#: (R1 does not fire: 1 + 4 < 10) draws between the first two leaf nodes
FIRST_EVICTED = {"rlt": (0, 1, 2), "random-leaf": (0, 1, 2), UniformLeaf: (0, 1, 2), "rlt-authors": (0, 1)}


@pytest.mark.parametrize("policy", list(FIRST_EVICTED), ids=str)
def test_the_distribution_of_the_first_eviction_is_what_the_draws_follow(policy):
    """The distribution each randomized rule states for its next eviction, checked against 600 seeded runs:
    each leaf's count of first evictions lies in the two-sided 99.9% binomial acceptance region of its
    stated probability (at most 3 leaves, so the chance of a false alarm is under 0.3%)."""
    cls = kv.policy_class(policy) if isinstance(policy, str) else policy
    workload = kv.Workload.from_token_lists(CHOICES)
    trie = workload.trie
    first = []
    for seed in range(600):
        p = cls(trie, 10, seed=seed)
        for j in range(3):
            p.serve([j])
        distribution = p.eviction_distribution([3])
        before = p.kept()
        p.serve([3])
        after = p.kept()
        first.extend(v for v in before if after.get(v, 0) < before[v])
    leaves = [trie.end[j] for j in FIRST_EVICTED[policy]]
    assert distribution == {v: pytest.approx(1 / len(leaves)) for v in leaves}
    assert set(first) <= set(leaves) and len(first) == 600  # one token evicted per run, from a stated leaf
    counts = np.bincount([leaves.index(v) for v in first], minlength=len(leaves))
    for count in counts:
        assert binomtest(int(count), 600, 1 / len(leaves)).pvalue > 0.001, counts


def test_the_stated_distribution_leaves_the_policy_as_it_was():
    workload = kv.Workload.from_token_lists(CHOICES)
    for name in ("rlt", "random-leaf", "rlt-authors"):
        stated, plain = (
            kv.policy_class(name)(workload.trie, 10, seed=3),
            kv.policy_class(name)(workload.trie, 10, seed=3),
        )
        for j in range(3):
            stated.serve([j])
            plain.serve([j])
            stated.eviction_distribution([3])
        assert stated.kept() == plain.kept() and stated.serve([3]) == plain.serve([3])
        assert stated.kept() == plain.kept(), name


def test_a_weighted_sampler_states_its_weights_and_a_priority_rule_its_choice():
    class Weighted(kv.SamplerRule):
        name = "weighted"

        def weight(self, leaf):
            return float(leaf.edge)

    trie = kv.Workload.from_token_lists(CHOICES).trie
    sampler, priority = Weighted(trie, 10, seed=0), MostRecentLeaf(trie, 10)
    for j in range(3):
        sampler.serve([j])
        priority.serve([j])
    leaves = [trie.end[j] for j in range(3)]
    total = sum(leaves)
    assert sampler.eviction_distribution([3]) == {v: pytest.approx(v / total) for v in leaves}
    assert priority.eviction_distribution([3]) == {trie.end[2]: 1.0}  # the most recent leaf
