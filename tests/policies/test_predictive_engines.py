"""predictive-marker's engines take the same decisions and draws: the per-edge engine (runs of one edge's tokens,
draws in blocks) as the per-token reference (tests/predictive_marker_reference.py, the policy as first written: a
step and a choice over every candidate per evicted token), and the compiled core as the per-edge engine, batch
by batch and over whole runs; hits, the cache, the phases and the generator's state after the run all equal, on
several families, seeds, budgets, batch sizes 1-3, every predictor and both eviction amounts."""

from __future__ import annotations

import numpy as np
import pytest
from predictive_marker_reference import ReferencePredictiveMarker

from kvtheory import InputError, run_policy
from kvtheory.model.batches import batches
from kvtheory.model.predictions import predict
from kvtheory.policies import dispatch
from kvtheory.policies.blind_oracle import BlindOracle
from kvtheory.policies.compiled.predictive import CompiledPredictiveMarker
from kvtheory.policies.predictive_marker import PredictiveMarker
from kvtheory.workloads import generate

PREDICTORS = [("oracle", None), ("logdis", 1.0), ("dis", 0.5), ("bin", 0.3), ("adversarial", None), ("learned", None)]


def _budgets(workload, batch: int, seed: int) -> list[int]:
    """The smallest budget the batch allows (plus the seed), a quarter and a half of the distinct tokens."""
    least, distinct = batch * workload.max_length, workload.trie.distinct_tokens
    return sorted({least + seed, max(least, distinct // 4), max(least, distinct // 2)})


#: a multi-turn chat and a GSP small enough for a per-token reference (the defaults hold thousands of long queries)
SMALL = {
    "multiturn": {"conversations": 6, "turns": [2, 3], "user_len": 12, "output_len": 6, "system_len": 8},
    "gsp": {"groups": 4, "prompts": 4, "lengths": [8, 16, 32]},
}


def _cases(families, seeds, predictors=PREDICTORS, sizes=(1, 2, 3)):
    for family in families:
        for seed in seeds:
            workload = generate(family, SMALL.get(family), seed=seed)
            for batch in sizes:
                for budget in _budgets(workload, batch, seed):
                    for predictor, noise in predictors:
                        for amount in ("shortfall", "allocation"):
                            yield workload, budget, batch, predictor, noise, seed, amount


def _pair(make_other, workload, budget, batch, predictor, noise, seed, amount):
    schedule = list(batches(len(workload), batch))
    told = predict(workload.trie, schedule, predictor, noise=noise, seed=seed)
    options = {"seed": seed, "evict_amount": amount, "predictions": told}
    return schedule, PredictiveMarker(workload.trie, budget, **options), make_other(workload.trie, budget, **options)


def _assert_same_batch_by_batch(make_other, case) -> None:
    schedule, engine, other = _pair(make_other, *case)
    for group in schedule:
        assert engine.serve(group) == other.serve(group), case[1:]
        assert engine.kept() == other.kept() and engine.size == other.size, case[1:]
    assert engine.phases == other.phases, case[1:]
    assert engine._rng.bit_generator.state == other._rng.bit_generator.state, case[1:]


def _compiled(trie, budget, **options):
    return CompiledPredictiveMarker(PredictiveMarker, trie, budget, **options)


def test_the_per_edge_engine_is_the_per_token_reference():
    for case in _cases(["paging", "random-tree"], [0], PREDICTORS[:2] + PREDICTORS[4:5], sizes=(1, 2)):
        _assert_same_batch_by_batch(ReferencePredictiveMarker, case)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["paging", "random-tree", "cyclic", "yao"])
def test_the_per_edge_engine_is_the_per_token_reference_on_more_seeds_and_families(family):
    for case in _cases([family], [0, 1, 2]):
        _assert_same_batch_by_batch(ReferencePredictiveMarker, case)


@pytest.mark.slow
def test_the_per_edge_engine_is_the_per_token_reference_where_candidates_go_round_robin():
    """A small GSP: many leaves of one key and depth, drained a token each in turn; chains long enough to draw."""
    workload = generate("gsp", {"groups": 4, "prompts": 4}, seed=0)
    budget = workload.trie.distinct_tokens // 4
    for predictor, noise in [("oracle", None), ("logdis", 1.0), ("adversarial", None)]:
        _assert_same_batch_by_batch(ReferencePredictiveMarker, (workload, budget, 1, predictor, noise, 0, "shortfall"))


def test_the_compiled_core_is_the_per_edge_engine_batch_by_batch():
    for case in _cases(["paging", "random-tree"], [0], PREDICTORS[:2] + PREDICTORS[4:5], sizes=(1, 2)):
        _assert_same_batch_by_batch(_compiled, case)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["paging", "random-tree", "cyclic", "yao", "multiturn", "gsp"])
def test_the_compiled_core_is_the_per_edge_engine_on_more_seeds_and_families(family):
    for case in _cases([family], [0, 1, 2]):
        _assert_same_batch_by_batch(_compiled, case)


@pytest.mark.parametrize("family", ["random-tree", "paging", pytest.param("cyclic", marks=pytest.mark.slow)])
def test_a_whole_run_on_the_compiled_core_is_the_per_edge_engine(family):
    """run_policy on backend "compiled" (one kernel call) and "python" give the same hits and eta."""
    for seed in range(3):
        workload = generate(family, seed=seed)
        for batch in (1, 2, 3):
            for predictor, noise in PREDICTORS:
                options = {"predictor": predictor, "noise": noise, "seed": seed, "batch": batch}
                budgets = _budgets(workload, batch, seed)
                budget = budgets[seed % len(budgets)]
                python = run_policy(workload, budget, "predictive-marker", backend="python", **options)
                compiled = run_policy(workload, budget, "predictive-marker", backend="compiled", **options)
                assert np.array_equal(python.query_hits, compiled.query_hits), (seed, batch, predictor)
                assert python.eta == compiled.eta


def test_auto_takes_the_core_from_its_token_threshold_and_a_subclass_has_none_unless_it_opts_in():
    workload = generate("random-tree", seed=0)
    told = predict(workload.trie, list(batches(len(workload), 1)), "oracle")
    cls = PredictiveMarker
    below = workload.trie.sequence_tokens < cls.compiled_min_tokens
    made = dispatch.told_object(cls, workload.trie, workload.max_length, told)
    assert isinstance(made, CompiledPredictiveMarker) != below
    made = dispatch.told_object(cls, workload.trie, workload.max_length, told, backend="compiled")
    assert isinstance(made, CompiledPredictiveMarker)

    class OwnBlindOracle(BlindOracle):  # a rule of its own: no core until it opts in (compiled_core = True)
        name = "own-blind-oracle"

    with pytest.raises(InputError, match="'own-blind-oracle' has no compiled engine"):
        run_policy(workload, workload.max_length, OwnBlindOracle, backend="compiled", predictor="oracle")


def test_the_compiled_core_refuses_predictions_made_for_other_batches():
    workload = generate("paging", seed=0)
    told = predict(workload.trie, list(batches(len(workload), 2)), "oracle")
    with pytest.raises(InputError, match="not the ones the predictions were made for"):
        _compiled(workload.trie, 4, predictions=told).serve_all(1)
    with pytest.raises(InputError, match="not the one the predictions were made for"):
        _compiled(workload.trie, 4, predictions=told).serve([0])
    with pytest.raises(InputError, match="give a predictor"):
        _compiled(workload.trie, 4)
