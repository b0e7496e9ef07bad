"""Hypothesis strategies shared by the tests: small random prefix-tree workloads and budgets."""

from __future__ import annotations

from hypothesis import strategies as st

from kvtheory import Workload


@st.composite
def token_lists(draw, max_queries: int = 10, max_length: int = 5, alphabet: int = 3) -> list[list[int]]:
    """Queries over a tiny alphabet, so they share prefixes, diverge and repeat often."""
    n = draw(st.integers(1, max_queries))
    return [draw(st.lists(st.integers(0, alphabet - 1), min_size=1, max_size=max_length)) for _ in range(n)]


@st.composite
def instances(draw, max_queries: int = 10, max_length: int = 5, alphabet: int = 3, max_batch: int = 1):
    """(workload, budget B, batch beta) with every batch's footprint fitting in B."""
    tokens = draw(token_lists(max_queries, max_length, alphabet))
    workload = Workload.from_token_lists(tokens)
    batch = draw(st.integers(1, max_batch))
    trie = workload.trie
    need = max(
        sum(trie.edge_len[v] for v in {v for j in range(s, min(s + batch, len(tokens))) for v in trie.path(j)})
        for s in range(0, len(tokens), batch)
    )
    budget = draw(st.integers(need, need + 6))
    return workload, budget, batch
