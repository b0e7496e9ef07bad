"""Heavy-tailed versus uniform query lengths over a shared-prefix structure (docs/formats.md §heavytail)."""

from __future__ import annotations

import math

import numpy as np

from kvtheory.errors import require
from kvtheory.model.workload import Workload
from kvtheory.workloads._common import (
    LLAMA3_VOCAB,
    arrange,
    build,
    check_common,
    distinct_ids,
    normalize_order,
    poisson_arrivals,
    shared_prefix_family,
    streams,
)
from kvtheory.workloads.registry import register

DISTRIBUTIONS = ("pareto", "lognormal", "uniform")


def suffix_lengths(
    rng: np.random.Generator, n: int, distribution: str, mean_len: int, shape: float, sigma: float, max_len: int
) -> np.ndarray:
    """``n`` suffix lengths of mean about ``mean_len``, rounded and clipped to [1, max_len].

    ``uniform``: integers uniform on [1, 2 * mean_len - 1]. ``pareto``: x_m * (1 + Lomax(shape)), a
    classic Pareto with tail P(X > x) = (x_m / x)^shape and x_m = mean_len * (shape - 1) / shape
    (shape > 1 for a finite mean; shape <= 2 has infinite variance). ``lognormal``: exp(N(mu, sigma^2))
    with mu = ln(mean_len) - sigma^2 / 2. Clipping at max_len lowers the heavy-tailed means a little.
    """
    if distribution == "uniform":
        raw = rng.integers(1, 2 * mean_len, size=n).astype(np.float64)
    elif distribution == "pareto":
        raw = mean_len * (shape - 1.0) / shape * (1.0 + rng.pareto(shape, size=n))
    else:
        raw = rng.lognormal(math.log(mean_len) - sigma**2 / 2.0, sigma, size=n)
    return np.clip(np.rint(raw), 1, max_len).astype(np.int64)


@register("heavytail")
def heavytail(
    *,
    seed: int = 0,
    queries: int = 2048,
    groups: int = 32,
    prefix_len: int = 512,
    mean_len: int = 512,
    distribution: str = "pareto",
    shape: float = 1.5,
    sigma: float = 1.0,
    max_len: int = 65536,
    output_len: int = 4,
    rate: float = 12.0,
    order: str = "random",
    vocab: int = LLAMA3_VOCAB,
) -> Workload:
    """Heavy-tailed (pareto, lognormal) or uniform query lengths over groups with shared prefixes.

    Each of the n = ``queries`` queries joins one of G = ``groups`` groups uniformly at random; it is
    its group's ``prefix_len``-token shared prefix followed by a unique suffix whose length X is drawn
    i.i.d. from ``distribution``, all three with mean about ``mean_len`` so that only the shape of the
    length distribution differs: uniform on [1, 2 * mean_len - 1]; Pareto with tail index ``shape``
    (P(X > x) = (x_m / x)^shape, x_m = mean_len * (shape - 1) / shape, so shape 1.5 has a finite mean
    and infinite variance); lognormal with log-scale deviation ``sigma``. X is rounded and clipped to
    [1, max_len]. Groups start with distinct tokens and the suffixes of a group with distinct tokens, so
    queries share exactly their group's prefix. Ids are uniform on [0, vocab).

    Orders as in ``gsp`` (``random`` permutation, ``grouped``, ``round-robin`` over groups); Poisson
    arrivals at ``rate`` queries/s; content, order and arrivals use separate streams spawned from
    ``default_rng(seed)``. With the defaults, max/median of the query lengths is about 1.5 for uniform
    and in the tens for pareto.

    >>> w = heavytail(seed=0, queries=6, groups=2, prefix_len=4, mean_len=3, distribution="uniform")
    >>> len(w), all(5 <= q.length <= 9 for q in w)
    (6, True)
    """
    require(queries >= 1 and groups >= 1, f"queries={queries} and groups={groups} must be >= 1")
    require(prefix_len >= 1, f"prefix_len={prefix_len} must be >= 1")
    require(mean_len >= 1, f"mean_len={mean_len} must be >= 1")
    require(distribution in DISTRIBUTIONS, f"distribution={distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
    require(shape > 1.0, f"shape={shape} must be > 1 (the Pareto mean is infinite otherwise)")
    require(sigma > 0.0, f"sigma={sigma} must be > 0")
    require(max_len >= 1, f"max_len={max_len} must be >= 1")
    check_common(output_len, vocab)
    order = normalize_order(order)
    content, ordering, timing = streams(seed)
    membership = content.integers(0, groups, size=queries)
    lens = suffix_lengths(content, queries, distribution, mean_len, shape, sigma, max_len)
    heads = distinct_ids(content, groups, vocab, "groups")
    members = [
        shared_prefix_family(content, int(heads[g]), prefix_len, lens[membership == g].tolist(), vocab)
        for g in range(groups)
    ]
    tokens = arrange(members, order, ordering)
    return build(tokens, poisson_arrivals(timing, len(tokens), rate), output_len)
