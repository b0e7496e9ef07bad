"""Helpers shared by the adversary families: checks, the star instance, harmonic numbers, ratios.

Most worst cases of docs/claims.md live on a **star**: one shared prefix of ``L - 1`` token nodes and
``k + 1`` one-token leaves under it, every query being the prefix plus one leaf (so |q| = L = L_max). With
a budget B = k + L - 1 (equivalently k = B - L + 1, the slack of docs/model.md §The slack k), the prefix is on every
query's path and never evictable, so the cache holds the prefix and at most k leaves: on this instance
the tree model *is* classic paging with k + 1 pages and a cache of k pages (plus L - 1 compulsory prefix
misses that every algorithm, the optimum included, pays once).

Token ids are distinct ids drawn from the seed (so two seeds give isomorphic instances with different
labels): the families are deterministic under a seed, and the structure never depends on it unless the
family is randomized (``yao``, ``batch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvtheory.errors import require
from kvtheory.model.query import Query
from kvtheory.model.workload import Workload

#: Token ids of the synthetic instances are drawn from [0, VOCAB) (the Llama-3 vocabulary size).
VOCAB = 128256


def slack_from(k: int, L: int, B: int) -> int:
    """The slack k of a star instance: ``B - L + 1`` when a budget B > 0 is given, else ``k`` itself."""
    require(L >= 2, f"L={L} must be >= 2 (a shared prefix of L - 1 >= 1 tokens plus a one-token leaf)")
    if B > 0:
        require(B >= L, f"B={B} must be >= L={L} (a query longer than B is an input error)")
        k = B - L + 1
    require(k >= 1, f"k={k} must be >= 1")
    return k


def distinct_tokens(seed: int, count: int) -> np.ndarray:
    """``count`` distinct token ids drawn from ``default_rng(seed)`` on [0, VOCAB)."""
    require(count <= VOCAB, f"the instance needs {count} distinct token ids but only {VOCAB} exist")
    return np.random.default_rng(seed).choice(VOCAB, size=count, replace=False).astype(np.int64)


@dataclass(frozen=True)
class Star:
    """A shared prefix of ``L - 1`` tokens with ``leaves`` children; leaf i's query is ``queries[i]``.

    Each leaf is ``leaf_len`` tokens long (one for the paging instances), and the queries share exactly
    the prefix: their first leaf tokens are pairwise distinct.
    """

    L: int
    queries: tuple[np.ndarray, ...]

    @property
    def leaves(self) -> int:
        return len(self.queries)

    @classmethod
    def build(cls, seed: int, prefix_len: int, leaves: int, leaf_len: int = 1) -> Star:
        require(prefix_len >= 1, f"the shared prefix needs at least one token, got {prefix_len}")
        require(leaves >= 1 and leaf_len >= 1, "a star needs at least one leaf of at least one token")
        ids = distinct_tokens(seed, prefix_len + leaves * leaf_len)
        prefix, rest = ids[:prefix_len], ids[prefix_len:].reshape(leaves, leaf_len)
        queries = tuple(np.concatenate((prefix, rest[i])) for i in range(leaves))
        for q in queries:
            q.setflags(write=False)
        return cls(prefix_len + leaf_len, queries)

    def workload(self, order: Sequence[int]) -> Workload:
        """The workload requesting leaf ``order[0]``, then ``order[1]``, ... (arrays are shared, read-only)."""
        return sequence_workload(self.queries, order)


def sequence_workload(queries: Sequence[np.ndarray], order: Sequence[int]) -> Workload:
    """A workload requesting ``queries[order[0]]``, ``queries[order[1]]``, ..."""
    require(len(order) > 0, "the parameters give an empty workload (n must be >= 1)")
    made = [Query(q) for q in queries]
    return Workload(tuple(made[int(i)] for i in order))
