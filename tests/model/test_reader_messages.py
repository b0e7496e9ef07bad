"""Every refusal of the readers, word for word: the one-line message a user sees for each kind of bad
file (docs/formats.md), with the file, the line and the value it names. ``{p}`` stands for the file's
path. A message is part of the interface: a test that matched only a fragment let a garbled message
through (docs/mutation-testing.md)."""

from __future__ import annotations

import struct

import pytest

from kvtheory.errors import InputError
from kvtheory.model.traces import read_workload, write_mooncake
from kvtheory.model.workload import Workload

JSONL = [
    (b'{"tokens": [1, "a"]}\n', "{p}:1: token 'a' is not an integer"),
    (b'{"tokens": [1, true]}\n', "{p}:1: token True is not an integer"),
    (b'\n{"tokens": []}\n', "{p}:2: 'tokens' is empty; it must be a non-empty list of integer token ids"),
    (b'{"tokens": 5}\n', "{p}:1: 'tokens' must be a non-empty list of integer token ids, got 5"),
    (
        b'{"tokens": [1, 9223372036854775808]}\n',
        "{p}:1: token 9223372036854775808 does not fit in a signed 64-bit integer",
    ),
    (
        b'{"tokens": [-9223372036854775809, 1]}\n',
        "{p}:1: token -9223372036854775809 does not fit in a signed 64-bit integer",
    ),
    (b'{"tokens": [1], "arrival": -1}\n', "{p}:1: 'arrival' must be a non-negative number of seconds, got -1"),
    (b'{"tokens": [1], "arrival": "0"}\n', "{p}:1: 'arrival' must be a non-negative number of seconds, got '0'"),
    (b'{"tokens": [1], "output_len": 1.5}\n', "{p}:1: 'output_len' must be a non-negative integer, got 1.5"),
    (b'{"tokens": [1], "output_len": -1}\n', "{p}:1: 'output_len' must be a non-negative integer, got -1"),
    (b"[1]\n", "{p}:1: expected a JSON object (a query), got [1]"),
    (b'"x"\n', "{p}:1: expected a JSON object (a query), got 'x'"),
    (b'{"arrival": 1}\n', "{p}:1: missing 'tokens' (it must be a non-empty list of integer token ids)"),
    (b'{"tokens": null}\n', "{p}:1: 'tokens' must be a non-empty list of integer token ids, got None"),
    (b'{"tokens": [1], "tokens": [2]}\n', "{p}:1: key 'tokens' appears twice"),
    (b'{"tokens": [NaN]}\n', "{p}:1: not valid JSON (NaN is not a JSON number)"),
    (b'{"tokens": [1]}\n\xff\n', "{p}:2: not valid JSON (the line is not UTF-8)"),
    (b"[" * 100_000 + b"\n", "{p}:1: not valid JSON (nested too deeply)"),
    (b'{"tokens": [1]\n', "{p}:1: not valid JSON (Expecting ',' delimiter)"),
    (b'{"tokens": [1X2]}\n', "{p}:1: not valid JSON (Expecting ',' delimiter)"),  # not for the fast path either
    (b'{"tokens": [1, X2]}\n', "{p}:1: not valid JSON (Expecting value)"),
    (b"\n \n", "{p}: empty workload: the file has no queries"),
    (b"", "{p}: empty workload: the file has no queries"),
]

MOONCAKE = [
    (
        b'{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1, 2]}\n',
        "{p}:1: input_length 4 does not fit 2 block(s) of 4 tokens (it must lie in (4, 8])",
    ),
    (
        b'{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": [1, 2]}\n',
        "{p}:1: input_length 9 does not fit 2 block(s) of 4 tokens (it must lie in (4, 8])",
    ),
    (
        b'{"timestamp": 5, "input_length": 4, "output_length": 1, "hash_ids": [1]}\n'
        b'{"timestamp": 4, "input_length": 4, "output_length": 1, "hash_ids": [1]}\n',
        "{p}:2: timestamp 4 is before the previous line's 5",
    ),
    (
        b'{"timestamp": -1, "input_length": 4, "output_length": 1, "hash_ids": [1]}\n',
        "{p}:1: 'timestamp' must be a non-negative integer number of milliseconds, got -1",
    ),
    (
        b'{"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": [1]}\n',
        "{p}:1: 'input_length' must be a positive integer, got 0",
    ),
    (
        b'{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": []}\n',
        "{p}:1: 'hash_ids' is empty; it must be a non-empty list of integer block ids",
    ),
    (
        b'{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1.5]}\n',
        "{p}:1: hash id 1.5 is not an integer",
    ),
    (
        b'{"timestamp": 0, "input_length": 4, "hash_ids": [1]}\n',
        "{p}:1: missing 'output_length' (it must be a non-negative integer)",
    ),
    (b"\n", "{p}: empty workload: the file has no requests"),
]

