"""Block granularity (docs/model.md §Blocks): a cache that holds whole blocks of b tokens, as a workload of blocks.

With block size b, query j of L_j tokens is cut into blocks of b consecutive tokens from its start; its
n_j = floor(L_j / b) full blocks are what the cache holds, and its last L_j mod b tokens are never cached (always
missed). A block stands for the whole prefix it ends, so block i of two queries is the same cached block exactly
when their first (i + 1) b tokens agree: the block-level queries form a prefix trie whose token nodes are blocks.
Section 1 of the model then applies word for word with the block as the unit and B / b block slots, and so do
every policy, FIF and the exact batched optimum: :func:`block_workload` builds that workload once, and
:class:`BlockWorkload` converts a block-level run back to tokens (hits = b x block hits).

A block-level query is a run of integer ids, one per block, with id equality at a position meaning token equality
over that block: since two queries are compared position by position from their starts, such ids give exactly
the prefix trie of the block chains.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.batches import batches, footprint, slack_fields
from kvtheory.model.query import BlockQuery
from kvtheory.model.records import MAX_TOKENS
from kvtheory.model.workload import BlockColumns, QueryColumns, Workload


def _check_block_size(block_size) -> None:
    integer = isinstance(block_size, (int, np.integer)) and not isinstance(block_size, bool)
    if not integer or not 0 < block_size <= MAX_TOKENS:
        raise InputError(f"block size must be a positive number of tokens (at most 2^40), got {block_size}")


def block_budget(budget: int, block_size: int) -> int:
    """B / b, the block slots of a budget of B tokens; InputError unless b >= 1 and B is a positive multiple of b.

    >>> block_budget(64, 16)
    4
    """
    _check_block_size(block_size)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or not 0 < budget <= MAX_TOKENS:
        raise InputError(f"budget must be a positive number of tokens (at most 2^40), got {budget}")
    if budget % block_size:
        raise InputError(f"budget B = {budget} is not a multiple of the block size b = {block_size}")
    return int(budget // block_size)


@dataclass(frozen=True)
class BlockWorkload:
    """A workload seen in blocks of ``block_size`` tokens.

    ``blocks[j]`` = n_j = floor(L_j / b), the full blocks of original query j (``lengths[j]`` = L_j tokens);
    ``served`` the indices j with n_j >= 1, in order; ``workload`` the block-level workload of those queries (its
    query i is original query ``served[i]``, one id per block), or None when no query has a full block. A query
    without a full block (L_j < b) is kept out of the block run: it hits nothing, misses its L_j tokens and leaves
    the cache as it was, which is what serving it would do, since it has no block to hit or to cache.
    """

    source: Workload
    block_size: int
    lengths: np.ndarray
    blocks: np.ndarray
    served: np.ndarray
    workload: Workload | None

    @property
    def total_blocks(self) -> int:
        """Sum of n_j: the block-level workload's tokens."""
        return int(self.blocks.sum())

    @property
    def max_blocks(self) -> int:
        """max n_j: L_max in blocks."""
        return int(self.blocks.max())

    def token_hits(self, block_hits: np.ndarray) -> np.ndarray:
        """Every original query's hits in tokens, b x its block hits (0 for a query without a full block), from
        the block-level run's hits ``block_hits`` (one per served query)."""
        hits = np.zeros(self.lengths.size, dtype=np.int64)
        hits[self.served] = np.asarray(block_hits, dtype=np.int64) * self.block_size
        return hits

    def token_misses(self, block_misses):
        """Misses in tokens of a run that missed ``block_misses`` blocks (an int, or a mean over seeds):
        T - b (sum n_j - block misses)."""
        return int(self.lengths.sum()) - self.block_size * (self.total_blocks - block_misses)

    def slack(self, budget: int, batch: int = 1) -> dict:
        """The slack in blocks, ``{"k": B/b - beta * max n_j + 1}`` (or k null with a reason, as
        :func:`~kvtheory.model.batches.slack_fields`)."""
        return slack_fields(block_budget(budget, self.block_size), self.max_blocks, batch)

    def validate(self, budget: int, batch: int = 1) -> None:
        """Raise InputError unless every batch fits in B / b blocks (the model's validity, in blocks): no query has
        more full blocks than B / b, no batch's blocks overflow B / b; and at batch size >= 2, no query is without
        a full block (it would leave its batch a query short, and every run here takes batches of equal size)."""
        slots = block_budget(budget, self.block_size)
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not 0 < batch <= MAX_TOKENS:
            raise InputError(f"batch size must be a positive integer (at most 2^40), got {batch}")
        b = self.block_size
        too_long = np.flatnonzero(self.blocks > slots)
        if too_long.size:
            j = int(too_long[0])
            raise InputError(
                f"{self.source.where(j)}: query has {self.blocks[j]} full blocks of b = {b} tokens, more than the "
                f"budget's B / b = {budget} / {b} = {slots}"
            )
        if batch == 1 or self.workload is None:
            return
        empty = np.flatnonzero(self.blocks == 0)
        if empty.size:
            j = int(empty[0])
            raise InputError(
                f"{self.source.where(j)}: query has {self.lengths[j]} tokens, no full block of b = {b}; at batch "
                f"size {batch} it would leave its batch without a block query (give queries of at least b tokens, "
                "or batch size 1)"
            )
        trie = self.workload.trie
        for number, group in enumerate(batches(len(self.workload), batch)):
            need = footprint(trie, [trie.path(i) for i in group])
            if need > slots:
                raise InputError(
                    f"{self.source.where(int(self.served[group[0]]))}: batch {number} ({len(group)} queries) needs "
                    f"{need} blocks of b = {b} tokens resident at once, more than the budget's B / b = {slots}"
                )


