"""bo-rlt-switch's compiled core (kvtheory/policies/compiled/switch.py) takes the per-edge class's decisions and draws:
batch by batch the same hits, cache, size, followed policy, switches, each simulated policy's misses and RLT's
generator state, on every workload family (small instances), seeds, budgets, batch sizes 1-3, the predictors
oracle, logdis and adversarial and both eviction amounts; a whole run on backend "compiled" gives the per-edge
run's hits; "auto" takes the core from its token threshold."""

from __future__ import annotations

import numpy as np
import pytest

from kvtheory import InputError, Workload, run_policy
from kvtheory.model.batches import batches
from kvtheory.model.predictions import Predictions, predict
from kvtheory.policies import dispatch
from kvtheory.policies.bo_rlt_switch import BlindOracleRLTSwitch
from kvtheory.policies.compiled.switch import CompiledSwitch
from kvtheory.workloads import generate
from kvtheory.workloads.registry import GENERATORS

PREDICTORS = [("oracle", None), ("logdis", 1.0), ("adversarial", None)]

#: every family, small enough for the per-edge class (which lists every token it may evict, batch by batch)
SMALL = {
    "chat-blocks": {"conversations": 6, "system_len": 64, "user_len": 16, "output_len": 8, "block_size": 8},
    "gsp": {"groups": 4, "prompts": 4, "lengths": [32, 64, 128]},
    "heavytail": {"queries": 48, "groups": 4, "prefix_len": 16, "mean_len": 16, "max_len": 256},
    "longdoc": {"documents": 12, "lengths": [32, 64, 128], "question_len": 8},
    "multiturn": {"conversations": 8, "turns": [2, 3], "user_len": 16, "system_len": 8},
    "adaptive": {"n": 200},
    "batch": {"n": 200},
    "cyclic": {"n": 200},
    "imbalanced": {"n": 200},
    "yao": {"n": 200},
}