ORACLE_GENERAL_RECORD = struct.pack("<IQIq", 0, 7, 1, -1)

FLAT = [
    ("oracle-general", ORACLE_GENERAL_RECORD + b"\x00", None),  # message below: names the record layout
    ("oracle-general", b"", "{p}: empty workload: the file has no requests"),
    ("csv", b"\xff\xfe\x00", "{p}: not a text file (for a binary trace give --format oracle-general)"),
    ("csv", b"id\n1\nx\n", "{p}:3: object id 'x' is not a 64-bit integer"),
    ("csv", b"1\n18446744073709551616\n", "{p}:2: object id '18446744073709551616' is not a 64-bit integer"),
    ("csv", b"\n\n", "{p}: empty workload: the file has no requests"),
]


def refusal(tmp_path, content: bytes, format: str, **options) -> tuple[str, str]:
    path = tmp_path / "input"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_workload(path, format, **options)
    return str(caught.value), str(path)


@pytest.mark.parametrize("content,expected", JSONL)
def test_each_bad_workload_line_gets_its_exact_message(tmp_path, content, expected):
    message, path = refusal(tmp_path, content, "kvtheory")
    assert message == expected.format(p=path)


@pytest.mark.parametrize("content,expected", MOONCAKE)
def test_each_bad_mooncake_line_gets_its_exact_message(tmp_path, content, expected):
    message, path = refusal(tmp_path, content, "mooncake", block_size=4)
    assert message == expected.format(p=path)


@pytest.mark.parametrize("format,content,expected", FLAT)
def test_each_bad_flat_trace_gets_its_exact_message(tmp_path, format, content, expected):
    message, path = refusal(tmp_path, content, format)
    expected = expected or (
        "{p}: 25 bytes is not a multiple of 24 (oracleGeneral records are 24 bytes: uint32 time, uint64 id, "
        "uint32 size, int64 next access)"
    )
    assert message == expected.format(p=path)


@pytest.mark.parametrize("format", ["kvtheory", "mooncake", "oracle-general", "csv", "auto"])
def test_a_missing_file_is_named_with_the_reason(tmp_path, format):
    path = tmp_path / "absent"
    with pytest.raises(InputError) as caught:
        read_workload(path, format)
    noun = "workload" if format in ("kvtheory", "auto") else "trace"
    assert str(caught.value) == f"{path}: cannot read {noun} file (No such file or directory)"


def test_options_the_readers_refuse(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_bytes(b'{"tokens": [1]}\n')
    with pytest.raises(InputError) as caught:
        read_workload(path, "json")
    assert str(caught.value) == (
        "unknown format 'json'; known formats: auto, kvtheory, mooncake, oracle-general, csv, bailian"
    )
    for block_size in (0, -4, 2.0, True):
        with pytest.raises(InputError) as caught:
            read_workload(path, "mooncake", block_size=block_size)
        assert str(caught.value) == f"--hash-block-size must be a positive integer, got {block_size!r}"
    with pytest.raises(InputError) as caught:
        write_mooncake(Workload.from_token_lists([[1, 2]]), tmp_path / "out.jsonl")
    assert str(caught.value) == "query 0: only block queries can be written as a Mooncake trace"


@pytest.mark.parametrize(
    "format,content,known",
    [
        (
            "kvtheory",
            b'{"tokens": [1], "zeta": 1, "alpha": 2}\n{"tokens": [2], "alpha": 3}\n',
            "tokens, arrival, output_len",
        ),
        (
            "mooncake",
            b'{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1], "zeta": 0, "alpha": 0}\n',
            "timestamp, input_length, output_length, hash_ids",
        ),
    ],
)
def test_unknown_keys_are_named_once_per_file_sorted(tmp_path, capsys, format, content, known):
    path = tmp_path / "input"
    path.write_bytes(content)
    read_workload(path, format, block_size=4)
    assert capsys.readouterr().err == (
        f"kvtheory: warning: {path}: ignored unknown key(s) 'alpha', 'zeta'; known: {known}\n"
    )
