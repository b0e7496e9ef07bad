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


@dataclass(frozen=True, eq=False)
class BlockQuery:
    """A query given as blocks (docs/formats.md §Mooncake traces): ids h_1..h_n of ``block_size``-token blocks,
    the last one holding ``length - block_size * (n - 1)`` tokens (1..block_size).

    Block h is one fixed run of ``block_size`` tokens and a shorter last block is a head of it. Its tokens
    are never stored; ``tokens`` expands them on demand (block h at offset i is token h * block_size + i),
    which is the token-level query this one stands for.

    >>> q = BlockQuery((3, 5), 7, block_size=4)
    >>> q.length, q.tokens.tolist()
    (7, [12, 13, 14, 15, 20, 21, 22])
    """

    hash_ids: tuple[int, ...]
    length: int
    block_size: int
    arrival: float | None = None
    output_len: int | None = None

    @property
    def tokens(self) -> np.ndarray:
        ids = np.asarray(self.hash_ids, dtype=np.int64)
        expanded = (ids[:, None] * self.block_size + np.arange(self.block_size, dtype=np.int64)).ravel()
        return expanded[: self.length]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlockQuery) and (
            self.hash_ids,
            self.length,
            self.block_size,
            self.arrival,
            self.output_len,
        ) == (other.hash_ids, other.length, other.block_size, other.arrival, other.output_len)

    def __hash__(self) -> int:
        return hash((self.hash_ids, self.length, self.block_size))
