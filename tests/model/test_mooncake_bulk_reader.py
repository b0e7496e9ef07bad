"""The bulk path of the Mooncake reader (kvtheory.model.traces.mooncake._read_canonical): a file of canonical lines
reads to exactly the workload the line-by-line strict path gives (the same queries, value types, lines and source),
any other valid file reads as before, and every bad file gets exactly the strict path's message."""

from __future__ import annotations

import json
import random

import numpy as np
import orjson
import pytest

from kvtheory.errors import InputError
from kvtheory.model.blocks import block_workload
from kvtheory.model.traces import read_workload
from kvtheory.model.traces.base import read_block_trace
from kvtheory.model.traces.mooncake import FIELDS, _read_canonical, parse_mooncake_line, read_mooncake

INT64_MAX = 2**63 - 1


def strict(path, block_size: int):
    """The line-by-line reading (the reader without its bulk path)."""
    return read_block_trace(path, block_size, parse_mooncake_line, FIELDS)


def random_records(rng: random.Random, block_size: int, requests: int) -> list[dict]:
    """Valid records: non-decreasing timestamps (at times past 2**53, where a float is no longer exact), lengths
    that fit their ids, ids negative, repeated, shared or near the 18-digit bound."""
    records, timestamp = [], rng.choice([0, 5, 2**53 - 3, 10**17])
    pool = [rng.randrange(-(10**17), 10**17) for _ in range(4)] + list(range(6)) + [-1, 10**18 - 1, -(10**18 - 1)]
    for _ in range(requests):
        n = rng.choice([1, 1, 2, 3, 7, 40])
        if block_size * (n - 1) >= 2**40:  # no length of that many blocks is allowed (MAX_TOKENS)
            n = 1
        length = rng.randint(block_size * (n - 1) + 1, min(block_size * n, 2**40))
        ids = [rng.choice(pool) for _ in range(n)]
        timestamp += rng.choice([0, 0, 1, 999, 10**6])
        output = rng.choice([0, 1, 700, 2**40])
        records.append({"timestamp": timestamp, "input_length": length, "output_length": output, "hash_ids": ids})
    return records


def canonical_text(rng: random.Random, records: list[dict]) -> bytes:
    """As write_mooncake writes them (orjson) or as the published traces do (Python's json), mixed line by line,
    with empty lines here and there and the last line end present or not."""
    lines = []
    for record in records:
        if rng.random() < 0.1:
            lines.append(b"")
        lines.append(orjson.dumps(record) if rng.random() < 0.5 else json.dumps(record).encode())
    text = b"\n".join(lines)
    return text + rng.choice([b"", b"\n", b"\n\n"])


def assert_same_workload(fast, slow) -> None:
    assert fast == slow and fast.queries == slow.queries
    assert fast.lines == slow.lines and fast.source == slow.source
    for a, b in zip(fast.queries, slow.queries):
        assert type(a) is type(b)
        assert [type(h) for h in a.hash_ids] == [type(h) for h in b.hash_ids]
        assert (type(a.length), type(a.arrival), type(a.output_len)) == (
            type(b.length),
            type(b.arrival),
            type(b.output_len),
        )
        assert a.arrival == b.arrival  # bit for bit: a float, never rounded twice
    assert all(type(n) is int for n in fast.lines)
    assert fast.lengths.dtype == np.int64
    # what Workload.lengths would compute (every query's tokens counted), here without expanding huge blocks
    assert np.array_equal(fast.lengths, [q.length for q in slow.queries])
    assert all(q.tokens.size == q.length for q in slow.queries if q.block_size <= 512)
    # the trie and the block-level views, made from the columns, are those of the queries
    tries = fast.trie, slow.trie
    assert [(t.parent, t.depth, t.end) for t in tries] == [(t.parent, t.depth, t.end) for t in tries[::-1]]
    h = slow.queries[0].block_size
    for b in (h, 2 * h) if h <= 512 else ():
        fast_view, slow_view = block_workload(fast, b), block_workload(slow, b)
        assert np.array_equal(fast_view.served, slow_view.served)
        if slow_view.workload is not None:
            assert fast_view.workload.token_lists() == slow_view.workload.token_lists()


