"""One validation path for the records that readers accept: JSON Lines today, trace formats as they land.

A reader declares its record type once, as a :class:`RecordType` (field name -> :class:`Int`,
:class:`Number`, :class:`IntArray`, :class:`Numbers`, :class:`Text`, :class:`Bool`, :class:`Object`,
:class:`Anything`; which fields are required; whether unknown keys are allowed), and calls
:meth:`RecordType.parse` on every line (or :meth:`RecordType.check` on a parsed object, to layer a
second type on the first, as sweep results do for error-free records). The result is a
dict of checked Python values (an :class:`IntArray` becomes an int64 numpy array) or an
:class:`~kvtheory.errors.InputError` whose one-line message starts with ``where`` (``file:line``).

Exactness, so that a line is read to exactly what it says or rejected, never squashed:

* JSON is parsed strictly: duplicate keys, ``NaN``/``Infinity`` literals and bytes that are not UTF-8
  are errors.
* An integer is a JSON integer (never ``true``/``false``, never ``1.0``), within the field's range.
  A number is a JSON integer or a finite float (``1e999`` overflows to infinity and is rejected).
* An integer array is a flat JSON array of integers: every element's type is checked before numpy sees
  it, so a nested list (``[[1], [2]]``), a boolean or a float is an error, never coerced.

Speed: a line of at least :data:`NUMPY_MIN_BYTES` whose array is plain decimal integers (what ``kvtheory
generate`` writes) has that array cut out and read by numpy directly (:func:`_fast_array`); the rest of the
line, and every other line, takes the checked path. The fast path only accepts what the checked path
accepts, with the same values.

The workload reader (``kvtheory.model.workload.QUERY_RECORD``) and the Mooncake trace reader
(``kvtheory.model.traces.mooncake.MOONCAKE_RECORD``) are two such types, each a loop over lines (each first
tries a bulk read of a whole file in its plain form, which accepts only what this path accepts, with the
same values, and leaves every other file, and every error, to this path).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from kvtheory.errors import InputError

INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
#: Largest budget, batch size or length (tokens) accepted anywhere: far above any GPU's KV cache, and
#: small enough that every sum of such numbers stays an int64.
MAX_TOKENS = 2**40
#: Seeds are non-negative int64 (numpy takes any non-negative integer; records and hypothesis want int64).
MAX_SEED = INT64_MAX


def show(value, limit: int = 40) -> str:
    """``repr`` of a value for a one-line message, shortened to about ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- field kinds ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Int:
    """A JSON integer in [lo, hi]; ``what`` completes "must be ..." in messages."""

    what: str
    lo: int = INT64_MIN
    hi: int = INT64_MAX

    def check(self, name: str, value, where: str):
        if type(value) is not int or not self.lo <= value <= self.hi:
            raise InputError(f"{where}: '{name}' must be {self.what}, got {show(value)}")
        return value


@dataclass(frozen=True)
class Number:
    """A JSON integer or finite float in [lo, hi] (returned as it is: an int stays an int)."""

    what: str
    lo: float = -math.inf
    hi: float = math.inf

    def check(self, name: str, value, where: str):
        if type(value) not in (int, float) or not math.isfinite(value) or not self.lo <= value <= self.hi:
            raise InputError(f"{where}: '{name}' must be {self.what}, got {show(value)}")
        return value


@dataclass(frozen=True)
class Text:
    """A JSON string (non-empty unless ``empty``)."""

    what: str
    empty: bool = False

    def check(self, name: str, value, where: str):
        if type(value) is not str or (not value and not self.empty):
            raise InputError(f"{where}: '{name}' must be {self.what}, got {show(value)}")
        return value


@dataclass(frozen=True)
class Bool:
    """A JSON ``true`` or ``false``."""

    what: str = "true or false"

    def check(self, name: str, value, where: str):
        if type(value) is not bool:
            raise InputError(f"{where}: '{name}' must be {self.what}, got {show(value)}")
        return value


