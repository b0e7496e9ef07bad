"""An independent block-level workload for the tests of block granularity (docs/model.md §Blocks), built from the
definition: block i of a query of tokens t_1..t_L (i < floor(L / b)) is the whole chain (t_1..t_{(i+1)b}), as a
Python tuple; distinct chains are numbered by their lexicographic order, and the partial last block is dropped.

Numbering by lexicographic order of the chains orders two sibling blocks (same chain up to their own block) as
their tokens, the order the trie gives its children in: so the block-level trie here is node for node the one
kvtheory builds, and even a policy whose ties or random draws follow trie node ids runs identically on both.
"""

from __future__ import annotations

import numpy as np

from kvtheory import Workload


def chains(tokens: list[int], b: int) -> list[tuple[int, ...]]:
    """The chains of a query's full blocks."""
    return [tuple(tokens[: (i + 1) * b]) for i in range(len(tokens) // b)]


def explicit_block_queries(workload: Workload, b: int) -> tuple[list[int], list[list[int]]]:
    """(indices of the queries with a full block, their block-level queries as lists of chain numbers)."""
    token_lists = [q.tokens.tolist() for q in workload]
    number = {chain: r for r, chain in enumerate(sorted({c for t in token_lists for c in chains(t, b)}))}
    served = [j for j, t in enumerate(token_lists) if len(t) >= b]
    return served, [[number[c] for c in chains(token_lists[j], b)] for j in served]


def explicit_block_workload(workload: Workload, b: int) -> tuple[list[int], Workload | None]:
    served, queries = explicit_block_queries(workload, b)
    return served, (Workload.from_token_lists(queries) if queries else None)


def in_tokens(workload: Workload, served: list[int], block_hits, b: int) -> np.ndarray:
    """Per-query token hits: b x the block hits of the served queries, 0 for the others."""
    hits = np.zeros(len(workload), dtype=np.int64)
    hits[served] = np.asarray(block_hits, dtype=np.int64) * b
    return hits


def token_misses(workload: Workload, b: int, block_misses: int) -> int:
    """Misses in tokens of a run that missed ``block_misses`` blocks: every partial-block token plus b per block."""
    lengths = [q.length for q in workload]
    return sum(n % b for n in lengths) + b * block_misses
