"""Flat cache traces as depth-1 workloads (docs/formats.md §Flat cache traces): every request of object x is
the one-token query (x), so a cache of B tokens is a paging cache of B objects.

Object ids are 64-bit; an unsigned id >= 2**63 becomes the signed token with the same bits (ids are
opaque: only equality matters).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.workload import QueryColumns, Workload

ORACLE_GENERAL = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
"""libCacheSim's oracleGeneral record: 24 bytes, little-endian, packed."""


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
    data = _read_bytes(path)
    if len(data) % ORACLE_GENERAL.itemsize:
        raise InputError(
            f"{path}: {len(data)} bytes is not a multiple of {ORACLE_GENERAL.itemsize} "
            "(oracleGeneral records are 24 bytes: uint32 time, uint64 id, uint32 size, int64 next access)"
        )
    if not data:
        raise InputError(f"{path}: empty workload: the file has no requests")
    records = np.frombuffer(data, dtype=ORACLE_GENERAL)
    ids = records["id"].view(np.int64)
    columns = QueryColumns(ids.copy(), np.arange(len(records) + 1), arrival=records["time"].astype(float))
    return Workload(columns, str(path))


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
