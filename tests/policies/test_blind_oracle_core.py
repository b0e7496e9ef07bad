"""blind-oracle's compiled core (``CompiledBlindOracle``, the blind-oracle part of kvtheory/policies/compiled/switch.py
alone) serves as the per-edge class does: batch by batch the same hits, cache and size, on every workload family
(small instances), budgets, batch sizes 1-3, the predictors oracle, logdis and adversarial and both eviction
amounts; a whole run on backend "compiled" gives the per-edge run's hits, and with the oracle at batch size 1
it pays FIF's misses."""

from __future__ import annotations

import pytest
from test_switch_core import _cases

from kvtheory import run_policy
from kvtheory.model.batches import batches
from kvtheory.model.predictions import predict
from kvtheory.optimum.fif import run_fif
from kvtheory.policies.blind_oracle import BlindOracle
from kvtheory.policies.compiled.switch import CompiledBlindOracle
from kvtheory.workloads import generate
from kvtheory.workloads.registry import GENERATORS


def _check(workload, budget, batch, predictor, noise, seed, amount) -> None:
    told = predict(workload.trie, list(batches(len(workload), batch)), predictor, noise=noise, seed=seed)
    options = {"evict_amount": amount, "predictions": told}
    engine = BlindOracle(workload.trie, budget, **options)
    core = CompiledBlindOracle(BlindOracle, workload.trie, budget, **options)
    case = (len(workload), budget, batch, predictor, seed, amount)
    for group in batches(len(workload), batch):
        assert engine.serve(group) == core.serve(group), case
        assert engine.kept() == core.kept() and engine.size == core.size, case


@pytest.mark.parametrize("family", ["paging", "random-tree", "cyclic", "gsp"])
def test_the_compiled_core_is_the_per_edge_class_batch_by_batch(family):
    for case in _cases(family, [0]):
        _check(*case)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_the_compiled_core_is_the_per_edge_class_on_every_family(family):
    for case in _cases(family, [1, 2]):
        _check(*case)


@pytest.mark.parametrize("family", ["paging", "random-tree", "multiturn"])
def test_a_whole_compiled_run_is_the_per_edge_run_and_fif_with_the_oracle(family):
    workload = generate(family, seed=3)
    budget = max(workload.max_length, workload.trie.distinct_tokens // 3)
    runs = {
        backend: run_policy(workload, budget, "blind-oracle@oracle", backend=backend)
        for backend in ("python", "compiled")
    }
    assert (runs["python"].query_hits == runs["compiled"].query_hits).all()
    assert runs["compiled"].misses == run_fif(workload, budget).misses
