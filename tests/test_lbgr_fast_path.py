"""lbgr-calibrated and lbgr-full route exactly as their numpy implementation did (tests/lbgr_numpy_reference.py):
the same worker, hits and finish time for every query, and the same learned state, on both of lbgr-full's
paths (the compiled prediction and RLS step, kvtheory/cluster/routers/compiled/rls.py, and numpy), bit for
bit. A reassociated sum changes routes (test_an_unfused_prediction_changes_routes), so equality is checked
exactly, never with a tolerance."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from lbgr_numpy_reference import ReferenceLBGRCalibrated, ReferenceLBGRFull

import kvtheory.cluster.routers.lbgr_calibrated as lbgr_calibrated
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.costmodel import cost_model_by_name
from kvtheory.cluster.routers import RouterView, router_class
from kvtheory.cluster.routers.compiled import rls as compiled_rls
from kvtheory.cluster.routers.compiled.rls import predict, rls_update
from kvtheory.cluster.simulation import simulate
from kvtheory.workloads import generate

L40 = Worker.from_cost_model(cost_model_by_name("L40", "Llama-3.1-8B"))
A100 = Worker.from_cost_model(cost_model_by_name("A100-80G", "Llama-3.1-8B"))
BUDGET = 1500  # tokens per worker: well below the workloads' distinct tokens, so the workers evict
REFERENCE = {"lbgr-calibrated": ReferenceLBGRCalibrated, "lbgr-full": ReferenceLBGRFull}


def cluster(m: int, heterogeneous: bool = False) -> Cluster:
    return Cluster(tuple(replace(A100 if heterogeneous and i % 2 else L40, budget=BUDGET) for i in range(m)))


def workload(name: str, seed: int):
    if name == "gsp":
        return generate("gsp", {"groups": 12, "prompts": 10, "lengths": [64, 128, 256, 512], "rate": 40.0}, seed=seed)
    return generate("multiturn", {"conversations": 24, "turns": [2, 4, 6], "user_len": 96, "rate": 30.0}, seed=seed)


def outcome(run) -> tuple:
    return run.worker.tolist(), run.hits.tolist(), run.finish.tolist(), run.router_state


def take_path(monkeypatch, path: str) -> None:
    """learn=full's path: the compiled core ("compiled") whatever the run's size, or numpy ("numpy")."""
    monkeypatch.setattr(lbgr_calibrated, "core_pays_off", lambda *args: path == "compiled")


#: learn=full has two paths; bias and none have one
LEARNING = [("full", "compiled"), ("full", "numpy"), ("bias", "numpy"), ("none", "numpy")]


def assert_same_routes(w, cl, router: str, eviction: str, **options) -> None:
    fast = simulate(w, cl, router, eviction, **options)
    reference = simulate(w, cl, REFERENCE[router], eviction, **options)
    assert outcome(fast) == outcome(reference)


@pytest.mark.parametrize("router", ["lbgr-full", "lbgr-calibrated"])
@pytest.mark.parametrize("learn, path", LEARNING)
@pytest.mark.parametrize("name", ["gsp", "multiturn"])
def test_routes_equal_the_numpy_routers(monkeypatch, router, learn, path, name):
    take_path(monkeypatch, path)
    for seed in (0, 1):
        w = workload(name, seed)
        for m, heterogeneous in ((2, False), (3, True), (4, False), (7, False), (8, True)):
            for oracle in (False, True):
                for eviction in ("rlt", "lru"):
                    options = {"seed": seed, "oracle": oracle, "router_options": {"learn": learn}}
                    assert_same_routes(w, cluster(m, heterogeneous), router, eviction, **options)


@pytest.mark.parametrize("router", ["lbgr-full", "lbgr-calibrated"])
@pytest.mark.parametrize(
    "options",
    [
        {"router_options": {"reset_idle": True}},
        {"router_options": {"max_tree_tokens": 400}},
        {"router_options": {"rho": 1.0, "forgetting": 1.0}},
        {"router_options": {"p0": 1e3, "dt": 0.05}},
        {"engine": "continuous"},
        {"batch": 3},
        {"rate": float("inf")},
    ],
)
@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_options_and_engines_keep_the_routes(monkeypatch, path, router, options):
    take_path(monkeypatch, path)
    for name in ("gsp", "multiturn"):
        assert_same_routes(workload(name, 2), cluster(4), router, "rlt", seed=2, **options)


def test_the_compiled_path_is_taken_when_it_pays_off(monkeypatch):
    w, cl = workload("gsp", 0), cluster(2)
    view = RouterView(w, cl, [4] * len(w))
    for path in ("compiled", "numpy"):
        take_path(monkeypatch, path)
        assert router_class("lbgr-full")(view)._compiled is (path == "compiled")
        assert router_class("lbgr-calibrated")(view)._compiled is False  # learn=bias needs no numba


def test_a_short_run_in_a_fresh_process_does_not_load_numba():
    """As the policies' cores (tests/test_compiled_cores.py): a short lbgr-full run with a policy that has no
    compiled core in use takes the numpy path without paying numba's load; a long one (here: the threshold
    lowered) loads it, with the same routes."""
    script = (
        "import sys\n"
        "from kvtheory.cluster.cluster import Cluster\n"
        "from kvtheory.cluster.simulation import simulate\n"
        "from kvtheory.policies import compiled\n"
        "from kvtheory.workloads import generate\n"
        "w = generate('gsp', {'groups': 4, 'prompts': 4, 'lengths': [64, 128]}, seed=0)\n"
        "cluster = Cluster.uniform(2, 300, a_miss=1e-4, a_cached=1e-5, decode_base=1e-2)\n"
        "numpy_path = simulate(w, cluster, 'lbgr-full', 'lru')\n"
        "assert 'numba' not in sys.modules\n"
        "compiled.CORE_MIN_QUERIES = 3\n"
        "compiled_path = simulate(w, cluster, 'lbgr-full', 'lru')\n"
        "assert 'numba' in sys.modules\n"
        "assert compiled_path.worker.tolist() == numpy_path.worker.tolist()\n"
        "assert compiled_path.finish.tolist() == numpy_path.finish.tolist()\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_an_unfused_prediction_changes_routes(monkeypatch):
    """The comparison sees one rounding: summing w_i . x_ij left to right without fused multiply-adds
    (what a plain Python sum does) changes this run's routes."""
    take_path(monkeypatch, "compiled")
    w, cl, options = workload("gsp", 0), cluster(7), {"seed": 0, "router_options": {"learn": "full"}}
    assert_same_routes(w, cl, "lbgr-calibrated", "rlt", **options)

    def unfused(weights, i, miss, hit, out, load):
        a = weights[i].tolist()
        return (((miss * a[0] + hit * a[1]) + out * a[2]) + load * a[3]) + a[4]

    monkeypatch.setattr(compiled_rls, "predict", unfused)
    fast = simulate(w, cl, "lbgr-calibrated", "rlt", **options)
    assert fast.worker.tolist() != simulate(w, cl, ReferenceLBGRCalibrated, "rlt", **options).worker.tolist()