@pytest.mark.parametrize("seed", range(40))
def test_a_canonical_file_reads_in_bulk_to_the_strict_workload(tmp_path, seed):
    rng = random.Random(seed)
    block_size = rng.choice([1, 2, 16, 512, 2**41, 2**70])
    records = random_records(rng, block_size, rng.randint(1, 60))
    path = tmp_path / "t.jsonl"
    path.write_bytes(canonical_text(rng, records))
    assert _read_canonical(path.read_bytes(), path, block_size) is not None  # the bulk path reads it
    slow = strict(path, block_size)
    assert_same_workload(read_mooncake(path, block_size), slow)
    assert_same_workload(read_workload(path, "mooncake", block_size), slow)


def test_a_large_file_of_one_id_lines_reads_in_bulk_to_the_strict_workload(tmp_path):
    """A file of many lines (one grammar match over all of them), and the one-id-per-line layout."""
    rng = random.Random(7)
    lines = [
        f'{{"timestamp":{j // 3},"input_length":1,"output_length":0,"hash_ids":[{rng.randrange(500)}]}}'
        for j in range(20_000)
    ]
    path = tmp_path / "flat.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert _read_canonical(path.read_bytes(), path, 1) is not None
    assert_same_workload(read_mooncake(path, 1), strict(path, 1))


VALID_VARIANTS = [
    # other spacing
    b'{"timestamp":  0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 0 , "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{ "timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2] }',
    b'{"timestamp":\t0, "input_length": 3, "output_length": 1, "hash_ids": [1,2]}',
    b' {"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}  ',
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}\r',
    # other key order, extra keys
    b'{"input_length": 3, "timestamp": 0, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"hash_ids": [1, 2], "timestamp": 0, "input_length": 3, "output_length": 1}',
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2], "extra": [1, {"a": 2}]}',
    b'{"session": "x", "timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    # numbers the grammar leaves to the strict path
    b'{"timestamp": 9223372036854775807, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [-9223372036854775808, 2]}',
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1000000000000000000, 2]}',
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [-0, 2]}',
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2], "hash_ids_x": null}',
    # a string with an escape where a key could be
    b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_\\u0069ds": [1, 2]}',
    # blank lines that are not empty
    b"   ",
    b"\t",
]


@pytest.mark.parametrize("variant", VALID_VARIANTS)
def test_a_valid_file_outside_the_grammar_reads_as_before(tmp_path, capsys, variant):
    good = b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}'
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join([good, variant, good]) + b"\n")
    try:
        slow = strict(path, 2)
    except InputError as exc:  # the escaped key: a missing hash_ids, as before
        with pytest.raises(InputError) as caught:
            read_mooncake(path, 2)
        assert str(caught.value) == str(exc)
        return
    warned = capsys.readouterr().err
    assert_same_workload(read_mooncake(path, 2), slow)
    assert capsys.readouterr().err == warned  # the unknown-keys warning, word for word, or none


GOOD = b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}'
BAD_LINES = [
    b'{"timestamp": 4, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',  # before the previous line
    b'{"timestamp": -1, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 05, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 5.0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 5e0, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 9223372036854775808, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 5, "input_length": 0, "output_length": 1, "hash_ids": [1]}',
    b'{"timestamp": 5, "input_length": 1099511627777, "output_length": 1, "hash_ids": [1]}',
    b'{"timestamp": 5, "input_length": 2, "output_length": 1, "hash_ids": [1, 2]}',  # fits one block, not two
    b'{"timestamp": 5, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}',  # needs three
    b'{"timestamp": 5, "input_length": 3, "output_length": -1, "hash_ids": [1, 2]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1099511627777, "hash_ids": [1, 2]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": []}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2.0]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, true]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, [2]]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 02]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 9223372036854775808]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, -9223372036854775809]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2,]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": 1}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1}',
    b'{"timestamp": 5, "timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]} x',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [NaN]}',
    b'{"timestamp": 5, "input_length": 3, "output_length": null, "hash_ids": [1, 2]}',
    b'[{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}]',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2]}\xff',
    b'{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [1, 2\x00]}',
    b"{",
]


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("bad", BAD_LINES)
def test_a_bad_line_among_canonical_ones_gets_the_strict_message(tmp_path, bad, position):
    lines = [GOOD] * 200
    lines[{"first": 0, "middle": 100, "last": 199}[position]] = bad
    if position == "first" and bad.startswith(b'{"timestamp": 4,'):
        lines[1] = bad.replace(b"4", b"3", 1)  # a decreasing pair at the start too
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(InputError) as expected:
        strict(path, 2)
    assert _read_canonical(path.read_bytes(), path, 2) is None
    with pytest.raises(InputError) as caught:
        read_mooncake(path, 2)
    assert str(caught.value) == str(expected.value)


