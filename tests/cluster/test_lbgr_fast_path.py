"""lbgr-calibrated and lbgr-full route exactly as their oracle (tests/lbgr_reference.py): the routers before
their fast path for learn=bias and learn=none, and for learn=full the fixed-order arithmetic of
docs/cluster.md §lbgr-full written out independently; the same worker, hits and finish time for every
query, and the same learned state, on both of lbgr-full's paths (plain Python and the numba-compiled
kvtheory/cluster/routers/compiled/rls.py), bit for bit. A fused multiply-add or a reordered sum changes
routes (test_a_fused_or_reordered_prediction_changes_routes), so equality is checked exactly, never with a
tolerance."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from lbgr_reference import ReferenceLBGRCalibrated, ReferenceLBGRFull, dot, rls_step
from llvmlite.binding import get_host_cpu_features
from numba import njit

import kvtheory.cluster.routers.lbgr_calibrated as lbgr_calibrated
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.costmodel import cost_model_by_name
from kvtheory.cluster.routers import RouterView, rls, router_class
from kvtheory.cluster.routers.compiled import rls as compiled_rls
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
    """learn=full's path: the compiled core ("compiled") whatever the run's size, or plain Python ("python")."""
    monkeypatch.setattr(lbgr_calibrated, "long_enough", lambda *args: path == "compiled")


#: learn=full has two paths; bias and none have one
LEARNING = [("full", "compiled"), ("full", "python"), ("bias", "python"), ("none", "python")]


def assert_same_routes(w, cl, router: str, eviction: str, **options) -> None:
    fast = simulate(w, cl, router, eviction, **options)
    reference = simulate(w, cl, REFERENCE[router], eviction, **options)
    assert outcome(fast) == outcome(reference)


@pytest.mark.slow
@pytest.mark.parametrize("router", ["lbgr-full", "lbgr-calibrated"])
@pytest.mark.parametrize("learn, path", LEARNING)
@pytest.mark.parametrize("name", ["gsp", "multiturn"])
def test_routes_equal_the_reference_routers(monkeypatch, router, learn, path, name):
    take_path(monkeypatch, path)
    for seed in (0, 1):
        w = workload(name, seed)
        for m, heterogeneous in ((2, False), (3, True), (4, False), (7, False), (8, True)):
            for oracle in (False, True):
                for eviction in ("rlt", "lru"):
                    options = {"seed": seed, "oracle": oracle, "router_options": {"learn": learn}}
                    assert_same_routes(w, cluster(m, heterogeneous), router, eviction, **options)


@pytest.mark.slow
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
@pytest.mark.parametrize("path", ["compiled", "python"])
def test_options_and_engines_keep_the_routes(monkeypatch, path, router, options):
    take_path(monkeypatch, path)
    for name in ("gsp", "multiturn"):
        assert_same_routes(workload(name, 2), cluster(4), router, "rlt", seed=2, **options)


def test_the_compiled_path_is_taken_when_it_pays_off(monkeypatch):
    w, cl = workload("gsp", 0), cluster(2)
    view = RouterView(w, cl, [4] * len(w))
    for path in ("compiled", "python"):
        take_path(monkeypatch, path)
        assert router_class("lbgr-full")(view)._compiled is (path == "compiled")
        assert router_class("lbgr-calibrated")(view)._compiled is False  # learn=bias needs no numba


@pytest.mark.slow
def test_a_short_run_in_a_fresh_process_does_not_load_numba():
    """As the policies' cores (tests/policies/test_compiled_cores.py): a short lbgr-full run with a policy that has no
    compiled core in use takes the Python path without paying numba's load; a long one (here: the threshold
    lowered) loads it, with the same routes."""
    script = (
        "import sys\n"
        "from kvtheory.cluster.cluster import Cluster\n"
        "from kvtheory.cluster.simulation import simulate\n"
        "from kvtheory.policies import dispatch\n"
        "from kvtheory.workloads import generate\n"
        "w = generate('gsp', {'groups': 4, 'prompts': 4, 'lengths': [64, 128]}, seed=0)\n"
        "cluster = Cluster.uniform(2, 300, a_miss=1e-4, a_cached=1e-5, decode_base=1e-2)\n"
        "python_path = simulate(w, cluster, 'lbgr-full', 'lru')\n"
        "assert 'numba' not in sys.modules\n"
        "dispatch.CORE_MIN_QUERIES = 3\n"
        "compiled_path = simulate(w, cluster, 'lbgr-full', 'lru')\n"
        "assert 'numba' in sys.modules\n"
        "assert compiled_path.worker.tolist() == python_path.worker.tolist()\n"
        "assert compiled_path.finish.tolist() == python_path.finish.tolist()\n"
        "assert compiled_path.router_state == python_path.router_state\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def fma(a: float, b: float, c: float) -> float:
    """a * b + c rounded once (exact rational arithmetic, then one rounding to the nearest double)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def fused(weights, i, miss, hit, out, load):
    """w_i . x as a chain of fused multiply-adds (the order OpenBLAS's SkylakeX ddot rounds in)."""
    w = weights[i]
    return fma(1.0, w[4], fma(load, w[3], fma(out, w[2], fma(hit, w[1], miss * w[0]))))


def reordered(weights, i, miss, hit, out, load):
    """w_i . x summed right to left."""
    w = weights[i]
    return miss * w[0] + (hit * w[1] + (out * w[2] + (load * w[3] + w[4])))


