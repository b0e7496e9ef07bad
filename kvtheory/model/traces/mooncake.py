"""Mooncake traces (docs/formats.md §Mooncake traces): JSON Lines of block-hashed requests, read into
:class:`BlockQuery` objects (a file of canonical lines: into columns, :class:`~kvtheory.model.workload.BlockColumns`)
without expanding them to tokens.

A line is ``{"timestamp": ms, "input_length": L, "output_length": o, "hash_ids": [h_1, ..., h_n]}`` with
block_size * (n - 1) < L <= block_size * n: query j is blocks h_1..h_n, the last holding
L - block_size * (n - 1) tokens; a_j = timestamp / 1000 s and o_j = output_length.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import orjson

from kvtheory.errors import InputError
from kvtheory.model.query import BlockQuery
from kvtheory.model.records import MAX_TOKENS, Int, IntArray, RecordType
from kvtheory.model.traces import register_format
from kvtheory.model.traces.base import (
    BY_FIELDS,
    DEFAULT_BLOCK_SIZE,
    Sample,
    TraceFormat,
    read_block_trace,
)
from kvtheory.model.workload import MAX_OUTPUT_LEN, BlockColumns, Workload

FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")

#: A Mooncake line (docs/formats.md §Mooncake traces); other keys are ignored with one warning per file.
MOONCAKE_RECORD = RecordType(
    "a Mooncake request",
    {
        "timestamp": Int("a non-negative integer number of milliseconds", lo=0),
        "input_length": Int("a positive integer", lo=1, hi=MAX_TOKENS),
        "output_length": Int("a non-negative integer", lo=0, hi=MAX_OUTPUT_LEN),
        "hash_ids": IntArray("a non-empty list of integer block ids", element="hash id"),
    },
    required=frozenset(FIELDS),
    extra=True,
)


def parse_mooncake_line(line: bytes, where: str, block_size: int, unknown: set[str]) -> tuple[BlockQuery, int]:
    """One record as a query and its timestamp (ms); InputError prefixed by ``where`` if it is malformed."""
    record = MOONCAKE_RECORD.parse(line, where)
    unknown.update(key for key in record if key not in MOONCAKE_RECORD.fields)
    length, ids = record["input_length"], record["hash_ids"]
    n = len(ids)
    if not block_size * (n - 1) < length <= block_size * n:
        raise InputError(
            f"{where}: input_length {length} does not fit {n} block(s) of {block_size} tokens "
            f"(it must lie in ({block_size * (n - 1)}, {block_size * n}])"
        )
    timestamp = record["timestamp"]
    query = BlockQuery(tuple(ids.tolist()), length, block_size, timestamp / 1000, record["output_length"])
    return query, timestamp


# -- the bulk path: a file of canonical lines, read at once ----------------------------------------------------
# A canonical line is what write_mooncake (orjson, no blanks) and the published Mooncake traces (Python's json, a
# blank after each colon and comma) write: the four fields in this order and nothing else, each separator followed
# by at most one blank, every number a JSON integer of at most 18 digits (below 10**18, so within int64), without
# a sign but for a hash id's minus. Any other line (other spacing or key order, extra keys, CRLF line ends, longer
# numbers) is valid or not as the strict parser says, and takes the line-by-line path.
_DIGITS = rb"(?:0|[1-9][0-9]{0,17})"
_LINE = rb'\{"timestamp": ?N, ?"input_length": ?N, ?"output_length": ?N, ?"hash_ids": ?\[-?N(?:, ?-?N)*+\]\}'.replace(
    b"N", _DIGITS
)
#: a file of canonical lines and empty lines; every quantifier possessive (nothing to backtrack to: each byte allows
#: one reading), so a match over a whole file, or over a line of millions of ids, keeps no backtracking stack
_CANONICAL = re.compile(rb"(?:" + _LINE + rb")?+(?:\n(?:" + _LINE + rb")?+)*+")
#: Files of longer lines on average (some 250 ids a line and more) are left to the line-by-line path, which reads a
#: long line's ids with numpy (kvtheory.model.records.NUMPY_MIN_BYTES) and is then as fast or faster.
BULK_LINE_BYTES = 2048
#: every byte but digits and the minus sign to a blank: what is left of a canonical file is its numbers
_NUMBERS_ONLY = bytes(c if chr(c) in "0123456789-" else ord(" ") for c in range(256))


def _read_canonical(data: bytes, path: Path, block_size: int) -> Workload | None:
    """The workload of a file of canonical lines (and empty lines), read in a few numpy passes; None when the
    file has any other line or any line the strict path refuses (a length that does not fit its blocks, a value
    out of range, a decreasing timestamp), so that the line-by-line path reads it and names the error, and None
    for a file of lines longer than :data:`BULK_LINE_BYTES` on average (read faster line by line).

    It checks what :data:`MOONCAKE_RECORD` and :func:`parse_mooncake_line` check of such a line, and holds the
    same queries as columns (:class:`~kvtheory.model.workload.BlockColumns`): the grammar makes every value a JSON
    integer within int64, non-negative but for hash ids and every ``hash_ids`` a non-empty flat list; then
    1 <= input_length <= MAX_TOKENS, output_length <= MAX_OUTPUT_LEN, input_length fits the hash ids
    (n = ceil(input_length / block_size)), and timestamps never decrease."""
    if len(data) > BULK_LINE_BYTES * (data.count(b"\n") + 1) or not _CANONICAL.fullmatch(data):
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(raw == ord("\n"))
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [raw.size]))
    filled = np.flatnonzero(ends > starts)  # the non-empty lines: every one canonical
    if not filled.size:
        return None  # no request: the strict path's message
    commas = np.flatnonzero(raw == ord(","))
    before = np.concatenate(([0], np.searchsorted(commas, newlines), [commas.size]))  # commas before each line
    counts = np.diff(before)[filled] + 1  # numbers per line: timestamp, input_length, output_length, the hash ids
    numbers = np.fromstring(data.translate(_NUMBERS_ONLY), dtype=np.int64, sep=" ")
    if numbers.size != int(counts.sum()):
        return None
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    timestamp, length, output = numbers[first], numbers[first + 1], numbers[first + 2]
    n = counts - 3
    clipped = min(block_size, 2 * MAX_TOKENS)  # ceil(L / b) is 1 for any b >= L, and no product overflows
    if (
        length.min() < 1
        or length.max() > MAX_TOKENS
        or output.max() > MAX_OUTPUT_LEN
        or np.any(n != -(-length // clipped))  # b (n - 1) < L <= b n, that is n = ceil(L / b)
        or np.any(timestamp[1:] < timestamp[:-1])
    ):
        return None
    if int(timestamp.max()) < 2**53:  # exact as a float: one IEEE division, as Python's int / int gives
        arrivals = timestamp / 1000
    else:
        arrivals = [t / 1000 for t in timestamp.tolist()]
    keep = np.ones(numbers.size, dtype=bool)
    keep[first] = keep[first + 1] = keep[first + 2] = False  # the ids: every number but each line's first three
    offsets = np.concatenate(([0], np.cumsum(n)))
    columns = BlockColumns(numbers[keep], offsets, length, block_size, arrivals, output)
    return Workload(columns, str(path), tuple((filled + 1).tolist()))


def read_mooncake(path: str | Path, block_size: int = 512) -> Workload:
    """Read a Mooncake trace; timestamps must be non-negative and non-decreasing.

    Raises InputError naming ``path:line`` for the first bad line; unknown keys are ignored with one
    warning line naming them. A file of canonical lines (:func:`_read_canonical`) is read in bulk, to the same
    workload.
    """
    return read_block_trace(path, block_size, parse_mooncake_line, FIELDS, bulk=_read_canonical)


@register_format
class MooncakeFormat(TraceFormat):
    name = "mooncake"
    summary = "Mooncake (FAST'25) JSON Lines: timestamp ms, input_length, output_length, hash_ids"
    block_size = DEFAULT_BLOCK_SIZE

    @classmethod
    def read(cls, path: Path, block_size: int) -> Workload:
        return read_mooncake(path, block_size)

    @classmethod
    def detect(cls, sample: Sample) -> int:
        """A first line that is a JSON object with ``hash_ids``."""
        return BY_FIELDS if sample.has_keys("hash_ids") else 0


def write_mooncake(workload: Workload, path: str | Path) -> None:
    """Write a workload of :class:`BlockQuery` objects as a Mooncake trace (the inverse of :func:`read_mooncake`);
    a missing arrival is written as 0 ms and a missing output length as 0."""
    with open(path, "wb") as handle:
        for j, query in enumerate(workload):
            if not isinstance(query, BlockQuery):
                raise InputError(f"{workload.where(j)}: only block queries can be written as a Mooncake trace")
            record = {
                "timestamp": round((query.arrival or 0.0) * 1000),
                "input_length": query.length,
                "output_length": query.output_len or 0,
                "hash_ids": list(query.hash_ids),
            }
            handle.write(orjson.dumps(record) + b"\n")
