"""Flat cache traces as depth-1 workloads (docs/formats.md §Flat cache traces): every request of object x is
the one-token query (x), so a cache of B tokens is a paging cache of B objects.

Object ids are 64-bit; an unsigned id >= 2**63 becomes the signed token with the same bits (ids are
opaque: only equality matters).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.workload import QueryColumns, Workload

ORACLE_GENERAL = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
"""libCacheSim's oracleGeneral record: 24 bytes, little-endian, packed."""

#: records per read of a streamed oracleGeneral file (24 MiB)
CHUNK_RECORDS = 1 << 20


class OracleGeneralColumns(QueryColumns):
    """The one-token queries of an oracleGeneral file, read only when asked: :meth:`id_chunks` streams the
    object ids chunk by chunk (what the flat engines of :mod:`kvtheory.policies.compiled.flat_stream` run on,
    in O(distinct objects) memory), while ``tokens``, ``offsets`` and ``arrival`` read the whole file the
    first time a caller needs them as columns (every other engine). ``lengths`` is a read-only view of ones
    (every query is one token), so counting tokens reads nothing."""

    def __init__(self, path: Path, requests: int) -> None:
        self.path = path
        self.requests = requests
        self.output_len = None

    def __len__(self) -> int:
        return self.requests

    def id_chunks(self, records: int | None = None, *, reverse: bool = False) -> Iterator[np.ndarray]:
        """The object ids as int64, ``records`` (default :data:`CHUNK_RECORDS`) at a time, in order (the last
        chunk may be shorter); with ``reverse``, the same chunks from the last to the first (each in order)."""
        return (np.ascontiguousarray(chunk["id"]).view(np.int64) for chunk in self._chunks(records, reverse))

    def _chunks(self, records: int | None, reverse: bool = False) -> Iterator[np.ndarray]:
        records = records or CHUNK_RECORDS
        starts = range(0, self.requests, records)
        with open(self.path, "rb") as handle:
            for start in reversed(starts) if reverse else starts:
                handle.seek(start * ORACLE_GENERAL.itemsize)
                yield np.fromfile(handle, dtype=ORACLE_GENERAL, count=min(records, self.requests - start))

    def _column(self, field: str, dtype) -> np.ndarray:
        column = np.empty(self.requests, dtype=dtype)
        for start, chunk in zip(range(0, self.requests, CHUNK_RECORDS), self._chunks(CHUNK_RECORDS)):
            column[start : start + chunk.size] = chunk[field]
        return column

    @cached_property
    def tokens(self) -> np.ndarray:
        return self._column("id", np.uint64).view(np.int64)

    @cached_property
    def arrival(self) -> np.ndarray:
        return self._column("time", float)

    @cached_property
    def offsets(self) -> np.ndarray:
        return np.arange(self.requests + 1)

    @property
    def lengths(self) -> np.ndarray:
        return np.broadcast_to(np.int64(1), (self.requests,))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read trace file ({exc.strerror})") from None


def read_oracle_general(path: str | Path) -> Workload:
    """Read libCacheSim's oracleGeneral binary: request i is object ``id`` at ``time`` seconds (its arrival).

    The object size and next-access fields are not used: objects are unit-size pages, and the optimum
    computes its own next accesses.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise InputError(f"{path}: cannot read trace file ({exc.strerror})") from None
    if size % ORACLE_GENERAL.itemsize:
        raise InputError(
            f"{path}: {size} bytes is not a multiple of {ORACLE_GENERAL.itemsize} "
            "(oracleGeneral records are 24 bytes: uint32 time, uint64 id, uint32 size, int64 next access)"
        )
    if not size:
        raise InputError(f"{path}: empty workload: the file has no requests")
    return Workload(OracleGeneralColumns(path, size // ORACLE_GENERAL.itemsize), str(path))


def _object_id(field: str) -> int | None:
    try:
        value = int(field)
    except ValueError:
        return None
    if -(2**63) <= value < 2**63:
        return value
    if 2**63 <= value < 2**64:
        return value - 2**64
    return None


def read_csv_ids(path: str | Path) -> Workload:
    """Read CSV or plain text: one request per line, the object id (an integer) in the first comma-separated
    field; blank lines are skipped, and a first line whose first field is not an integer is a header."""
    path = Path(path)
    try:
        text = _read_bytes(path).decode()
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file (for a binary trace give --format oracle-general)") from None
    ids, lines = [], []
    first = True
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        field = line.split(",", 1)[0].strip()
        value = _object_id(field)
        if value is None:
            if first:
                first = False
                continue
            raise InputError(f"{path}:{number}: object id {field!r} is not a 64-bit integer")
        first = False
        ids.append(value)
        lines.append(number)
    if not ids:
        raise InputError(f"{path}: empty workload: the file has no requests")
    columns = QueryColumns(np.array(ids, dtype=np.int64), np.arange(len(ids) + 1))
    return Workload(columns, str(path), tuple(lines))
