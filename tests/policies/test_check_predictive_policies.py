"""check_policy on the policies that follow predictions: every registered one (so every new one is included
as it is registered) passes the suite, told predictions made for each instance's schedule; a name bound to its
predictor is checked with it; a plug-in class is checked with a predictor drawn per example, so a policy broken
only under one predictor fails, the check, the instance and the predictor named."""

from __future__ import annotations

import random

import pytest

from kvtheory.policies import PREDICTIVE_POLICIES, BlindOracle, policy_class
from kvtheory.testing import check_policy, parametrize_with_checks, policy_checks
from kvtheory.testing.policies import CHECKED_PREDICTORS, predictor_of

BOUND = ["predictive-marker@logdis=1", "blind-oracle@learned", "blind-oracle@bin=0.3"]


@pytest.mark.slow
@parametrize_with_checks([*sorted(PREDICTIVE_POLICIES), *BOUND])
def test_predictive_policy_conforms(policy, check):
    check()


@pytest.mark.parametrize("policy", sorted(PREDICTIVE_POLICIES))
def test_every_predictive_policy_passes_a_short_suite(policy):
    check_policy(policy, examples=10)


def _failing(policy, check_name: str) -> str:
    checks = dict(policy_checks(policy, examples=40, shrink=False))
    with pytest.raises(AssertionError) as failed:
        checks[check_name]()
    return str(failed.value)


class Lying(BlindOracle):
    """blind-oracle that reports one hit too many on the first query of every batch."""

    name = "lying-oracle"

    def serve(self, batch):
        hits = super().serve(batch)
        return [hits[0] + 1, *hits[1:]]


def test_a_predictive_plugin_reporting_wrong_hits_fails_keeps_the_model():
    message = _failing(Lying, "keeps_the_model")
    assert message.startswith("check_policy('lying-oracle') keeps_the_model on workload [[")
    assert "the engine counts" in message and ", predictor " in message


class LiesWhenMisled(BlindOracle):
    """blind-oracle that keeps the model except when told adversarial predictions (then it overstates hits)."""

    name = "lies-when-misled"

    def serve(self, batch):
        hits = super().serve(batch)
        return [h + 1 for h in hits] if self._predictions.predictor == "adversarial" else hits


def test_a_plugin_broken_under_one_predictor_is_caught_with_that_predictor_named():
    message = _failing(LiesWhenMisled, "keeps_the_model")
    assert ", predictor adversarial" in message and "the engine counts" in message
    assert check_policy("blind-oracle@adversarial", examples=5) is None


class Unseeded(BlindOracle):
    """blind-oracle whose predictions are perturbed by an unseeded draw."""

    name = "unseeded-oracle"

    def _next_key(self, v):
        return super()._next_key(v) + random.random()


def test_an_unseeded_predictive_plugin_fails_deterministic_under_a_seed():
    assert "two runs from one seed differ" in _failing(Unseeded, "deterministic_under_a_seed")


def test_a_bound_name_is_checked_with_its_predictor_and_a_class_with_each():
    bound = policy_class("predictive-marker@logdis=1")
    assert {predictor_of(bound, seed) for seed in range(20)} == {("logdis", 1.0)}
    assert {predictor_of(BlindOracle, seed) for seed in range(20)} == set(CHECKED_PREDICTORS)
