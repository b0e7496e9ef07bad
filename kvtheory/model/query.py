"""Queries: non-empty token sequences with optional arrival time and output length
(docs/model.md §Queries and token nodes)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Query:
    """A query q = (t1..tL) with L = |q| >= 1.

    Its token nodes are its prefixes (t1), (t1,t2), ..., (t1..tL); two queries share a node exactly when
    they share that prefix. ``arrival`` is a_j in seconds and ``output_len`` is o_j, both optional.

    >>> Query.of([1, 2, 3]).length
    3
    """

    tokens: np.ndarray
    arrival: float | None = None
    output_len: int | None = None

    @classmethod
    def of(cls, tokens, arrival: float | None = None, output_len: int | None = None) -> Query:
        """Build a query from any flat sequence of integer token ids (no bool, float or nested list is
        converted: those are errors)."""
        array = np.asarray(tokens)
        if array.ndim != 1 or array.size == 0:
            raise ValueError("a query needs a non-empty 1-D token sequence")
        if array.dtype.kind not in "iu" or (array.dtype.kind == "u" and array.max() > np.iinfo(np.int64).max):
            raise ValueError(f"token ids must be 64-bit integers, got dtype {array.dtype}")
        return cls(array.astype(np.int64, copy=False), arrival, output_len)

    @property
    def length(self) -> int:
        return int(self.tokens.size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Query)
            and np.array_equal(self.tokens, other.tokens)
            and self.arrival == other.arrival
            and self.output_len == other.output_len
        )

    def __hash__(self) -> int:
        return hash(self.tokens.tobytes())
