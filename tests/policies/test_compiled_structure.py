"""The compiled radix, rlt-authors, leaf-sampler and LFU cores' data structures (the invariants of
tests/compiled_structure.py) on a fresh cache and after every batch of random runs, both eviction
amounts, batches of 1 to 4.

The comparison tests (test_compiled_cores.py, test_authors_core.py) see only what a policy answers: hits,
cache, size, marks. A corrupted link that no query happens to follow, or a sentinel that turns a walk into
an endless loop, is invisible to them or shows only as a hang; these checks read the arrays.
"""

from __future__ import annotations

import pytest
from compiled_structure import STRUCTURED, check_structure
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    ALL_BOUNDARIES,
    EXAMPLE_DEADLINE,
    boundary_examples,
    short_and_long_edge_instances,
)

from kvtheory import Workload, batches
from kvtheory.model.trie import PrefixTrie
from kvtheory.policies import policy_class
from kvtheory.policies.base import EVICT_AMOUNTS
from kvtheory.policies.compiled.authors import CompiledAuthorsRLT
from kvtheory.policies.radix_core import CompiledRadix

RADIX_FAMILY = ("lru", "token-lru", "fifo")
OTHER_FAMILIES = ("rlt", "random-leaf", "lfu")  # the samplers' core, LFU's core


def compiled_objects(trie: PrefixTrie, budget: int, seed: int, amount: str) -> list:
    made = [
        *(CompiledRadix(policy_class(name), trie, budget, evict_amount=amount) for name in RADIX_FAMILY),
        CompiledAuthorsRLT(trie, budget, seed=seed, evict_amount=amount),
        *(
            policy_class(name).create(trie, budget, seed=seed, evict_amount=amount, backend="compiled")
            for name in OTHER_FAMILIES
        ),
    ]
    assert all(isinstance(policy, STRUCTURED) for policy in made)  # backend "compiled": every family has its core
    return made


@pytest.mark.parametrize("amount", EVICT_AMOUNTS)
def test_a_fresh_cache_is_an_empty_tree(amount):
    trie = Workload.from_token_lists([[1, 2, 3], [1, 2, 4], [5]]).trie
    for policy in compiled_objects(trie, 4, 0, amount):
        check_structure(policy)
        assert policy.size == 0 and policy.kept() == {}


@pytest.mark.slow
@settings(max_examples=200, deadline=EXAMPLE_DEADLINE)
@boundary_examples(*ALL_BOUNDARIES, seed=0, amount="allocation")
@boundary_examples(*ALL_BOUNDARIES, seed=1, amount="shortfall")
@given(
    instance=short_and_long_edge_instances(),
    seed=st.integers(0, 2**32 - 1),
    amount=st.sampled_from(EVICT_AMOUNTS),
)
def test_the_structures_hold_after_every_batch(instance, seed, amount):
    workload, budget, batch = instance
    for policy in compiled_objects(workload.trie, budget, seed, amount):
        for group in batches(len(workload), batch):
            policy.serve(group)
            check_structure(policy)