@dataclass(frozen=True)
class Object:
    """A JSON object, passed through."""

    what: str

    def check(self, name: str, value, where: str):
        if type(value) is not dict:
            raise InputError(f"{where}: '{name}' must be {self.what}, got {show(value)}")
        return value


@dataclass(frozen=True)
class Numbers:
    """A JSON array of numbers, ``null`` standing for a value JSON cannot hold (an infinite ratio is
    written as ``null``); of exactly ``length`` elements when given."""

    what: str
    length: int | None = None

    def check(self, name: str, value, where: str):
        if (
            type(value) is not list
            or (self.length is not None and len(value) != self.length)
            or any(v is not None and (type(v) not in (int, float) or not math.isfinite(v)) for v in value)
        ):
            raise InputError(f"{where}: '{name}' must be {self.what}, got {show(value)}")
        return value


@dataclass(frozen=True)
class Anything:
    """Any JSON value (for fields a reader passes through without interpreting them)."""

    what: str = "any JSON value"

    def check(self, name: str, value, where: str):
        return value


@dataclass(frozen=True)
class IntArray:
    """A flat, non-empty JSON array of integers in [lo, hi] (each an ``element``), as an int64 array."""

    what: str
    element: str
    lo: int = INT64_MIN
    hi: int = INT64_MAX

    def __post_init__(self) -> None:
        if self.lo < INT64_MIN or self.hi > INT64_MAX:
            raise ValueError("an IntArray's range must lie within int64")

    def check(self, name: str, value, where: str) -> np.ndarray:
        if type(value) is not list:
            raise InputError(f"{where}: '{name}' must be {self.what}, got {show(value)}")
        if not value:
            raise InputError(f"{where}: '{name}' is empty; it must be {self.what}")
        for item in value:
            if type(item) is not int:
                raise InputError(f"{where}: {self.element} {show(item)} is not an integer")
        low, high = min(value), max(value)
        if low < self.lo or high > self.hi:
            bad = low if low < self.lo else high
            if self.lo == INT64_MIN and self.hi == INT64_MAX:
                raise InputError(f"{where}: {self.element} {show(bad)} does not fit in a signed 64-bit integer")
            raise InputError(f"{where}: {self.element} {show(bad)} is outside [{self.lo}, {self.hi}]")
        return np.array(value, dtype=np.int64)

    def accepts(self, array: np.ndarray) -> bool:
        """Whether an array already read as int64 lies in range (the fast path's last check)."""
        return bool(array.size) and int(array.min()) >= self.lo and int(array.max()) <= self.hi


Kind = Int | Number | Text | Bool | Object | Numbers | Anything | IntArray


# -- strict JSON --------------------------------------------------------------------------------------
class _Duplicate(ValueError):
    pass


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return record


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


