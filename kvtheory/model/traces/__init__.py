"""Reading workloads in every supported format (docs/formats.md §Trace formats): kvtheory JSON Lines, Mooncake
traces, libCacheSim's oracleGeneral binary and CSV/plain text object ids, chosen by ``format`` or
detected from the file."""

from __future__ import annotations

from pathlib import Path

import orjson

from kvtheory.errors import InputError
from kvtheory.model import workload as jsonl
from kvtheory.model.traces.flat import read_csv_ids, read_oracle_general
from kvtheory.model.traces.mooncake import read_mooncake, write_mooncake
from kvtheory.model.workload import Workload

FORMATS = ("auto", "kvtheory", "mooncake", "oracle-general", "csv")
DEFAULT_BLOCK_SIZE = 512


def detect_format(path: str | Path) -> str:
    """The format of a file: by its name (``.oracleGeneral``/``.bin``, ``.csv``/``.txt``), else by its content
    (a JSON object per line: ``mooncake`` when the first has ``hash_ids``, else ``kvtheory``; other text:
    ``csv``; anything else: ``oracle-general``)."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".oraclegeneral", ".bin")):
        return "oracle-general"
    if name.endswith((".csv", ".txt")):
        return "csv"
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError as exc:
        raise InputError(f"{path}: cannot read workload file ({exc.strerror})") from None
    stripped = head.lstrip()
    if stripped.startswith(b"{"):
        first = stripped.split(b"\n", 1)[0]
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            return "mooncake" if b'"hash_ids"' in first else "kvtheory"
        return "mooncake" if isinstance(record, dict) and "hash_ids" in record else "kvtheory"
    try:
        head.decode()
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not merely a multi-byte character cut at the end of the head
            return "oracle-general"
    return "oracle-general" if b"\x00" in head else "csv"


def read_workload(path: str | Path, format: str = "kvtheory", block_size: int = DEFAULT_BLOCK_SIZE) -> Workload:
    """Read a workload file in ``format`` (one of :data:`FORMATS`; ``auto`` detects it, as the command line
    does by default).

    ``block_size`` is the tokens per hash id of a Mooncake trace. Every reader raises InputError naming
    the file and, for text formats, the line of the first error.
    """
    if format not in FORMATS:
        raise InputError(f"unknown format {format!r}; known formats: {', '.join(FORMATS)}")
    if format == "auto":
        format = detect_format(path)
    if format == "mooncake":
        return read_mooncake(path, block_size)
    if format == "oracle-general":
        return read_oracle_general(path)
    if format == "csv":
        return read_csv_ids(path)
    return jsonl.read_workload(path)


__all__ = ["DEFAULT_BLOCK_SIZE", "FORMATS", "detect_format", "read_workload", "write_mooncake"]
