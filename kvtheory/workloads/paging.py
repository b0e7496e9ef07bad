"""Depth-1 workloads: every query is one token, so the model is classic paging (docs/formats.md §paging)."""

from __future__ import annotations

import numpy as np

from kvtheory.errors import require
from kvtheory.model.workload import QueryColumns, Workload
from kvtheory.workloads.registry import register


@register("paging")
def paging(
    *,
    seed: int = 0,
    pages: int = 8,
    requests: int = 100,
    distribution: str = "uniform",
    exponent: float = 1.0,
) -> Workload:
    """Classic paging: ``requests`` one-token queries over ``pages`` pages, uniform or Zipf.

    Query j is the single token p_j in {0..pages-1}, the p_j i.i.d. from ``default_rng(seed)``:
    ``uniform`` gives P(p) = 1/pages; ``zipf`` gives P(p) proportional to (p + 1)^(-exponent), page 0
    the most popular (exponent 0 is uniform again). On such depth-1 instances a cache of B tokens is a
    paging cache of k = B pages. No arrival times or output lengths: these instances are for eviction
    only.

    >>> w = paging(seed=1, pages=3, requests=10, distribution="zipf")
    >>> len(w), {q.length for q in w}, {int(q.tokens[0]) for q in w} <= {0, 1, 2}
    (10, {1}, True)
    """
    require(pages >= 1 and requests >= 1, f"pages={pages} and requests={requests} must be >= 1")
    require(distribution in ("uniform", "zipf"), f"distribution={distribution!r} is not uniform or zipf")
    require(exponent >= 0, f"exponent={exponent} must be >= 0")
    rng = np.random.default_rng(seed)
    if distribution == "uniform":
        ids = rng.integers(0, pages, size=requests, dtype=np.int64)
    else:
        weights = np.arange(1, pages + 1, dtype=np.float64) ** -exponent
        ids = rng.choice(pages, size=requests, p=weights / weights.sum()).astype(np.int64)
    return Workload(QueryColumns(ids, np.arange(requests + 1)))
