"""Hypothesis strategies shared by the tests: small random prefix-tree workloads and budgets, and the
boundary instances they rarely reach, for ``@example``."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from hypothesis import example, settings
from hypothesis import strategies as st

from kvtheory import Workload
from kvtheory.testing.strategies import instances, token_lists  # noqa: F401 - shared with the tests

#: Per-example deadline of the property tests that run pure Python on these tiny instances (not those that
#: call a MIP solver): their examples take under 15 ms each on two loaded cores (measured with
#: ``pytest --hypothesis-show-statistics``), so an example that takes a second means a loop gone
#: super-linear, not a slow machine. A hang never ends an example; the suite's per-test timeout catches it.
#: Mutation runs (profile "mutation") time nothing: a mutant is killed by a wrong result or not at all.
EXAMPLE_DEADLINE = None if settings.get_current_profile_name() == "mutation" else timedelta(seconds=1)


def short_and_long_edge_instances():
    """Batched instances (batches of 1 to 4) over three token ids, or over two with longer queries: long
    edges, which token eviction cuts inside and later queries fill again."""
    return st.one_of(
        instances(max_queries=14, max_length=6, alphabet=3, max_batch=4),
        instances(max_queries=16, max_length=9, alphabet=2, max_batch=4),
    )


def deep_prefix_queries(rng: np.random.Generator, queries: int = 300) -> list[list[int]]:
    """Queries over deep shared prefixes: each a cut of one of 8 random stems (1-29 tokens over 50 ids)
    followed by 0-7 tokens over 3 ids, so long runs of splits, partial evictions and re-requests build up."""
    stems = [rng.integers(0, 50, size=int(rng.integers(1, 30))).tolist() for _ in range(8)]
    made = []
    for _ in range(queries):
        stem = stems[int(rng.integers(0, len(stems)))]
        cut = int(rng.integers(1, len(stem) + 1))
        made.append(stem[:cut] + rng.integers(0, 3, size=int(rng.integers(0, 8))).tolist())
    return made


# -- boundary instances ---------------------------------------------------------------------------------
# The generators above reach these rarely or never; property tests list them as explicit examples
# (hypothesis.example), so every run checks them. Each is (workload, budget B, batch beta).


def _case(queries: list[list[int]], budget: int, batch: int = 1) -> tuple[Workload, int, int]:
    return Workload.from_token_lists(queries), budget, batch


#: B = L_max: only the current query's path fits (k = 1), so every query evicts all the rest
BUDGET_IS_LONGEST_QUERY = _case([[0, 1, 2], [0, 1, 3], [2, 2], [0, 1, 2], [2, 2, 2], [0, 1, 3]], 3)
#: depth 1, a cycle over B + 1 pages: LRU and FIFO miss every request, FIF one in B
CYCLE_OVER_B_PLUS_ONE = _case([[0], [1], [2], [0], [1], [2], [0]], 2)
#: equal queries back to back, and queries that are prefixes of others (no radix edge of their own)
EQUAL_AND_PREFIX_QUERIES = _case([[1, 1], [1, 1], [1], [1, 1, 1], [1], [2], [1, 1, 1]], 3)
#: two leaves cached one step apart with equal request counts (LFU falls back to recency), the first
#: requested again sooner (FIF keeps it), then both again
TIED_COUNTS = _case([[0, 1], [0, 2], [3], [0, 1], [0, 2]], 3)
#: every batch made of equal queries; the footprint of each batch equals B
EQUAL_QUERIES_IN_BATCHES = _case([[0, 1], [0, 1], [2], [2], [0, 1], [0, 1]], 2, 2)
#: two leaves made in the same batch (equal access time, equal count, equal last request, equal next
#: request and depth): one must go, and only the tie rule says which
LEAVES_MADE_TOGETHER = _case([[0, 1], [0, 2], [3], [4], [0, 1], [0, 2]], 4, 2)
#: batches that share a prefix and whose footprints equal B exactly: each batch evicts all of the last
SHARED_BATCHES_AT_BUDGET = _case([[0, 1], [0, 2], [3, 4], [3, 5], [0, 1], [0, 2]], 3, 2)
#: a batch of three equal queries, then a shorter last batch
EQUAL_TRIPLE_AND_SHORT_LAST_BATCH = _case([[5, 5, 5], [5, 5, 5], [5, 5, 5], [6, 6], [6]], 3, 3)

#: token-granular eviction (token-LRU, FIFO) that stops exactly at a trie node where another query ends, in
#: batches whose nodes share their access time: the evicted node's end must move up to that trie node
PARTIAL_EVICTION_AT_A_BRANCH = (
    _case([[2], [1, 1, 2], [1], [0, 1, 1], [1, 2, 2, 2, 2], [1, 1], [1, 2, 1], [0, 1], [1, 1, 1]], 9, 2),
    _case([[1, 2, 1], [1, 0, 0, 2, 2], [0, 2, 0, 2], [1], [1, 2], [1, 0], [0, 0]], 10, 2),
)

UNBATCHED_BOUNDARIES = (BUDGET_IS_LONGEST_QUERY, CYCLE_OVER_B_PLUS_ONE, EQUAL_AND_PREFIX_QUERIES, TIED_COUNTS)
BATCHED_BOUNDARIES = (
    EQUAL_QUERIES_IN_BATCHES,
    LEAVES_MADE_TOGETHER,
    SHARED_BATCHES_AT_BUDGET,
    EQUAL_TRIPLE_AND_SHORT_LAST_BATCH,
)
#: every boundary instance above, batched or not
ALL_BOUNDARIES = (*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES, *PARTIAL_EVICTION_AT_A_BRANCH)


def boundary_examples(*cases, argument: str = "instance", **others):
    """Decorate a hypothesis test with ``@example(argument=case, **others)`` for each case."""

    def decorate(test):
        for case in reversed(cases):
            test = example(**{argument: case}, **others)(test)
        return test

    return decorate
