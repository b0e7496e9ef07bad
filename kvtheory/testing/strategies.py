"""Hypothesis strategies for small random prefix-tree workloads and budgets: the instances of
:func:`kvtheory.testing.check_policy`, and of kvtheory's own tests."""

from __future__ import annotations

from hypothesis import strategies as st

from kvtheory.model.batches import batches, footprint
from kvtheory.model.workload import Workload


@st.composite
def token_lists(draw, max_queries: int = 10, max_length: int = 5, alphabet: int = 3) -> list[list[int]]:
    """Queries over a tiny alphabet, so they share prefixes, diverge and repeat often."""
    n = draw(st.integers(1, max_queries))
    return [draw(st.lists(st.integers(0, alphabet - 1), min_size=1, max_size=max_length)) for _ in range(n)]


@st.composite
def instances(draw, max_queries: int = 10, max_length: int = 5, alphabet: int = 3, max_batch: int = 1):
    """(workload, budget B, batch beta) with every batch's footprint fitting in B (B up to 6 above the
    largest footprint)."""
    tokens = draw(token_lists(max_queries, max_length, alphabet))
    workload = Workload.from_token_lists(tokens)
    batch = draw(st.integers(1, max_batch))
    trie = workload.trie
    need = max(footprint(trie, [trie.path(j) for j in group]) for group in batches(len(tokens), batch))
    budget = draw(st.integers(need, need + 6))
    return workload, budget, batch


@st.composite
def block_instances(draw, max_queries: int = 10, max_length: int = 8, alphabet: int = 2, max_batch: int = 4):
    """(workload, budget B, batch beta, block size b) for a block engine: b from 1 to 3 and B a multiple of b with
    room for every batch's requests to hold all their blocks at once (the sum of ceil(L / b) over the batch, up to
    6 blocks more), which is what vLLM's allocation needs at most."""
    tokens = draw(token_lists(max_queries, max_length, alphabet))
    workload = Workload.from_token_lists(tokens)
    batch = draw(st.integers(1, max_batch))
    b = draw(st.integers(1, 3))
    need = max(sum(-(-len(tokens[j]) // b) for j in group) for group in batches(len(tokens), batch))
    return workload, b * draw(st.integers(need, need + 6)), batch, b
