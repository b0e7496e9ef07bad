"""Summary statistics for randomized runs: means with Student-t confidence intervals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _t_quantile(p: float, dof: int) -> float:
    """Quantile of Student's t with ``dof`` degrees of freedom (scipy is imported on first use)."""
    from scipy import stats

    return float(stats.t.ppf(p, dof))


@dataclass(frozen=True)
class Summary:
    """Mean, sample standard deviation and a two-sided confidence interval for the mean."""

    mean: float
    std: float
    ci: tuple[float, float]
    n: int
    level: float


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    """Mean with a two-sided Student-t interval at ``level``; a single value gets a zero-width interval.

    >>> summarize([1.0, 2.0, 3.0]).ci[0] < 2.0 < summarize([1.0, 2.0, 3.0]).ci[1]
    True
    """
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        raise ValueError("no values to summarize")
    mean = float(array.mean())
    if array.size == 1:
        return Summary(mean, 0.0, (mean, mean), 1, level)
    std = float(array.std(ddof=1))
    half = float(_t_quantile(0.5 + level / 2, array.size - 1) * std / np.sqrt(array.size))
    return Summary(mean, std, (mean - half, mean + half), int(array.size), level)


def upper_confidence_bound(values: Sequence[float], level: float = 0.95) -> float:
    """One-sided Student-t upper bound for the mean at ``level`` (the value itself for one sample)."""
    array = np.asarray(values, dtype=float)
    if array.size == 1:
        return float(array[0])
    std = float(array.std(ddof=1))
    return float(array.mean() + _t_quantile(level, array.size - 1) * std / np.sqrt(array.size))


def lower_confidence_bound(values: Sequence[float], level: float = 0.95) -> float:
    """One-sided Student-t lower bound for the mean at ``level``."""
    array = np.asarray(values, dtype=float)
    return -upper_confidence_bound(-array, level)