@pytest.mark.parametrize("content", [b"", b"\n", b"\n\n\n", b"  \n"])
def test_a_file_without_requests_gets_the_strict_message(tmp_path, content):
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    assert _read_canonical(content, path, 2) is None
    with pytest.raises(InputError) as caught:
        read_mooncake(path, 2)
    assert str(caught.value) == f"{path}: empty workload: the file has no requests"


@pytest.mark.parametrize("block_size", [0, -1, True, 1.0])
def test_a_bad_block_size_is_refused_before_any_reading(tmp_path, block_size):
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD + b"\n")
    with pytest.raises(InputError) as caught:
        read_mooncake(path, block_size)
    assert str(caught.value) == f"--hash-block-size must be a positive integer, got {block_size!r}"


def outcome(read, path, block_size):
    """The workload a reading gives, or its message."""
    try:
        return read(path, block_size)
    except InputError as exc:
        return str(exc)


@pytest.mark.parametrize("seed", range(10))
def test_a_mutated_canonical_file_reads_or_fails_as_on_the_strict_path(tmp_path, seed):
    """Random edits of a canonical file (bytes of JSON's syntax, digits, signs, blanks, line ends put in, taken out
    or swapped): the reader gives the strict path's workload or its message, whichever the edit leads to."""
    rng = random.Random(seed)
    alphabet = b'0123456789-+,:[]{}" \t\r\n.eE_xa\x00\xff'
    path = tmp_path / "t.jsonl"
    for _ in range(60):
        block_size = rng.choice([1, 2, 16])
        text = bytearray(canonical_text(rng, random_records(rng, block_size, rng.randint(1, 6))))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            edit = rng.choice(["insert", "delete", "replace"])
            if edit == "insert" or not text:
                text[at:at] = bytes([rng.choice(alphabet)])
            elif edit == "delete":
                del text[min(at, len(text) - 1)]
            else:
                text[min(at, len(text) - 1)] = rng.choice(alphabet)
        path.write_bytes(bytes(text))
        expected = outcome(strict, path, block_size)
        got = outcome(read_mooncake, path, block_size)
        if isinstance(expected, str):
            assert got == expected
        else:
            assert_same_workload(got, expected)


def test_a_line_of_many_ids_among_short_ones_reads_in_bulk(tmp_path):
    """One long line among short ones: the grammar's match keeps no stack per id (possessive repeats), and its ids
    are read whole; a file of long lines alone is left to the line-by-line path (faster there)."""
    ids = list(range(-5, 200_000))
    path = tmp_path / "long.jsonl"
    record = {"timestamp": 3, "input_length": 2 * len(ids), "output_length": 0, "hash_ids": ids}
    short = b'{"timestamp": 3, "input_length": 1, "output_length": 0, "hash_ids": [7]}\n' * 3000
    path.write_bytes(short + orjson.dumps(record) + b"\n" + short)
    assert _read_canonical(path.read_bytes(), path, 2) is not None
    assert_same_workload(read_mooncake(path, 2), strict(path, 2))
    path.write_bytes(orjson.dumps(record) + b"\n" + json.dumps(record).encode())
    assert _read_canonical(path.read_bytes(), path, 2) is None
    assert_same_workload(read_mooncake(path, 2), strict(path, 2))
