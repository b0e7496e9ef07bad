"""Mooncake traces (docs/formats.md §Mooncake traces): JSON Lines of block-hashed requests, read into
:class:`BlockQuery` objects without expanding them to tokens.

A line is ``{"timestamp": ms, "input_length": L, "output_length": o, "hash_ids": [h_1, ..., h_n]}`` with
block_size * (n - 1) < L <= block_size * n: query j is blocks h_1..h_n, the last holding
L - block_size * (n - 1) tokens; a_j = timestamp / 1000 s and o_j = output_length.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from kvtheory.errors import InputError
from kvtheory.model.query import BlockQuery
from kvtheory.model.records import MAX_TOKENS, Int, IntArray, RecordType
from kvtheory.model.traces import register_format
from kvtheory.model.traces.base import BY_FIELDS, DEFAULT_BLOCK_SIZE, Sample, TraceFormat, read_block_trace
from kvtheory.model.workload import MAX_OUTPUT_LEN, Workload

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


def read_mooncake(path: str | Path, block_size: int = 512) -> Workload:
    """Read a Mooncake trace; timestamps must be non-negative and non-decreasing.

    Raises InputError naming ``path:line`` for the first bad line; unknown keys are ignored with one
    warning line naming them.
    """
    return read_block_trace(path, block_size, parse_mooncake_line, FIELDS)


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
