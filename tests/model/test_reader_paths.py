"""The workload reader's two paths agree on every line: the numpy fast path (taken for bytes whose token
list holds plain non-negative integers) and the fully checked path (every other line, and any str) give
the same query or the same one-line error.

Lines are generated as JSON text with varied spacing, key order, token values at and beyond the int64
limits, non-integers, booleans, unknown keys and malformed edits, so both the lines the fast path takes
and the ones it must hand over are reached.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import EXAMPLE_DEADLINE

from kvtheory import InputError
from kvtheory.model.workload import parse_query_line

INT64 = (-(2**63), 2**63 - 1)
token_values = st.one_of(
    st.integers(0, 50),
    st.integers(*INT64),
    st.sampled_from([INT64[0], INT64[1], INT64[1] - 1, 2**63, -(2**63) - 1, 2**64]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=2),
    st.none(),
)
optional_values = st.one_of(st.none(), st.integers(-3, 10**6), st.floats(-1e9, 1e9), st.booleans(), st.text(max_size=2))


@st.composite
def json_lines(draw) -> str:
    record = {"tokens": draw(st.one_of(st.lists(st.integers(0, 50), min_size=1), st.lists(token_values)))}
    for key in ("arrival", "output_len", "prompt"):
        if draw(st.integers(0, 3)) == 0:
            record[key] = draw(optional_values)
    keys = draw(st.permutations(list(record)))
    item, pair = draw(st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]))
    text = "{" + item.join(json.dumps(k) + pair + json.dumps(record[k], separators=(item, pair)) for k in keys) + "}"
    edit = draw(st.integers(0, 9))
    if edit == 0 and len(text) > 2:  # cut the line short
        text = text[: draw(st.integers(1, len(text) - 1))]
    elif edit == 1:  # double a comma or drop one
        text = text.replace(",", draw(st.sampled_from([",,", ""])), 1)
    elif edit == 2:  # surrounding whitespace
        text = "  " + text + " \t"
    return text


def outcome(line: bytes | str):
    try:
        query = parse_query_line(line, "w.jsonl:1")
    except InputError as error:
        return "error", str(error)
    return "query", query.tokens.tolist(), query.tokens.dtype.str, query.arrival, query.output_len


@pytest.mark.slow
@settings(max_examples=400, deadline=EXAMPLE_DEADLINE)
@given(json_lines())
@example('{"tokens": [1, 2, 3]}')
@example('{"tokens":[0]}')
@example('{"tokens": [9223372036854775807]}')  # the int64 maximum
@example('{"tokens": [9223372036854775806, 1]}')
@example('{"tokens": [9223372036854775808]}')  # one past it
@example('{"tokens": [-9223372036854775808]}')
@example('{"tokens": [1, 2], "tokens": [3]}')  # a repeated key
@example('{"tokens": [1,,2]}')
@example('{"tokens": [1 2]}')
@example('{"tokens": [ ]}')
@example('{"tokens": []}')
@example('{"tokens": [1], "arrival": 0, "output_len": 0}')
@example('{"arrival": 1.5, "tokens": [4, 5]}')
@example('{"tokens": [01]}')  # a leading zero: not JSON
@example('{"tokens": [1, 007]}')
@example('{"tokens": [1.0]}')
@example('{"tokens": [1e3]}')
@example('{"tokens": [true]}')
@example('{"tokens": [1]')
@example('[{"tokens": [1]}]')
@example('{"tokens": [1], "prompt": "x"}')
def test_fast_and_checked_paths_agree_on_every_line(line):
    assert outcome(line.encode()) == outcome(line)


def test_the_fast_path_reads_plain_lines_exactly():
    assert outcome(b'{"tokens": [3, 1, 2], "arrival": 1.5, "output_len": 4}') == (
        "query",
        [3, 1, 2],
        "<i8",
        1.5,
        4,
    )
    assert outcome(b'{"tokens":[9223372036854775806]}')[1] == [2**63 - 2]
