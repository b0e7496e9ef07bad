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
from kvtheory.model.traces.base import BY_FIELDS, DEFAULT_BLOCK_SIZE, Sample, TraceFormat
from kvtheory.model.workload import MAX_OUTPUT_LEN, Workload, warn_unknown_keys

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
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise InputError(f"--block-size must be a positive integer, got {block_size!r}")
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read trace file ({exc.strerror})") from None
    queries, lines, unknown = [], [], set()
    last = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        query, timestamp = parse_mooncake_line(line, where, block_size, unknown)
        if timestamp < last:
            raise InputError(f"{where}: timestamp {timestamp} is before the previous line's {last}")
        last = timestamp
        queries.append(query)
        lines.append(number)
    if not queries:
        raise InputError(f"{path}: empty workload: the file has no requests")
    warn_unknown_keys(path, unknown, ", ".join(FIELDS))
    return Workload(tuple(queries), str(path), tuple(lines))


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