def parse_json(line: bytes | str, where: str):
    """The JSON value of one line, parsed strictly (see the module docstring)."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: not valid JSON (the line is not UTF-8)") from None
    try:
        return json.loads(line, object_pairs_hook=_object_without_duplicates, parse_constant=_no_constants)
    except _Duplicate as exc:
        raise InputError(f"{where}: key {show(exc.args[0])} appears twice") from None
    except RecursionError:
        raise InputError(f"{where}: not valid JSON (nested too deeply)") from None
    except ValueError as exc:  # json.JSONDecodeError, and the constants above
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InputError(f"{where}: not valid JSON ({reason})") from None


# -- the fast path for one integer array ----------------------------------------------------------------
_SENTINEL = b'"\\u0000kvtheory"'  # a JSON string no line of ours contains (checked before use)


#: Lines of fewer bytes go to the strict parser alone, which reads them faster than the fast path's fixed cost
#: (a Mooncake line of 1-16 hash ids: 5-8 us strict against 18-20 us; the two meet near 200 ids, 1,000 bytes).
NUMPY_MIN_BYTES = 512


def _fast_array(line: bytes, key: str) -> tuple[np.ndarray, bytes] | None:
    """Cut ``"key": [d, d, ...]`` (plain non-negative decimals) out of ``line`` and read it with numpy.

    Returns the array and the line with the array replaced by a sentinel string, or None when anything
    is unusual. The caller parses that rest strictly and accepts only if ``rest[key]`` is the sentinel:
    then the array was the value of the top-level ``key`` (not of a nested or a repeated one).
    """
    match = re.search(rb'"' + re.escape(key.encode()) + rb'"[ \t]*:[ \t]*\[', line)
    if match is None:
        return None
    start = match.end()
    stop = line.find(b"]", start)
    if stop < 0:
        return None
    head, text, tail = line[: start - 1], line[start:stop], line[stop + 1 :]
    if _SENTINEL in head or _SENTINEL in tail:
        return None
    separators = text.translate(None, b"0123456789")
    if separators.translate(None, b", \t") or len(separators) == len(text):
        return None  # a character other than digits, commas and blanks; or no digit at all
    try:
        array = np.fromstring(text, dtype=np.int64, sep=",")
    except ValueError:
        return None
    if array.size != separators.count(b",") + 1 or int(array.max()) == INT64_MAX:  # numpy saturates there
        return None
    if _leading_zero(text):
        return None
    return array, head + _SENTINEL + tail


def _leading_zero(text: bytes) -> bool:
    """Whether a number in ``text`` (digits, commas, blanks) starts with 0 and has more digits (not JSON;
    numpy would read ``007`` as 7)."""
    chars = np.frombuffer(text, dtype=np.uint8)
    digit = (chars - ord("0")) < 10  # uint8 wraps below '0'
    starts = np.concatenate(([True], ~digit[:-1])) & digit  # the first digit of each number
    return bool(np.any(starts[:-1] & (chars[:-1] == ord("0")) & digit[1:]))


# -- record types -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordType:
    """A JSON object per line: ``fields`` (name -> kind), the ``required`` names, and whether keys
    outside ``fields`` are errors (``extra=False``) or kept unchecked. A ``null`` optional field is
    read as absent; a ``null`` required field is an error."""

    name: str
    fields: Mapping[str, Kind]
    required: frozenset[str] = frozenset()
    extra: bool = False
    _array: str | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        arrays = [name for name, kind in self.fields.items() if isinstance(kind, IntArray)]
        object.__setattr__(self, "_array", arrays[0] if arrays else None)

    def parse(self, line: bytes | str, where: str) -> dict:
        """One line -> a dict of its checked fields (:meth:`check`); InputError naming ``where``."""
        long = self._array and isinstance(line, bytes) and len(line) >= NUMPY_MIN_BYTES
        fast = _fast_array(line, self._array) if long else None
        if fast is not None:
            array, rest = fast
            try:
                record = parse_json(rest, where)
            except InputError:
                record = None
            if type(record) is dict and record.get(self._array) == "\x00kvtheory":
                if self.fields[self._array].accepts(array):
                    record[self._array] = array
                    return self.check(record, where, skip=self._array)
        return self.check(parse_json(line, where), where)

    def check(self, record, where: str, skip: str | None = None) -> dict:
        """Check a parsed JSON value against this type (``skip``: a field already checked).

        Returns the record with checked values; an absent or ``null`` optional field is left out, and
        keys outside ``fields`` are kept as they are (``extra``) or are an error.
        """
        if type(record) is not dict:
            raise InputError(f"{where}: expected a JSON object ({self.name}), got {show(record)}")
        if not self.extra:
            unknown = [key for key in record if key not in self.fields]
            if unknown:
                raise InputError(
                    f"{where}: unknown key(s) {show(sorted(unknown), 60)}; allowed: {', '.join(self.fields)}"
                )
        for name in self.required:
            if name not in record:
                raise InputError(f"{where}: missing '{name}' (it must be {self.fields[name].what})")
        checked = {}
        for name, value in record.items():
            kind = self.fields.get(name)
            if kind is None or name == skip:
                checked[name] = value
            elif value is not None or name in self.required:
                checked[name] = kind.check(name, value, where)
        return checked