def _budgets(workload, batch: int, seed: int) -> list[int]:
    """The smallest budget the batch allows (plus the seed), a quarter and a half of the distinct tokens."""
    least, distinct = batch * workload.max_length, workload.trie.distinct_tokens
    return sorted({least + seed, max(least, distinct // 4), max(least, distinct // 2)})


def _cases(family: str, seeds, sizes=(1, 2, 3)):
    for seed in seeds:
        workload = generate(family, SMALL.get(family), seed=seed)
        for batch in sizes:
            for budget in _budgets(workload, batch, seed):
                for predictor, noise in PREDICTORS:
                    for amount in ("shortfall", "allocation"):
                        yield workload, budget, batch, predictor, noise, seed, amount


def _assert_same_batch_by_batch(workload, batch: int, budget: int, **options) -> int:
    """Serve ``workload`` in batches of ``batch`` on both engines; returns the switches made."""
    engine = BlindOracleRLTSwitch(workload.trie, budget, **options)
    core = CompiledSwitch(BlindOracleRLTSwitch, workload.trie, budget, **options)
    case = (len(workload), budget, batch, options["seed"], options["evict_amount"])
    for group in batches(len(workload), batch):
        assert engine.serve(group) == core.serve(group), case
        assert engine.kept() == core.kept() and engine.size == core.size, case
        assert (engine.following, engine.switches, engine.misses) == (core.following, core.switches, core.misses)
    rlt = engine.simulated["rlt"]._rng
    assert rlt.bit_generator.state == core._rng.bit_generator.state, case
    return core.switches


def _check(workload, budget, batch, predictor, noise, seed, amount) -> int:
    told = predict(workload.trie, list(batches(len(workload), batch)), predictor, noise=noise, seed=seed)
    return _assert_same_batch_by_batch(workload, batch, budget, seed=seed, evict_amount=amount, predictions=told)


@pytest.mark.parametrize("family", ["paging", "random-tree", "cyclic", "gsp"])
def test_the_compiled_core_is_the_per_edge_class_batch_by_batch(family):
    for case in _cases(family, [0]):
        _check(*case)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_the_compiled_core_is_the_per_edge_class_on_every_family(family):
    for case in _cases(family, [1, 2]):
        _check(*case)


def _worse_at_first(workload: Workload, batch: int, until: int) -> Predictions:
    """Adversarial predictions up to step ``until``, the oracle's after it."""
    schedule = list(batches(len(workload), batch))
    good, bad = predict(workload.trie, schedule, "oracle"), predict(workload.trie, schedule, "adversarial")
    told = np.where(good.requests.steps <= until, bad.predicted, good.predicted)
    return Predictions(good.requests, told, 0.0, "oracle", None)


def test_the_core_switches_both_ways_as_the_class_does():
    """A cycle over k + 1 = 17 queries of a branching tree, predicted adversarially at first and by the oracle
    after: blind-oracle falls behind, the switch follows RLT, and (with the oracle) blind-oracle catches up and is
    followed again; the core equals the class all along (so the lazy following of a cache that is not the
    followed one's is covered, not only evictions of the followed policy's own tokens)."""
    k = 16
    queries = [[i % 3, 10 + i % 5] + [100 + i] * (1 + i % 3) for i in range(k + 1)]
    workload = Workload.from_token_lists([queries[j % (k + 1)] for j in range(1200)])
    switches = set()
    for batch in (1, 2):
        for budget in (batch * workload.max_length, 43, 47):
            for until in (60, 150):
                for amount in ("shortfall", "allocation"):
                    told = _worse_at_first(workload, batch, until)
                    options = {"seed": 0, "evict_amount": amount, "predictions": told}
                    switches.add(_assert_same_batch_by_batch(workload, batch, budget, **options))
    assert max(switches) >= 2


@pytest.mark.parametrize("family", ["random-tree", "paging", "gsp"])
def test_a_whole_run_on_the_compiled_core_is_the_per_edge_run(family):
    """run_policy on backend "compiled" (one kernel call) and "python" give the same hits and eta."""
    for seed in range(2):
        workload = generate(family, SMALL.get(family), seed=seed)
        for batch in (1, 2, 3):
            for predictor, noise in PREDICTORS:
                options = {"predictor": predictor, "noise": noise, "seed": seed, "batch": batch}
                budgets = _budgets(workload, batch, seed)
                budget = budgets[seed % len(budgets)]
                python = run_policy(workload, budget, "bo-rlt-switch", backend="python", **options)
                compiled = run_policy(workload, budget, "bo-rlt-switch", backend="compiled", **options)
                assert np.array_equal(python.query_hits, compiled.query_hits), (seed, batch, predictor)
                assert python.eta == compiled.eta


def test_auto_takes_the_core_from_its_token_threshold(monkeypatch):
    cls = BlindOracleRLTSwitch
    workload = generate("random-tree", seed=0)
    told = predict(workload.trie, list(batches(len(workload), 1)), "oracle")
    tokens = workload.trie.sequence_tokens
    for threshold in (tokens, tokens + 1):
        monkeypatch.setattr(cls, "compiled_min_tokens", threshold)
        made = dispatch.told_object(cls, workload.trie, workload.max_length, told)
        assert isinstance(made, CompiledSwitch) == (tokens >= threshold)
    made = dispatch.told_object(cls, workload.trie, workload.max_length, told, backend="compiled")
    assert isinstance(made, CompiledSwitch)


def test_the_compiled_core_refuses_predictions_made_for_other_batches():
    workload = generate("paging", seed=0)
    told = predict(workload.trie, list(batches(len(workload), 2)), "oracle")
    core = CompiledSwitch(BlindOracleRLTSwitch, workload.trie, 4, predictions=told)
    with pytest.raises(InputError, match="not the ones the predictions were made for"):
        core.serve_all(1)
    with pytest.raises(InputError, match="not the one the predictions were made for"):
        core.serve([0])
    with pytest.raises(InputError, match="give a predictor"):
        CompiledSwitch(BlindOracleRLTSwitch, workload.trie, 4)
