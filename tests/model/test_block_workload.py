"""The block-level workload (kvtheory.model.blocks, docs/model.md §Blocks) against the chains of the definition
(tests/blocks_reference.py), for token workloads and block traces alike, and what it refuses."""

from __future__ import annotations

import numpy as np
import pytest
from blocks_reference import explicit_block_workload

from kvtheory import Workload
from kvtheory.errors import InputError
from kvtheory.model.blocks import block_budget, block_workload
from kvtheory.model.query import BlockQuery
from kvtheory.workloads.registry import generate


def random_workload(seed: int, queries: int = 40, max_length: int = 30, alphabet: int = 2) -> Workload:
    """Queries over a tiny alphabet (so blocks are shared and diverge inside blocks), some shorter than a block."""
    rng = np.random.default_rng(seed)
    return Workload.from_token_lists(
        rng.integers(0, alphabet, size=int(rng.integers(1, max_length + 1))).tolist() for _ in range(queries)
    )


def same_trie(a, b) -> bool:
    return (a.parent, a.depth, a.end) == (b.parent, b.depth, b.end)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("b", [1, 2, 3, 5])
def test_the_block_trie_is_the_trie_of_the_chains_node_for_node(seed, b):
    workload = random_workload(seed)
    view = block_workload(workload, b)
    served, explicit = explicit_block_workload(workload, b)
    assert view.served.tolist() == served
    assert view.blocks.tolist() == [q.length // b for q in workload]
    assert same_trie(view.workload.trie, explicit.trie)


def test_at_block_size_one_the_block_workload_is_the_workload_relabelled_in_order():
    workload = random_workload(7, alphabet=5)
    view = block_workload(workload, 1)
    assert view.served.tolist() == list(range(len(workload)))
    assert same_trie(view.workload.trie, workload.trie)


@pytest.mark.parametrize("hash_size,b", [(4, 4), (4, 8), (4, 2), (4, 6), (6, 4), (3, 7)])
def test_a_block_trace_is_read_from_its_ids_as_its_token_expansion(hash_size, b):
    """Cache blocks aligned with the hash blocks, spanning several, inside one, and straddling two."""
    params = {"conversations": "10", "turns": "1,3,4", "block_size": str(hash_size), "system_len": "10"}
    trace = generate("chat-blocks", {**params, "user_len": "6", "output_len": "3", "system_prompts": "2"}, seed=1)
    assert all(isinstance(q, BlockQuery) for q in trace)
    expanded = Workload.from_token_lists(q.tokens.tolist() for q in trace)
    view, tokens = block_workload(trace, b), block_workload(expanded, b)
    served, explicit = explicit_block_workload(expanded, b)
    assert view.served.tolist() == tokens.served.tolist() == served
    assert same_trie(view.workload.trie, explicit.trie)
    assert view.workload.trie.distinct_tokens < view.total_blocks, "the trace must share blocks"


def test_queries_without_a_full_block_are_kept_out_and_convert_to_zero_hits():
    workload = Workload.from_token_lists([[1, 2, 3, 4, 5], [1, 2], [1, 2, 3, 9], [7]])
    view = block_workload(workload, 3)
    assert view.blocks.tolist() == [1, 0, 1, 0] and view.served.tolist() == [0, 2]
    assert view.token_hits([0, 1]).tolist() == [0, 0, 3, 0]
    # 12 tokens, 2 full blocks: missing one block misses the 6 tokens outside full blocks and 3 more
    assert view.token_misses(1) == 9 and view.token_misses(2) == 12


def test_no_full_block_anywhere_gives_no_block_workload():
    view = block_workload(Workload.from_token_lists([[1, 2], [3]]), 4)
    assert view.workload is None and view.total_blocks == 0 and view.token_misses(0) == 3


@pytest.mark.parametrize(
    "budget,b,message",
    [
        (10, 4, "budget B = 10 is not a multiple of the block size b = 4"),
        (0, 4, "budget must be a positive number of tokens"),
        (8, 0, "block size must be a positive number of tokens"),
        (8, True, "block size must be a positive number of tokens"),
    ],
)
def test_a_budget_that_is_not_a_positive_multiple_of_the_block_size_is_refused(budget, b, message):
    with pytest.raises(InputError, match=message):
        block_budget(budget, b)


def test_validity_is_checked_in_blocks():
    """A query of 9 tokens fits a budget of 8 tokens at b = 4 (its 2 full blocks fit 2 slots; the partial one is
    never cached) and not one of 4; a batch's footprint counts blocks; at batch 2 a query without a block is
    refused."""
    workload = Workload.from_token_lists([[1] * 9, [2] * 8, [1] * 4])
    view = block_workload(workload, 4)
    view.validate(8)
    with pytest.raises(InputError, match=r"query 0: query has 2 full blocks of b = 4 tokens, more than .* = 1"):
        view.validate(4)
    with pytest.raises(InputError, match=r"batch 0 \(2 queries\) needs 4 blocks"):
        view.validate(12, batch=2)
    view.validate(16, batch=2)
    short = block_workload(Workload.from_token_lists([[1] * 8, [1, 2]]), 4)
    short.validate(8)
    with pytest.raises(InputError, match="query 1: query has 2 tokens, no full block of b = 4; at batch size 2"):
        short.validate(8, batch=2)
    assert view.slack(8) == {"k": 2 - 2 + 1}
