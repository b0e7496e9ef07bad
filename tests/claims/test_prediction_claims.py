"""Claims P1-P3 (eviction with predictions): each holds on its families where it is stated, and each check can
fail: a dropped assumption or a scaled-down bound comes back with a violation and a counterexample."""

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


def test_p1_holds_at_batch_1_and_fails_at_batch_3(tmp_path):
    assert check_claim(get("P1"), opts(tmp_path, sources=(*STARS, "hypothesis"))).verdict == "holds"
    dropped = drop_assumption(get("P1"), "batch-1", opts(tmp_path, sources=("multiplicity-tie",)))
    assert dropped.verdict == "VIOLATED"
    assert dropped.counterexample.alg > dropped.counterexample.opt


@pytest.mark.slow
@pytest.mark.parametrize("claim", ["P2", "P3"])
def test_predictive_marker_bounds_hold_on_stars_and_a_scaled_bound_fails(claim, tmp_path):
    assert check_claim(get(claim), opts(tmp_path, sources=STARS)).verdict == "holds"
    scaled = check_claim(get(claim), opts(tmp_path, sources=("cyclic",), bound_scale=0.1))
    assert scaled.verdict == "VIOLATED" and scaled.counterexample is not None
