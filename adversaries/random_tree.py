"""Small random prefix trees: tiny alphabets make queries share prefixes, diverge and repeat."""

from __future__ import annotations

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.query import Query
from kvtheory.model.workload import Workload
from kvtheory.workloads.registry import register


@register("random-tree", kind="adversary")
def random_tree(*, seed: int = 0, queries: int = 10, max_length: int = 5, alphabet: int = 3) -> Workload:
    """Random small trie: queries of uniform length 1..max_length over a tiny alphabet, for tests.

    Query j has length L_j uniform on {1..max_length} and tokens i.i.d. uniform on {0..alphabet-1}, all
    from ``default_rng(seed)``. With a small alphabet the queries share prefixes and repeat often, which
    is what exact optima and policies need to be checked against each other on small instances (the
    same shape as the tests' hypothesis strategies). No arrival times or output lengths.

    >>> w = random_tree(seed=3, queries=4, max_length=3, alphabet=2)
    >>> len(w), all(1 <= q.length <= 3 for q in w), all(set(q.tokens.tolist()) <= {0, 1} for q in w)
    (4, True, True)
    """
    if queries < 1 or max_length < 1 or alphabet < 1:
        raise InputError(f"queries={queries}, max_length={max_length}, alphabet={alphabet} must all be >= 1")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_length + 1, size=queries)
    flat = rng.integers(0, alphabet, size=int(lengths.sum()), dtype=np.int64)
    return Workload(tuple(Query(tokens) for tokens in np.split(flat, np.cumsum(lengths)[:-1])))