def block_workload(workload: Workload, block_size: int) -> BlockWorkload:
    """The block-level view of ``workload`` with blocks of b = ``block_size`` tokens (see the module).

    A block trace (every query a :class:`BlockQuery` of one hash block size h) is read from its ids, never
    expanded to tokens: cache block i covers token positions ib .. (i + 1) b - 1, that is hash blocks
    floor(ib / h) .. floor(((i + 1) b - 1) / h), and two queries agree on it exactly when they have the same ids
    there (a hash id is one fixed run of h tokens, its token at offset o being (id, o)).

    >>> w = Workload.from_token_lists([[1, 2, 3, 4, 5], [1, 2, 3, 9], [7]])
    >>> view = block_workload(w, 2)
    >>> view.blocks.tolist(), view.served.tolist(), view.workload.token_lists()
    ([2, 2, 0], [0, 1], [[0, 1], [0, 2]])
    """
    _check_block_size(block_size)
    b = int(block_size)
    lengths = np.asarray(workload.lengths, dtype=np.int64)
    blocks = lengths // b
    served = np.flatnonzero(blocks)
    if isinstance(workload.queries, BlockColumns):
        hash_sizes = {workload.queries.block_size}
    else:
        hash_sizes = {q.block_size if isinstance(q, BlockQuery) else None for q in workload.queries}
    if len(hash_sizes) == 1 and None not in hash_sizes:
        rows = _hash_rows(workload, blocks, b, hash_sizes.pop())
    else:
        rows = _token_rows(workload, blocks, b)
    if served.size == 0:
        return BlockWorkload(workload, b, lengths, blocks, served, None)
    if rows.shape[1] == 1:  # one id per block (b = h, or one token): a plain sort, far faster than rows compared
        _, ids = np.unique(rows[:, 0], return_inverse=True)
    else:
        _, ids = np.unique(rows, axis=0, return_inverse=True)
    offsets = np.concatenate(([0], np.cumsum(blocks[served])))
    lines = None if workload.lines is None else tuple(workload.lines[j] for j in served.tolist())
    level = Workload(QueryColumns(ids.reshape(-1).astype(np.int64), offsets), workload.source, lines)
    return BlockWorkload(workload, b, lengths, blocks, served, level)


def _token_rows(workload: Workload, blocks: np.ndarray, b: int) -> np.ndarray:
    """One row of b token ids per full block, query by query."""
    rows = np.empty((int(blocks.sum()), b), dtype=np.int64)
    at = 0
    for query, n in zip(workload.queries, blocks.tolist()):
        if n:
            rows[at : at + n] = np.asarray(query.tokens[: n * b], dtype=np.int64).reshape(n, b)
            at += n
    return rows


def _hash_rows(workload: Workload, blocks: np.ndarray, b: int, h: int) -> np.ndarray:
    """One row per full block of a block trace of h tokens per hash id: the ids of the hash blocks that cache block
    i covers, padded with -1 to the widest (the width depends on i alone, so rows of one position compare alike)."""
    width = (b - 1) // h + 2 if b % h else b // h
    if b == h and isinstance(workload.queries, BlockColumns):  # cache block i is hash block i: the first ids
        return workload.queries.leading_ids(blocks).reshape(-1, 1)
    if b == h:
        chains = chain.from_iterable(q.hash_ids[:n] for q, n in zip(workload.queries, blocks.tolist()) if n)
        return np.fromiter(chains, dtype=np.int64).reshape(-1, 1)
    rows = np.full((int(blocks.sum()), width), -1, dtype=np.int64)
    at = 0
    for query, n in zip(workload.queries, blocks.tolist()):
        if not n:
            continue
        ids = np.asarray(query.hash_ids, dtype=np.int64)
        first = np.arange(n, dtype=np.int64) * b // h
        last = ((np.arange(n, dtype=np.int64) + 1) * b - 1) // h
        for offset in range(width):
            column = first + offset
            inside = column <= last
            rows[at : at + n, offset] = np.where(inside, ids[np.minimum(column, last)], -1)
        at += n
    return rows
