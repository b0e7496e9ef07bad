"""The optimum in blocks (docs/model.md §Blocks): FIF at batch size 1 and the exact batched optimum at block size b
equal the exhaustive optimum (tests/exhaustive.py) of the block-level queries built from the chains
(tests/blocks_reference.py), in tokens; and a ratio in blocks divides the two runs in blocks."""

from __future__ import annotations

import numpy as np
import pytest
from blocks_reference import explicit_block_queries, token_misses
from exhaustive import exhaustive_misses

from kvtheory import Workload, run_fif, run_policy
from kvtheory.optimum.exact import fif_bracket, solve_optimum
from kvtheory.ratio import competitive_ratio


def tiny(seed: int, queries: int = 7, max_length: int = 9) -> Workload:
    rng = np.random.default_rng(seed)
    return Workload.from_token_lists(
        rng.integers(0, 2, size=int(rng.integers(2, max_length + 1))).tolist() for _ in range(queries)
    )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("b", [2, 3])
def test_fif_in_blocks_is_the_exhaustive_block_optimum_at_batch_size_one(seed, b):
    workload = tiny(seed)
    _, queries = explicit_block_queries(workload, b)
    longest = max(len(q) for q in queries)
    for slots in (longest, longest + 1, longest + 2):
        expected = token_misses(workload, b, exhaustive_misses(queries, slots))
        assert run_fif(workload, b * slots, block_size=b).misses == expected
        opt = solve_optimum(workload, b * slots, block_size=b)
        assert (opt.misses, opt.bound, opt.status, opt.block_size, opt.budget) == (
            expected, expected, "optimal", b, b * slots,
        )  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_the_batched_optimum_in_blocks_is_the_exhaustive_block_optimum(seed):
    b = 2
    workload = tiny(100 + seed, queries=6, max_length=7)
    _, queries = explicit_block_queries(workload, b)
    assert len(queries) == len(workload), "every query has a block, as batches need"
    pairs = zip(queries[::2], queries[1::2])
    need = max(len({tuple(q[:i]) for q in pair for i in range(1, len(q) + 1)}) for pair in pairs)
    for slots in (need, need + 1):
        expected = token_misses(workload, b, exhaustive_misses(queries, slots, batch=2))
        opt = solve_optimum(workload, b * slots, batch=2, block_size=b)
        assert opt.status == "optimal" and opt.misses == opt.bound == expected
        bracket = fif_bracket(workload, b * slots, batch=2, block_size=b)
        assert bracket.bound <= expected <= bracket.misses == opt.fif_misses


def test_a_ratio_in_blocks_divides_the_policy_by_the_optimum_in_blocks():
    workload = tiny(9, queries=30, max_length=12)
    b, budget = 3, 12
    report = competitive_ratio(workload, budget, "lru", block_size=b)
    lru = run_policy(workload, budget, "lru", block_size=b).misses
    assert report.ratios == [lru / run_fif(workload, budget, block_size=b).misses]
    record = report.to_dict()
    assert record["block_size"] == b and record["k"] == budget // b - max(q.length // b for q in workload) + 1
    _, queries = explicit_block_queries(workload, b)
    distinct_blocks = len({tuple(q[:i]) for q in queries for i in range(1, len(q) + 1)})
    assert record["compulsory_misses"] == token_misses(workload, b, distinct_blocks)


def test_no_full_block_anywhere_is_optimal_at_missing_everything():
    workload = Workload.from_token_lists([[1, 2], [1, 2, 3]])
    opt = solve_optimum(workload, 8, block_size=4)
    assert (opt.misses, opt.bound, opt.status) == (5, 5, "optimal")
