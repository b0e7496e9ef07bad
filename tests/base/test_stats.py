"""Summary statistics against numbers computed by hand: the sample standard deviation (n - 1 in the
denominator), Student-t half-widths and one-sided bounds, and the ratio report built on them.

The sample 2, 4, 4, 4, 5, 5, 7, 9 (n = 8) has mean 5 and squared deviations summing to 32, so its sample
standard deviation is sqrt(32 / 7) = 2.138..., while dividing by n would give exactly 2. Student-t
quantiles with 7 degrees of freedom, from the tables: t(0.975) = 2.3646242516, t(0.95) = 1.8945786051,
t(0.995) = 3.4994832974.
"""

from __future__ import annotations

import math
import statistics

import pytest

from kvtheory import Workload
from kvtheory.ratio import competitive_ratio, harmonic, ratio_of, steady_ratio
from kvtheory.stats import lower_confidence_bound, summarize, upper_confidence_bound

SAMPLE = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
MEAN = 5.0
STD = math.sqrt(32 / 7)
T975, T95, T995 = 2.3646242516, 1.8945786051, 3.4994832974
EXACT = 1e-9  # relative: the quantiles above are given to 10 decimals


def test_summary_has_the_sample_standard_deviation_and_the_student_t_interval():
    summary = summarize(SAMPLE)
    assert summary.n == 8 and summary.level == 0.95
    assert summary.mean == MEAN
    assert summary.std == pytest.approx(STD, rel=EXACT)
    half = T975 * STD / math.sqrt(8)  # 1.7874...
    assert summary.ci[0] == pytest.approx(MEAN - half, rel=EXACT)
    assert summary.ci[1] == pytest.approx(MEAN + half, rel=EXACT)


def test_summary_level_picks_the_quantile():
    for level, t in ((0.90, T95), (0.99, T995)):
        lo, hi = summarize(SAMPLE, level=level).ci
        half = t * STD / math.sqrt(8)
        assert (lo, hi) == (pytest.approx(MEAN - half, rel=EXACT), pytest.approx(MEAN + half, rel=EXACT))


def test_one_sided_bounds_use_the_one_sided_quantile():
    half = T95 * STD / math.sqrt(8)
    assert upper_confidence_bound(SAMPLE) == pytest.approx(MEAN + half, rel=EXACT)
    assert lower_confidence_bound(SAMPLE) == pytest.approx(MEAN - half, rel=EXACT)
    half = T975 * STD / math.sqrt(8)
    assert upper_confidence_bound(SAMPLE, level=0.975) == pytest.approx(MEAN + half, rel=EXACT)
    assert lower_confidence_bound(SAMPLE, level=0.975) == pytest.approx(MEAN - half, rel=EXACT)


def test_a_single_value_has_no_spread_and_no_values_are_an_error():
    one = summarize([3.5])
    assert (one.mean, one.std, one.ci, one.n) == (3.5, 0.0, (3.5, 3.5), 1)
    assert upper_confidence_bound([3.5]) == lower_confidence_bound([3.5]) == 3.5
    with pytest.raises(ValueError):
        summarize([])


def test_two_values():
    # mean 2, sample std sqrt(2), t(0.975) with 1 degree of freedom = 12.7062047362
    summary = summarize([1.0, 3.0])
    assert summary.std == pytest.approx(math.sqrt(2), rel=EXACT)
    # half-width t * sqrt(2) / sqrt(2) = t
    assert summary.ci == (pytest.approx(2.0 - 12.7062047362, rel=EXACT), pytest.approx(2.0 + 12.7062047362, rel=EXACT))


# -- the ratio report ---------------------------------------------------------------------------------


def test_ratio_report_summarises_its_seeds_with_the_sample_statistics():
    # three leaves of three tokens under a shared head, budget 10: RLT's hits depend on the seed
    queries = [[0, 1, 1, 1], [0, 2, 2, 2], [0, 3, 3, 3], [0, 4, 4, 4], [0, 1, 1, 1], [0, 2, 2, 2], [0, 3, 3, 3]] * 3
    report = competitive_ratio(Workload.from_token_lists(queries), 10, "rlt", seeds=range(6))
    record = report.to_dict()
    ratios = [run.misses / report.opt_misses for run in report.runs]
    assert len(set(ratios)) > 1, "the seeds must differ for this test to mean anything"
    assert record["ratios"] == ratios
    assert record["ratio_mean"] == pytest.approx(statistics.mean(ratios), rel=1e-12)
    assert record["ratio_std"] == pytest.approx(statistics.stdev(ratios), rel=1e-12)
    assert record["misses_mean"] == pytest.approx(statistics.mean(run.misses for run in report.runs), rel=1e-12)
    # two-sided 95%: t(0.975) with 5 degrees of freedom = 2.5705818356
    half = 2.5705818356 * statistics.stdev(ratios) / math.sqrt(6)
    lo, hi = record["ratio_ci95"]
    assert lo == pytest.approx(record["ratio_mean"] - half, rel=EXACT)
    assert hi == pytest.approx(record["ratio_mean"] + half, rel=EXACT)
    worst = max(range(6), key=lambda i: (ratios[i], -i))
    assert record["worst_seed"] == report.runs[worst].seed and record["worst_ratio"] == ratios[worst]
    assert record["seeds"] == list(range(6))


def test_ratios_on_their_edge_cases():
    assert ratio_of(6, 4) == 1.5 and ratio_of(0, 0) == 1.0 and ratio_of(3, 0) == math.inf
    # (ALG - D) / (OPT - D) with D compulsory misses
    assert steady_ratio(10, 7, 4) == 2.0
    assert steady_ratio(4, 4, 4) == 1.0 and steady_ratio(5, 4, 4) == math.inf
    assert harmonic(0) == 0.0 and harmonic(1) == 1.0 and harmonic(3) == pytest.approx(11 / 6, rel=1e-15)
