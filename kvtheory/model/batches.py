"""Batches and what they need (docs/model.md §Batches): groups of beta consecutive queries served together.

Each query of a batch counts its hits against the cache as it was before the batch, and the union of
the batch's token nodes (its footprint) must be resident afterwards, so every footprint must fit in B.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.records import MAX_TOKENS
from kvtheory.model.trie import PrefixTrie
from kvtheory.model.workload import Workload


def batches(n_queries: int, batch: int) -> list[range]:
    """Consecutive groups of ``batch`` query indices (the last one may be shorter).

    >>> batches(5, 2)
    [range(0, 2), range(2, 4), range(4, 5)]
    """
    return [range(start, min(start + batch, n_queries)) for start in range(0, n_queries, batch)]


def slack(budget: int, max_length: int, batch: int = 1) -> int:
    """k = B - beta * L_max + 1: the slots left for everything but the current batch's paths."""
    return budget - batch * max_length + 1


def slack_fields(budget: int, max_length: int, batch: int = 1) -> dict:
    """The slack as a result reports it: ``{"k": k}`` when k = B - beta * L_max + 1 >= 1, else
    ``{"k": None, "k_reason": ...}``. k < 1 exactly when beta * L_max > B: a batch of beta longest queries
    could not all be resident, so no slot is left beside them and every bound stated in k (k, H_k,
    k(B+1)/(k+1), ...) says nothing; the input may still be valid, since batch-mates can share a prefix.

    >>> slack_fields(16, 7, 2)
    {'k': 3}
    >>> print(slack_fields(16, 9, 2)["k"], slack_fields(16, 9, 2)["k_reason"])
    None beta * L_max = 2 * 9 = 18 > B = 16: the slack k = B - beta * L_max + 1 = -1 < 1, so bounds in k do not apply
    """
    k = slack(budget, max_length, batch)
    if k >= 1:
        return {"k": k}
    reason = (
        f"beta * L_max = {batch} * {max_length} = {batch * max_length} > B = {budget}: the slack "
        f"k = B - beta * L_max + 1 = {k} < 1, so bounds in k do not apply"
    )
    return {"k": None, "k_reason": reason}


def footprint(trie: PrefixTrie, paths: Sequence[Sequence[int]]) -> int:
    """|union of the token nodes of the given paths|: what a batch needs resident at once.

    >>> trie = PrefixTrie([[1, 2, 3], [1, 2, 4]])
    >>> footprint(trie, [trie.path(0), trie.path(1)])
    4
    """
    edge_len = trie.edge_len
    return sum(edge_len[v] for v in {v for path in paths for v in path})


def validate(workload: Workload, budget: int, batch: int = 1) -> None:
    """Raise InputError unless every batch of ``workload`` fits in a cache of ``budget`` tokens."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or not 0 < budget <= MAX_TOKENS:
        raise InputError(f"budget must be a positive number of tokens (at most 2^40), got {budget}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not 0 < batch <= MAX_TOKENS:
        raise InputError(f"batch size must be a positive integer (at most 2^40), got {batch}")
    too_long = np.flatnonzero(workload.lengths > budget)
    if too_long.size:
        j = int(too_long[0])
        raise InputError(
            f"{workload.where(j)}: query has {workload[j].length} tokens, more than the budget B = {budget}"
        )
    if batch > 1:
        trie = workload.trie
        for number, group in enumerate(batches(len(workload), batch)):
            need = footprint(trie, [trie.path(j) for j in group])
            if need > budget:
                raise InputError(
                    f"{workload.where(group[0])}: batch {number} ({len(group)} queries) needs {need} token "
                    f"nodes resident at once, more than the budget B = {budget}"
                )
