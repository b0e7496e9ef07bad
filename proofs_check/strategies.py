"""Random instances, written once and drawn two ways: by hypothesis (with shrinking) or by numpy.

Each generator is a function ``gen(draw, **options) -> Instance`` that asks ``draw.int(lo, hi)`` for
every choice, so :func:`strategy` turns it into a hypothesis strategy (hypothesis then shrinks a failing
instance towards fewer, shorter queries and smaller numbers) and :func:`numpy_draws` runs it on a seeded
generator when hypothesis is not installed. The shapes follow ``tests/strategies.py``: queries over a
tiny alphabet so that they share prefixes, diverge and repeat.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kvtheory.model.batches import batches, footprint
from kvtheory.model.query import Query
from kvtheory.model.workload import Workload
from proofs_check.instance import Instance


class NumpyDraw:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))


class HypothesisDraw:
    def __init__(self, draw) -> None:
        from hypothesis import strategies as st

        self._draw, self._st = draw, st

    def int(self, lo: int, hi: int) -> int:
        return self._draw(self._st.integers(lo, hi))


# -- building blocks: each draws one part of an instance ------------------------------------------------


def token_lists(draw, n: int, max_length: int, alphabet: int) -> list[list[int]]:
    """n queries of 1..max_length tokens over ``alphabet`` symbols (tiny: they share prefixes and repeat)."""
    return [[draw.int(0, alphabet - 1) for _ in range(draw.int(1, max_length))] for _ in range(n)]


def distinct_within_batches(tokens: list[list[int]], beta: int, fresh: int) -> list[list[int]]:
    """The same queries, a repeat inside a batch extended by a fresh token (ids from ``fresh`` up)."""
    out: list[list[int]] = []
    for start in range(0, len(tokens), beta):
        seen: set[tuple[int, ...]] = set()
        for query in tokens[start : start + beta]:
            if tuple(query) in seen:
                query = query + [fresh]
                fresh += 1
            seen.add(tuple(query))
            out.append(query)
    return out


def with_a_repeat(draw, tokens: list[list[int]], beta: int) -> list[list[int]]:
    """The same queries, one batch of two or more ending with a copy of its first query."""
    starts = [s for s in range(0, len(tokens), beta) if len(tokens[s : s + beta]) >= 2]
    if not starts:
        return tokens
    start = starts[draw.int(0, len(starts) - 1)]
    out = [list(query) for query in tokens]
    out[min(start + beta, len(tokens)) - 1] = list(tokens[start])
    return out


def repeated_block(draw, tokens: list[list[int]], max_reps: int) -> list[list[int]]:
    """The queries as a block repeated 1..max_reps times (a per-block excess then outgrows a constant)."""
    return tokens * draw.int(1, max_reps) if max_reps > 1 else tokens


def max_footprint(workload: Workload, batch: int) -> int:
    """The largest number of token nodes one batch needs resident."""
    trie = workload.trie
    return max(footprint(trie, [trie.path(j) for j in g]) for g in batches(len(workload), batch))


def budget_for(draw, workload: Workload, beta: int, *, max_extra: int, over_budget: bool = False) -> int:
    """B from the largest footprint up: at least beta*L_max (so k >= 1), or, with ``over_budget``,
    below beta*L_max (k < 1) whenever the batches' shared prefixes allow it."""
    need = max_footprint(workload, beta)
    if over_budget:
        return max(min(need + draw.int(0, max_extra), beta * workload.max_length - 1), need)
    return max(need, beta * workload.max_length) + draw.int(0, max_extra)


# -- instances composed from them --------------------------------------------------------------------


