"""The prefix trie's faster constructions build the very trie of the general one, node for node: one-token block
sequences (PrefixTrie.from_blocks through the one-token trie) and short sequences (sort keys cut from one key, common
prefixes of neighbours found in batched numpy passes)."""

from __future__ import annotations

import random
from functools import partial

import numpy as np
import pytest

from kvtheory.model import trie as trie_module
from kvtheory.model.trie import PrefixTrie, _common_prefix, _sort_key

ATTRIBUTES = ("parent", "depth", "edge_len", "children", "end", "tin", "tout")


def one_by_one(sequences) -> PrefixTrie:
    """The general construction with every key and every common prefix computed pair by pair."""
    arrays = [np.asarray(s, dtype=np.int64) for s in sequences]
    keys = [_sort_key(a) for a in arrays]
    order = sorted(range(len(arrays)), key=keys.__getitem__)
    trie = PrefixTrie.__new__(PrefixTrie)
    trie._build(
        order, [int(a.size) for a in arrays], [_common_prefix(arrays[a], arrays[b]) for a, b in zip(order, order[1:])]
    )
    return trie


def assert_same_trie(a: PrefixTrie, b: PrefixTrie) -> None:
    for name in ATTRIBUTES:
        assert getattr(a, name) == getattr(b, name), name
        assert [type(x) for x in getattr(a, name)] == [type(x) for x in getattr(b, name)], name


def random_sequences(rng: random.Random) -> list[list[int]]:
    """Sequences sharing prefixes of a common base, or not; repeats, one-token and (now and then) empty ones,
    lengths on both sides of SHORT_PAIR, ids near the ends of int64."""
    alphabet = rng.choice([2, 3, 10, 2**62])
    longest = rng.choice([3, 8, 300, 600])
    base = [rng.randrange(-alphabet, alphabet) for _ in range(longest)]
    sequences = []
    for _ in range(rng.randint(1, 15)):
        n = rng.randint(0 if rng.random() < 0.05 else 1, longest)
        s = base[:n] if rng.random() < 0.5 else [rng.randrange(-alphabet, alphabet) for _ in range(n)]
        if s and rng.random() < 0.3:
            s = list(s)
            s[rng.randrange(len(s))] = rng.randrange(-alphabet, alphabet)
        sequences.append(s)
    if rng.random() < 0.2:
        sequences.append(list(sequences[0]))
    return sequences


@pytest.mark.parametrize("seed", range(20))
def test_the_batched_construction_builds_the_one_by_one_trie(seed, monkeypatch):
    rng = random.Random(seed)
    batched = trie_module._adjacent_common_prefixes
    for _ in range(100):
        sequences = random_sequences(rng)
        if all(len(s) == 1 for s in sequences):
            continue  # the one-token trie, tested in test_trie.py
        chunk = rng.choice([1, 5, 1 << 20])  # passes of one pair, a few pairs, all pairs
        monkeypatch.setattr(trie_module, "_adjacent_common_prefixes", partial(batched, chunk=chunk))
        assert_same_trie(PrefixTrie(sequences), one_by_one(sequences))


def test_the_batched_common_prefixes_are_the_pairwise_ones():
    rng = random.Random(3)
    for _ in range(300):
        sequences = [np.asarray(s, dtype=np.int64) for s in random_sequences(rng)]
        order = list(range(len(sequences)))
        rng.shuffle(order)
        offsets = np.concatenate(([0], np.cumsum([s.size for s in sequences])))
        tokens = np.concatenate(sequences)
        expected = [_common_prefix(sequences[a], sequences[b]) for a, b in zip(order, order[1:])]
        for chunk in (1, 7, 1 << 20):
            assert trie_module._adjacent_common_prefixes(tokens, offsets, order, chunk) == expected


@pytest.mark.parametrize("seed", range(20))
def test_one_token_block_sequences_build_the_general_trie(seed, monkeypatch):
    """Every sequence one token long (its first block's first token, whatever ids follow): the one-token trie."""
    rng = random.Random(seed)
    for _ in range(100):
        block_size = rng.randint(1, 4)
        ids = [
            tuple([rng.randint(-3, 5)] + [rng.randint(0, 3) for _ in range(rng.randint(0, 2))])
            for _ in range(rng.randint(1, 12))
        ]
        lengths = [1] * len(ids)
        fast = PrefixTrie.from_blocks(ids, lengths, block_size)
        assert PrefixTrie._one_token_blocks(ids, lengths) is not None
        with monkeypatch.context() as patch:
            patch.setattr(PrefixTrie, "_one_token_blocks", staticmethod(lambda block_ids, lengths: None))
            general = PrefixTrie.from_blocks(ids, lengths, block_size)
        assert_same_trie(fast, general)
        expanded = PrefixTrie([[h[0] * block_size] for h in ids])
        assert_same_trie(fast, expanded)


@pytest.mark.parametrize(
    "ids,lengths",
    [
        ([(1.5,), (1,)], [1, 1]),  # not integers: compared as they are
        ([(True,), (False,)], [1, 1]),
        ([(2**70,), (1,)], [1, 1]),  # beyond int64
        ([(1,), (1, 2)], [1, 2]),  # not every sequence one token
    ],
)
def test_other_block_sequences_take_the_general_construction(ids, lengths):
    assert PrefixTrie._one_token_blocks(ids, lengths) is None


@pytest.mark.parametrize("seed", range(20))
def test_block_columns_build_the_block_trie(seed):
    """Sequences of block ids held as columns (the Mooncake reader's): the trie of from_blocks, node for node, with
    ids negative, repeated and shared over prefixes, equal ids with other lengths, and chains past the batched
    comparison's length (compared pair by pair)."""
    rng = random.Random(seed)
    stems = [[rng.randint(-3, 5) for _ in range(rng.choice([1, 3, 300]))] for _ in range(4)]
    for _ in range(20):
        block_size = rng.randint(1, 4)
        chains = [rng.choice(stems)[: rng.randint(1, 300)] + [rng.randint(0, 3)] * rng.randint(0, 2) for _ in range(9)]
        chains += [list(chains[0])]  # equal ids, another length
        lengths = [rng.randint(block_size * (len(c) - 1) + 1, block_size * len(c)) for c in chains]
        offsets = np.cumsum([0] + [len(c) for c in chains])
        ids = np.array([h for c in chains for h in c], dtype=np.int64)
        columns = PrefixTrie.from_block_columns(ids, offsets, np.array(lengths), block_size)
        assert_same_trie(columns, PrefixTrie.from_blocks([tuple(c) for c in chains], lengths, block_size))
