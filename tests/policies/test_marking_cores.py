"""guard's and lnonmarker's compiled core (kvtheory/policies/compiled/marking.py) takes the per-token classes'
decisions and draws: hits, the cache, the size after every batch, the phases and the generator's state after the
run all equal, on every workload family (small instances: the per-token classes take a Python step per evicted
token), several seeds and budgets, batch sizes 1-3, both eviction amounts and predictors exact, noisy and
adversarial (errors detected: guard's guarded tokens and draws, lnonmarker's stale requests); whole runs through
run_policy on backends "compiled" and "python" give the same hits and eta; "auto" takes the core from its
token threshold."""

from __future__ import annotations

import numpy as np
import pytest

from kvtheory import InputError, run_policy
from kvtheory.model.batches import batches
from kvtheory.model.predictions import predict
from kvtheory.policies import dispatch
from kvtheory.policies.compiled.marking import CompiledGuard, CompiledLNonMarker
from kvtheory.policies.guard import Guard
from kvtheory.policies.lnonmarker import LNonMarker
from kvtheory.workloads import generate

RULES = [(Guard, CompiledGuard), (LNonMarker, CompiledLNonMarker)]
PREDICTORS = [("oracle", None), ("logdis", 1.0), ("bin", 0.3), ("adversarial", None)]
#: instances small enough for the per-token classes (the defaults of these families hold millions of tokens)
SMALL = {
    "multiturn": {"conversations": 6, "turns": [2, 3], "user_len": 12, "output_len": 6, "system_len": 8},
    "gsp": {"groups": 4, "prompts": 4, "lengths": [8, 16, 32]},
    "chat-blocks": {
        "conversations": 6,
        "turns": [2, 3],
        "system_len": 8,
        "user_len": 6,
        "output_len": 4,
        "block_size": 4,
    },
    "heavytail": {"queries": 40, "groups": 4, "prefix_len": 8, "mean_len": 8, "max_len": 64},
    "longdoc": {"documents": 6, "questions": 3, "lengths": [16, 32], "question_len": 4},
}
FAST = ["paging", "random-tree", "gsp"]
SLOW = ["cyclic", "yao", "adaptive", "batch", "imbalanced", "multiturn", "chat-blocks", "heavytail", "longdoc"]


def _budgets(workload, batch: int, seed: int) -> list[int]:
    """The smallest budget the batch allows (plus the seed), a quarter and a half of the distinct tokens."""
    least, distinct = batch * workload.max_length, workload.trie.distinct_tokens
    return sorted({least + seed, max(least, distinct // 4), max(least, distinct // 2)})


def _assert_same_batch_by_batch(family: str, seeds) -> None:
    for seed in seeds:
        workload = generate(family, SMALL.get(family), seed=seed)
        for batch in (1, 2, 3):
            schedule = list(batches(len(workload), batch))
            for budget in _budgets(workload, batch, seed):
                for predictor, noise in PREDICTORS:
                    told = predict(workload.trie, schedule, predictor, noise=noise, seed=seed)
                    for amount in ("shortfall", "allocation"):
                        options = {"seed": seed, "evict_amount": amount, "predictions": told}
                        for rule, core in RULES:
                            case = (rule.name, family, seed, batch, budget, predictor, amount)
                            python, compiled = (
                                rule(workload.trie, budget, **options),
                                core(rule, workload.trie, budget, **options),
                            )
                            for group in schedule:
                                assert python.serve(group) == compiled.serve(group), case
                                assert python.kept() == compiled.kept() and python.size == compiled.size, case
                            assert python.phases == compiled.phases, case
                            assert python._rng.bit_generator.state == compiled._rng.bit_generator.state, case


@pytest.mark.parametrize("family", FAST)
def test_the_compiled_core_is_the_per_token_class_batch_by_batch(family):
    _assert_same_batch_by_batch(family, [0])


@pytest.mark.slow
@pytest.mark.parametrize("family", FAST + SLOW)
def test_the_compiled_core_is_the_per_token_class_on_more_seeds_and_families(family):
    _assert_same_batch_by_batch(family, [1, 2] if family in FAST else [0, 1, 2])


def test_the_runs_exercise_every_branch_of_the_rules():
    """Errors detected (guard's guarded causes, and so its draws; lnonmarker's causes evicted by stale requests)
    and new phases occur in the cases above: the equality is not carried by the furthest choice alone."""
    workload = generate("paging", seed=0)
    schedule = list(batches(len(workload), 1))
    told = predict(workload.trie, schedule, "adversarial", seed=0)
    guard = Guard(workload.trie, 3, seed=0, predictions=told)
    lnon = LNonMarker(workload.trie, 3, seed=0, predictions=told)
    guarded = stale = 0
    for group in schedule:
        guard.serve(group)
        lnon.serve(group)
        guarded += len(guard._guarded)
        stale += sum(1 for value in lnon._evicted.values() if value)
    assert guarded > 0 and stale > 0 and guard.phases > 1 and lnon.phases > 1


@pytest.mark.parametrize("name", ["guard", "lnonmarker"])
def test_a_whole_run_on_the_compiled_core_is_the_per_token_class(name):
    """run_policy on backend "compiled" (one kernel call) and "python" give the same hits and eta."""
    for seed in range(2):
        workload = generate("random-tree", seed=seed)
        for batch in (1, 2, 3):
            for predictor, noise in PREDICTORS:
                options = {"predictor": predictor, "noise": noise, "seed": seed, "batch": batch}
                budget = _budgets(workload, batch, seed)[seed]
                python = run_policy(workload, budget, name, backend="python", **options)
                compiled = run_policy(workload, budget, name, backend="compiled", **options)
                assert np.array_equal(python.query_hits, compiled.query_hits), (seed, batch, predictor)
                assert python.eta == compiled.eta


@pytest.mark.parametrize(("rule", "core"), RULES)
def test_auto_takes_the_core_from_its_token_threshold(rule, core):
    workload = generate("random-tree", seed=0)
    told = predict(workload.trie, list(batches(len(workload), 1)), "oracle")
    below = workload.trie.sequence_tokens < rule.compiled_min_tokens
    assert isinstance(dispatch.told_object(rule, workload.trie, workload.max_length, told), core) != below
    made = dispatch.told_object(rule, workload.trie, workload.max_length, told, backend="compiled")
    assert isinstance(made, core)


def test_the_compiled_core_refuses_predictions_made_for_other_batches():
    workload = generate("paging", seed=0)
    told = predict(workload.trie, list(batches(len(workload), 2)), "oracle")
    for rule, core in RULES:
        with pytest.raises(InputError, match="not the ones the predictions were made for"):
            core(rule, workload.trie, 4, predictions=told).serve_all(1)
        with pytest.raises(InputError, match="give a predictor"):
            core(rule, workload.trie, 4)
