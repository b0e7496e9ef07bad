"""``worst(..., executor=...)``: the search split by first batch gives the unsplit search's exact worst ratio."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from game_brute_force import plain_opt

from kvtheory.experiments.executors import make_executor
from kvtheory.game import worst
from kvtheory.model.workload import Workload
from kvtheory.simulate import run_policy


class InProcess:
    """An executor that runs each part at once, here (the submit/as_completed calls of the sweeps' executors)."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def submit(self, function, argument, key):
        self.keys.append(key)
        future = Future()
        future.set_result(function(argument))
        return future

    def as_completed(self, futures):
        return reversed(list(futures))  # any order: the result must not depend on it


@pytest.mark.parametrize(
    "queries, budget, policy, horizon, batch",
    [
        ([[0, 1], [0, 2], [3]], 3, "lru", 7, 1),
        ([[0], [1], [2]], 2, "rlt", 7, 1),
        ([[0, 1], [0, 2], [3]], 4, "fifo", 7, 2),  # a short last batch
        ([[0, 1], [2], [3], [4]], 2, "token-lru", 5, 3),
        ([[0, 1], [0, 2], [3]], 4, "lru", 2, 3),  # the horizon below one batch: no part to split
    ],
)
def test_split_search_equals_the_whole_search(queries, budget, policy, horizon, batch):
    w = Workload.from_token_lists(queries)
    executor = InProcess()
    whole = worst(w, budget, policy, horizon, batch=batch)
    split = worst(w, budget, policy, horizon, batch=batch, executor=executor)
    assert split.ratio == whole.ratio
    assert len(executor.keys) == (len(set(executor.keys)) if horizon >= batch else 0)
    if policy != "rlt":  # the split witness reaches the ratio when served plainly
        served = w.select(list(split.sequence))
        alg = run_policy(served, budget, policy, batch=batch, backend="python").misses
        assert (alg, plain_opt(served, budget, batch)) == (split.alg, split.opt)


def test_split_over_a_process_pool():
    w = Workload.from_token_lists([[0, 1], [0, 2], [3]])
    executor = make_executor("local", workers=2)
    try:
        split = worst(w, 3, "rlt", 6, executor=executor)
    finally:
        executor.close()
    assert split.ratio == worst(w, 3, "rlt", 6).ratio