# -- the compiled kernels against numpy, on random inputs ------------------------------------------------------


def random_state(rng, m):
    weights = rng.normal(size=(m, 5)) * 10.0 ** rng.uniform(-3, 1, size=(m, 5))
    covariance = rng.normal(size=(m, 5, 5)) * 10.0 ** rng.uniform(-3, 3, size=(m, 5, 5))
    feature = (rng.normal(size=4) * 10.0 ** rng.uniform(-6, 3, size=4)).tolist()
    return weights, covariance, feature


def numpy_step(w, P, x, latency, lam, cap) -> bool:
    """The reference router's RLS step (tests/lbgr_numpy_reference.py, learn=full) on arrays updated in place."""
    error = latency - float(w @ x)
    px = P @ x
    denominator = lam + float(x @ px)
    if not np.isfinite(denominator) or denominator <= 0 or not np.isfinite(error):
        return False
    gain = px / denominator
    w += gain * error
    P -= np.outer(gain, px)
    P /= lam
    np.maximum(w[:4], 0.0, out=w[:4])
    trace = float(np.trace(P))
    if trace > cap:
        P *= cap / trace
    return True


def test_the_compiled_prediction_rounds_as_numpy_dot():
    rng = np.random.default_rng(12)
    unfused_differs = 0
    for _ in range(5000):
        weights, _, feature = random_state(rng, 3)
        x = np.array([*feature, 1.0])
        expected = float(weights[1] @ x)
        assert predict(weights, 1, *feature) == expected
        a = weights[1].tolist()
        unfused = sum((f * c for f, c in zip([*feature, 1.0], a)), 0.0)
        unfused_differs += unfused != expected
    assert unfused_differs > 500  # the inputs do separate the fused order from a plain sum


def test_the_compiled_rls_step_equals_numpy_bit_for_bit():
    rng = np.random.default_rng(13)
    capped = 0
    for trial in range(3000):
        weights, covariance, feature = random_state(rng, 2)
        if trial % 2:  # a symmetric positive definite covariance, as the router keeps
            a = covariance[0]
            covariance[0] = a @ a.T * 10.0 ** rng.uniform(-4, 0)
        latency, lam = float(rng.uniform(0, 50)), float(rng.choice([0.992, 1.0, 0.9]))
        cap = float(rng.choice([5.0, 5e6, 1e-3]))
        w, P = weights[0].copy(), covariance[0].copy()
        expected = numpy_step(w, P, np.array([*feature, 1.0]), latency, lam, cap)
        capped += expected and float(np.trace(P)) == pytest.approx(cap)
        assert rls_update(weights, covariance, 0, *feature, latency, lam, cap) == expected
        assert weights[0].tobytes() == w.tobytes() and covariance[0].tobytes() == P.tobytes()
    assert capped > 100  # the trace cap is exercised