@pytest.mark.parametrize("prediction", [fused, reordered])
def test_a_fused_or_reordered_prediction_changes_routes(monkeypatch, prediction):
    """The comparison sees one rounding: the prediction computed with fused multiply-adds, or summed in
    another order, changes this run's routes."""
    take_path(monkeypatch, "python")
    w, cl, options = workload("gsp", 0), cluster(7), {"seed": 0, "router_options": {"learn": "full"}}
    assert_same_routes(w, cl, "lbgr-calibrated", "rlt", **options)
    monkeypatch.setattr(rls, "predict", prediction)
    changed = simulate(w, cl, "lbgr-calibrated", "rlt", **options)
    assert changed.worker.tolist() != simulate(w, cl, ReferenceLBGRCalibrated, "rlt", **options).worker.tolist()


# -- the arithmetic on random inputs: Python = compiled = the independent reference -----------------------------


def random_state(rng, m: int):
    weights = rng.normal(size=(m, 5)) * 10.0 ** rng.uniform(-3, 1, size=(m, 5))
    covariance = rng.normal(size=(m, 25)) * 10.0 ** rng.uniform(-3, 3, size=(m, 25))
    feature = (rng.normal(size=4) * 10.0 ** rng.uniform(-6, 3, size=4)).tolist()
    return weights, covariance, feature


def near_cancelling_state(rng, m: int):
    """Inputs on which a fused multiply-add rounds otherwise: one product x_k w_k = (1 + d)(1 - d) = 1 - d^2
    (d = 2^-27 .. 2^-52), rounded to 1 on its own but kept by a fused multiply-add, is added to -1 (the sum
    before it, or the product after it); likewise in every row of P x (the row a multiple of w by 1, -1 or
    1/2)."""
    weights, covariance, _ = random_state(rng, m)
    k = int(rng.integers(0, 4))  # the term x_k w_k that nearly cancels
    d = 2.0 ** -int(rng.integers(27, 53))
    x = [1.0, 1.0, 1.0, 1.0]
    x[k] = 1.0 + d
    weights[:] = 0.0
    weights[:, 1 if k == 0 else 0] = -1.0
    weights[:, k] = 1.0 - d
    factors = rng.choice([1.0, -1.0, 0.5], size=(m, 5, 1))
    covariance[:] = (weights[:, None, :] * factors).reshape(m, 25)
    return weights, covariance, x


def test_the_compiled_prediction_rounds_as_the_python_one():
    rng = np.random.default_rng(12)
    fused_differs = 0
    for trial in range(6000):
        weights, _, feature = (near_cancelling_state if trial % 2 else random_state)(rng, 3)
        expected = rls.predict(weights.tolist(), 1, *feature)
        assert compiled_rls.predict(weights, 1, *feature) == expected
        assert expected == dot(weights[1].tolist(), [*feature, 1.0])
        fused_differs += fused(weights, 1, *feature) != expected
    assert fused_differs > 2000  # the inputs do separate a fused chain from separate roundings


@pytest.mark.slow
def test_the_compiled_rls_step_rounds_as_the_python_one():
    """rls.rls_update on lists, compiled on arrays and the reference's rls_step on nested lists agree bit for
    bit, on random states (half of them a symmetric positive definite covariance, as the router keeps) and on
    states where a fused multiply-add would round otherwise."""
    rng = np.random.default_rng(13)
    capped = 0
    for trial in range(6000):
        weights, covariance, feature = (near_cancelling_state if trial % 3 == 2 else random_state)(rng, 2)
        if trial % 3 == 1:
            a = covariance[0].reshape(5, 5)
            covariance[0] = (a @ a.T * 10.0 ** rng.uniform(-4, 0)).ravel()
        latency, lam = float(rng.uniform(0, 50)), float(rng.choice([0.992, 1.0, 0.9]))
        cap = float(rng.choice([5.0, 5e6, 1e-3]))
        error = latency - rls.predict(weights.tolist(), 0, *feature)
        w, P = weights.tolist(), covariance.tolist()
        expected = rls.rls_update(w, P, 0, *feature, error, lam, cap)
        reference_w, reference_P = weights[0].tolist(), covariance[0].reshape(5, 5).tolist()
        assert rls_step(reference_w, reference_P, [*feature, 1.0], error, lam, cap) == expected
        assert compiled_rls.rls_update(weights, covariance, 0, *feature, error, lam, cap) == expected
        assert weights[0].tobytes() == np.array(w[0]).tobytes() == np.array(reference_w).tobytes()
        assert covariance[0].tobytes() == np.array(P[0]).tobytes() == np.array(reference_P).ravel().tobytes()
        capped += expected and sum(P[0][::6]) == pytest.approx(cap)
    assert capped > 100  # the trace cap is exercised


#: fused multiply-add mnemonics: x86-64 FMA3 (vfmadd231sd, vfnmsub213pd, vfmaddsub...), arm64 (fmadd, fnmsub, fmla)
FUSED = re.compile(r"v?f(n?m(add|sub)|ml[as])")


def fused_instructions(function, fastmath: bool) -> list[str]:
    """The fused multiply-add instructions in ``function``'s source compiled anew (cached code cannot be
    inspected) with the same signatures, with or without fast-math."""
    fresh = njit(fastmath=fastmath)(function.py_func)
    for signature in function.signatures:
        fresh.compile(signature)
    lines = [line.split() for assembly in fresh.inspect_asm().values() for line in assembly.splitlines()]
    return [words[0] for words in lines if words and FUSED.match(words[0])]


@pytest.mark.slow
def test_the_compiled_code_has_no_fused_multiply_add():
    """LLVM did not contract a product and a sum into one fused multiply-add in either compiled function; with
    fast-math it does (where the CPU has them), so the check would see one."""
    for function in (compiled_rls.predict, compiled_rls.rls_update):
        assert function.signatures  # compiled by the tests above
        assert fused_instructions(function, fastmath=False) == []
    if get_host_cpu_features().get("fma"):
        assert fused_instructions(compiled_rls.rls_update, fastmath=True)
