"""Claims P4-P7 (lnonmarker, guard, bo-rlt-switch): each holds on its families where it is stated, P5 and P7
fail where one long query sets k, and each check can fail: a scaled-down bound or a dropped assumption comes back with
a violation and a counterexample."""

from __future__ import annotations

import pytest

from proofs_check.checker import check_claim, drop_assumption
from proofs_check.claims import get
from proofs_check.results import Options

STARS = ("cyclic", "yao", "imbalanced")


def opts(tmp_path, **changes) -> Options:
    base = dict(instances=15, seeds=6, lower_seeds=4, out_dir=tmp_path, shrink_seconds=1.0)
    base.update(changes)
    return Options(**base)


@pytest.mark.slow
@pytest.mark.parametrize("claim", ["P4", "P5", "P6"])
def test_the_bounds_hold_on_stars(claim, tmp_path):
    assert check_claim(get(claim), opts(tmp_path, sources=STARS)).verdict == "holds"


@pytest.mark.slow
@pytest.mark.parametrize("claim", ["P4", "P5"])
def test_a_scaled_bound_fails(claim, tmp_path):
    scaled = check_claim(get(claim), opts(tmp_path, sources=("cyclic",), bound_scale=0.1))
    assert scaled.verdict == "VIOLATED" and scaled.counterexample is not None


def test_p6_fails_at_batch_3(tmp_path):
    dropped = drop_assumption(get("P6"), "batch-1", opts(tmp_path, sources=("multiplicity-tie",)))
    assert dropped.verdict == "VIOLATED"
    assert dropped.counterexample.alg > dropped.counterexample.opt


@pytest.mark.parametrize("claim", ["P5", "P7"])
def test_the_robust_bounds_fail_where_a_long_query_sets_k(claim, tmp_path):
    result = check_claim(get(claim), opts(tmp_path, sources=("long-then-short",)))
    assert result.verdict == "VIOLATED" == get(claim).expected_verdict
    assert result.counterexample is not None