def tree_instance(
    draw,
    *,
    max_queries=10,
    max_length=5,
    alphabet=3,
    max_extra=6,
    batch=(1, 1),
    distinct=False,
    over_budget=False,
    repeats=False,
    max_reps=1,
) -> Instance:
    """A single-worker instance: queries over a tiny alphabet, beta in ``batch``, B from the footprint up.

    ``distinct``: no query repeats inside a batch (repeats get a fresh leaf).
    ``repeats``: at least one batch repeats a query (beta >= 2).
    ``over_budget``: beta*L_max > B although every batch fits (the queries of a batch share prefixes).
    Without ``over_budget`` the budget is at least beta*L_max, so k = B - beta*L_max + 1 >= 1.
    ``max_reps`` > 1: the drawn queries (a whole number of batches) are a block repeated up to that many
    times, so that a per-block excess over the bound can outgrow the additive constant.
    """
    beta = draw.int(*batch)
    n = draw.int(1, max_queries) if max_reps <= 1 else beta * draw.int(1, max(1, max_queries // beta))
    tokens = token_lists(draw, n, max_length, alphabet)
    if distinct or repeats:
        tokens = distinct_within_batches(tokens, beta, fresh=alphabet)
    if repeats and beta >= 2:
        tokens = with_a_repeat(draw, tokens, beta)
    workload = Workload.from_token_lists(repeated_block(draw, tokens, max_reps))
    budget = budget_for(draw, workload, beta, max_extra=max_extra, over_budget=over_budget)
    return Instance(workload, budget, beta, origin="hypothesis")


def mixed_instance(draw, *, max_queries=12, max_long=6, max_reps=1) -> Instance:
    """One long query first (L_max = B, so k = 1), then one-token queries over B + 1 pages: mixed lengths.

    With ``max_reps`` > 1 the short queries are a block repeated up to that many times.
    """
    budget = draw.int(2, max_long)
    long = [100 + i for i in range(budget)]
    n = draw.int(1, max_queries)
    shorts = [[draw.int(0, budget)] for _ in range(n)]
    if max_reps > 1:
        shorts = shorts * draw.int(1, max_reps)
    return Instance(Workload.from_token_lists([long] + shorts), budget, origin="hypothesis")


def routing_instance(
    draw, *, max_queries=6, max_length=4, alphabet=2, workers=(2, 3), uniform=False, max_output=3, max_extra=3
) -> Instance:
    """M identical workers, small integer costs: a_cached = 1 and a_miss in 1..4 (equal when ``uniform``)."""
    m = draw.int(*workers)
    n = draw.int(1, max_queries)
    tokens = token_lists(draw, n, max_length, alphabet)
    outputs = [draw.int(0, max_output) for _ in range(n)]
    queries = tuple(Query.of(t, output_len=o) for t, o in zip(tokens, outputs))
    workload = Workload(queries)
    a_miss = 1 if uniform else draw.int(1, 4)
    budget = workload.max_length + draw.int(0, max_extra)
    return Instance(workload, budget, workers=m, a_cached=1, a_miss=a_miss, a_out=1, origin="hypothesis")


def weighted_instance(draw, *, max_length=3, max_extra=1) -> Instance:
    """Batches where a token's multiplicity, not its distance, decides what to evict (beta = 2 or 3).

    A *hot* query and a *cold* one are served in the first batch; batches of fresh filler queries push
    one of them out; then the cold query comes back once, and the hot one (or hot ones sharing its
    prefix) comes back m >= 2 times in one batch, usually in that order. FIF keeps the sooner cold
    query and pays m at the hot batch, where keeping the hot prefix and paying 1 for the cold query can
    be cheaper: weighted paging. B is the largest batch footprint plus 0..``max_extra``.
    """
    beta = draw.int(2, 3)
    fresh = iter(range(300, 300 + 2 * beta * 4))

    def filler() -> list[int]:
        return [next(fresh) for _ in range(draw.int(1, 2))]

    hot = [10 + i for i in range(draw.int(1, max_length))]
    cold = [20 + i for i in range(draw.int(1, max_length))]
    steps = [[hot, cold] + [filler() for _ in range(beta - 2)]]
    steps += [[filler() for _ in range(beta)] for _ in range(draw.int(1, 2))]
    cold_step = [cold] + [filler() for _ in range(beta - 1)]
    m = draw.int(2, beta)
    hot_step = [hot + ([30 + i] if draw.int(0, 1) else []) for i in range(m)] + [filler() for _ in range(beta - m)]
    steps += [cold_step, hot_step] if draw.int(0, 3) else [hot_step, cold_step]
    workload = Workload.from_token_lists([query for step in steps for query in step])
    return Instance(workload, max_footprint(workload, beta) + draw.int(0, max_extra), beta, origin="hypothesis")


GENERATORS: dict[str, Callable] = {
    "tree": tree_instance,
    "mixed": mixed_instance,
    "routing": routing_instance,
    "weighted": weighted_instance,
}


def strategy(gen: Callable, **options):
    """The hypothesis strategy drawing ``gen(draw, **options)``."""
    from hypothesis import strategies as st

    return st.composite(lambda draw: gen(HypothesisDraw(draw), **options))()


def numpy_draws(gen: Callable, count: int, seed: int, **options):
    """``count`` instances of ``gen`` from ``numpy.random.default_rng(seed)`` (no hypothesis needed)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield gen(NumpyDraw(rng), **options)
