"""Each field kind of the shared record validation (kvtheory/model/records.py) at its boundaries, with the
exact one-line message: what the readers' mutation run found untested (docs/mutation-testing.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtheory.errors import InputError
from kvtheory.model.records import (
    INT64_MAX,
    INT64_MIN,
    NUMPY_MIN_BYTES,
    Bool,
    Int,
    IntArray,
    Number,
    Numbers,
    Object,
    RecordType,
    Text,
    show,
)


def message(kind, value) -> str:
    with pytest.raises(InputError) as caught:
        kind.check("f", value, "w.jsonl:3")
    return str(caught.value)


def test_show_keeps_short_values_whole_and_cuts_long_ones_to_the_limit():
    assert show("x" * 38) == repr("x" * 38)  # 40 characters: kept
    assert show("x" * 39) == repr("x" * 39)[:37] + "..."  # 41: cut to 40
    assert len(show(list(range(100)))) == 40
    assert show(list(range(100)), limit=10) == "[0, 1, ..."


def test_numbers_are_checked_on_both_ends_inclusive():
    kind = Number("a number in [0, 2]", lo=0.0, hi=2.0)
    assert kind.check("f", 0, "w") == 0 and kind.check("f", 2.0, "w") == 2.0
    assert message(kind, 2.0000001) == "w.jsonl:3: 'f' must be a number in [0, 2], got 2.0000001"
    assert message(kind, -1e-9) == "w.jsonl:3: 'f' must be a number in [0, 2], got -1e-09"
    assert message(kind, math.inf) == "w.jsonl:3: 'f' must be a number in [0, 2], got inf"
    assert message(kind, True) == "w.jsonl:3: 'f' must be a number in [0, 2], got True"
    whole = Int("an integer in [1, 3]", lo=1, hi=3)
    assert whole.check("f", 1, "w") == 1 and whole.check("f", 3, "w") == 3
    assert message(whole, 4) == "w.jsonl:3: 'f' must be an integer in [1, 3], got 4"
    assert message(whole, 0) == "w.jsonl:3: 'f' must be an integer in [1, 3], got 0"


def test_text_bool_and_object_name_the_value_they_refuse():
    assert Text("a name").check("f", "a", "w") == "a"
    assert message(Text("a name"), "") == "w.jsonl:3: 'f' must be a name, got ''"
    assert Text("a note", empty=True).check("f", "", "w") == ""
    assert message(Text("a note", empty=True), 7) == "w.jsonl:3: 'f' must be a note, got 7"
    assert message(Bool(), 1) == "w.jsonl:3: 'f' must be true or false, got 1"
    assert message(Object("an object"), [1]) == "w.jsonl:3: 'f' must be an object, got [1]"


def test_number_lists_check_length_and_each_element():
    pair = Numbers("a pair", length=2)
    assert pair.check("f", [1, None], "w") == [1, None]
    assert message(pair, [1]) == "w.jsonl:3: 'f' must be a pair, got [1]"
    assert message(pair, [1, "2"]) == "w.jsonl:3: 'f' must be a pair, got [1, '2']"
    assert message(Numbers("ratios"), [1.0, math.nan]) == "w.jsonl:3: 'f' must be ratios, got [1.0, nan]"


def test_int_arrays_must_lie_within_int64_and_in_their_range():
    IntArray("ids", element="id", lo=INT64_MIN, hi=INT64_MAX)  # the widest range is allowed
    with pytest.raises(ValueError, match="within int64"):
        IntArray("ids", element="id", lo=INT64_MIN - 1)
    with pytest.raises(ValueError, match="within int64"):
        IntArray("ids", element="id", hi=INT64_MAX + 1)
    small = IntArray("ids in [0, 9]", element="id", lo=0, hi=9)
    assert small.check("f", [0, 9], "w").tolist() == [0, 9]
    assert message(small, [0, 10]) == "w.jsonl:3: id 10 is outside [0, 9]"
    assert message(small, [-1, 5]) == "w.jsonl:3: id -1 is outside [0, 9]"
    wide = IntArray("ids", element="id")
    assert message(wide, [2**63]) == f"w.jsonl:3: id {2**63} does not fit in a signed 64-bit integer"


def test_the_fast_array_cut_takes_plain_decimal_lists_only():
    """The JSON Lines fast path's cut (``_fast_array``): the array of the key, read with numpy, and the
    line with a sentinel in its place; None (hand the line to the strict parser) for anything unusual."""
    from kvtheory.model.records import _SENTINEL, _fast_array

    array, rest = _fast_array(b'{"tokens": [1, 22,333], "x": [4]}', "tokens")
    assert array.tolist() == [1, 22, 333] and array.dtype == np.int64
    assert rest == b'{"tokens": ' + _SENTINEL + b', "x": [4]}'
    assert _fast_array(b'{"tokens": [1,\t2 ]}', "tokens")[0].tolist() == [1, 2]  # blanks and tabs
    array, rest = _fast_array(b'{"a":1,"tokens"\t:\t[0]}', "tokens")
    assert array.tolist() == [0] and rest == b'{"a":1,"tokens"\t:\t' + _SENTINEL + b"}"
    for line in (
        b'{"token": [1]}',  # no such key
        b'{"tokens": [1, 2}',  # no closing bracket
        b'{"tokens": [1.5]}',
        b'{"tokens": [-1]}',
        b'{"tokens": []}',
        b'{"tokens": [ ]}',
        b'{"tokens": [1,,2]}',
        b'{"tokens": [1,2,]}',
        b'{"tokens": [07]}',
        b'{"tokens": [9223372036854775807]}',  # numpy saturates at int64's largest value
        b'{"tokens": [1], "note": "' + _SENTINEL + b'"}',  # the sentinel elsewhere on the line
        b'{"note": "' + _SENTINEL + b'", "tokens": [1]}',
    ):
        assert _fast_array(line, "tokens") is None, line


def test_leading_zeros_are_found_in_any_number_of_a_list():
    from kvtheory.model.records import _leading_zero

    for text in (b"0", b"0,0", b"10", b"100, 0", b"1,0", b"0, 10", b"90,0"):
        assert not _leading_zero(text), text
    for text in (b"07", b"00", b"1,07", b"10, 05", b"0,00", b"3, 0 ,012"):
        assert _leading_zero(text), text


def test_unknown_keys_are_listed_sorted_and_cut_at_sixty_characters():
    """A record type without ``extra`` names its unknown keys, sorted, in at most 60 characters, then the
    allowed ones: the whole message, at the cut and one key short of it."""
    strict = RecordType("a point", {"x": Int("an integer"), "y": Int("an integer")}, required=frozenset({"x"}))

    def refused(record) -> str:
        with pytest.raises(InputError) as caught:
            strict.check(record, "p.jsonl:2")
        return str(caught.value)

    keys = [f"key_{i:02d}" for i in range(9)]  # repr of 6 keys is 60 characters, of 7 it is 70
    assert len(repr(keys[:6])) == 60 and len(repr(keys[:7])) == 70
    assert refused({"x": 1, **dict.fromkeys(reversed(keys[:6]), 0)}) == (
        f"p.jsonl:2: unknown key(s) {keys[:6]!r}; allowed: x, y"
    )
    assert refused({"x": 1, **dict.fromkeys(reversed(keys), 0)}) == (
        f"p.jsonl:2: unknown key(s) {repr(keys)[:57]}...; allowed: x, y"
    )


def test_int_arrays_of_a_narrower_range_name_that_range_and_check_it_on_the_fast_path():
    """An IntArray narrower than int64 says "outside [lo, hi]" (only the full int64 range says "signed
    64-bit"); ``accepts``, the fast path's last check, holds exactly for non-empty arrays within [lo, hi]
    inclusive; a range beyond int64 is a programming error, refused when the kind is made."""
    for lo, hi in ((0, INT64_MAX), (INT64_MIN, 10), (0, 10)):
        kind = IntArray("ids", element="id", lo=lo, hi=hi)
        bad = -1 if lo == 0 else 11
        assert message(kind, [5, bad]) == f"w.jsonl:3: id {bad} is outside [{lo}, {hi}]"
    kind = IntArray("ids", element="id", lo=0, hi=10)
    assert kind.accepts(np.array([0, 10])) and kind.accepts(np.array([5]))
    for refused in ([-1, 5], [5, 11], [-1], [11], []):
        assert not kind.accepts(np.array(refused, dtype=np.int64)), refused
    for lo, hi in ((INT64_MIN - 1, 0), (0, INT64_MAX + 1)):
        with pytest.raises(ValueError) as caught:
            IntArray("ids", element="id", lo=lo, hi=hi)
        assert str(caught.value) == "an IntArray's range must lie within int64"


def test_a_record_types_fast_path_reads_its_first_int_array_without_the_per_element_check(monkeypatch):
    """A record type takes its first IntArray field for the fast path (none without one), and a plain line
    is read by numpy, never by the per-element check; the strict parse still vets the rest of the line."""
    ints = IntArray("ints", element="int")
    assert RecordType("r", {"n": Int("an int"), "a": ints, "b": ints})._array == "a"
    assert RecordType("r", {"n": Int("an int")})._array is None

    def per_element(*args):
        raise AssertionError("the fast path was not taken")

    long = list(range(1000, 1000 + NUMPY_MIN_BYTES // 5))  # a line of at least NUMPY_MIN_BYTES
    line = b'{"n": 1, "a": [%s]}' % ",".join(map(str, long)).encode()
    assert len(line) >= NUMPY_MIN_BYTES
    checked = RecordType("r", {"n": Int("an int"), "a": ints})
    monkeypatch.setattr(IntArray, "check", per_element)
    record = checked.parse(line, "w:1")
    assert record["n"] == 1 and record["a"].tolist() == long
    with pytest.raises(AssertionError, match="fast path was not taken"):  # a short line: the strict parser alone
        checked.parse(b'{"n": 1, "a": [3, 2, 1]}', "w:1")
