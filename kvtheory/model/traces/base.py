"""What a trace format is (docs/formats.md §Trace formats): a class registered by name in
:data:`kvtheory.model.traces.TRACE_FORMATS`, one module per format, that reads a file and says how sure it
is that a file is in its format.

Detection is a contest: every registered format scores a :class:`Sample` of the file (its name and first
64 KiB) with :meth:`TraceFormat.detect`, and the registry picks the highest score; 0 means "not mine".
The scores are ordered so that the name outranks the content and a more specific content outranks a more
general one:

* :data:`BY_NAME` (100): the file's name ends in the format's suffix (``.csv``, ``.bin``);
* content scores below it, the more specific the higher: a Bailian line (:data:`BY_FIELDS` + 10) is also
  a Mooncake line (:data:`BY_FIELDS`: it has ``hash_ids``), which is also a JSON object (:data:`BY_SHAPE`),
  and any text that is not JSON is CSV ids, any binary is oracleGeneral (:data:`FALLBACK`).

Equal scores go to the format registered first (built-in formats in module order, then plug-ins).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import orjson

from kvtheory.errors import InputError
from kvtheory.model.workload import Workload, warn_unknown_keys

#: tokens per hash id of a block trace when neither the command line nor the format says otherwise
DEFAULT_BLOCK_SIZE = 512
#: the bytes of a file that detection looks at
HEAD_BYTES = 1 << 16

BY_NAME = 100  # the name says it
BY_FIELDS = 30  # the first record has the format's distinguishing keys
BY_SHAPE = 20  # the first line is a JSON object
FALLBACK = 10  # text, or binary: what is left


@dataclass(frozen=True)
class Sample:
    """What detection sees of a file: its ``path`` and its first :data:`HEAD_BYTES` bytes (``head``)."""

    path: Path
    head: bytes

    @classmethod
    def of(cls, path: str | Path) -> Sample:
        path = Path(path)
        try:
            with open(path, "rb") as handle:
                head = handle.read(HEAD_BYTES)
        except OSError as exc:
            raise InputError(f"{path}: cannot read workload file ({exc.strerror})") from None
        return cls(path, head)

    @property
    def name(self) -> str:
        """The file's name in lower case."""
        return self.path.name.lower()

    @cached_property
    def first_line(self) -> bytes | None:
        """The first line when the file starts (after blanks) with a JSON object, else None; it may be cut at
        :data:`HEAD_BYTES`."""
        stripped = self.head.lstrip()
        return stripped.split(b"\n", 1)[0] if stripped.startswith(b"{") else None

    @cached_property
    def first_record(self) -> dict | None:
        """The first line parsed, when it is a whole JSON object; None otherwise (not JSON, or cut)."""
        if self.first_line is None:
            return None
        try:
            record = orjson.loads(self.first_line)
        except orjson.JSONDecodeError:
            return None
        return record if isinstance(record, dict) else {}

    def has_keys(self, *keys: str) -> bool:
        """Whether the first line is a JSON object with every one of ``keys``: looked up in the parsed record,
        or, when the line is cut at :data:`HEAD_BYTES` and cannot be parsed, found as ``"key"`` in its text."""
        if self.first_line is None:
            return False
        record = self.first_record
        if record is not None:
            return all(key in record for key in keys)
        return all(b'"' + key.encode() + b'"' in self.first_line for key in keys)

    @cached_property
    def is_text(self) -> bool:
        """UTF-8 without NUL bytes (a multi-byte character cut by the :data:`HEAD_BYTES` limit in its last 4
        bytes does not count against it)."""
        try:
            self.head.decode()
        except UnicodeDecodeError as exc:
            if exc.start < len(self.head) - 4:
                return False
        return b"\x00" not in self.head


class TraceFormat:
    """One file format. A subclass sets ``name`` (the ``--format`` value), ``summary`` (one line for help
    and docs), ``block_size`` (the default tokens per hash id where the format has blocks; ``None`` for a
    format without blocks), and implements :meth:`read` and :meth:`detect`; decorated with
    :func:`kvtheory.model.traces.register_format`, it becomes a ``--format`` choice and takes part in
    detection."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    block_size: ClassVar[int | None] = None

    @classmethod
    def read(cls, path: Path, block_size: int) -> Workload:
        """The workload of ``path``; InputError naming ``path:line`` of the first bad line."""
        raise NotImplementedError

    @classmethod
    def detect(cls, sample: Sample) -> int:
        """How sure this format is that ``sample`` is in it: 0 (not), :data:`FALLBACK`, :data:`BY_SHAPE`,
        :data:`BY_FIELDS` (and above, for a more specific record) or :data:`BY_NAME`."""
        return 0


def read_block_trace(
    path: str | Path,
    block_size: int,
    parse_line: Callable,
    fields: Sequence[str],
    show: Callable[[float], str] = str,
    bulk: Callable[[bytes, Path, int], Workload | None] | None = None,
) -> Workload:
    """A JSON Lines block trace (Mooncake's, Bailian's) read line by line: ``parse_line(line, where, block_size,
    unknown)`` gives each non-blank line's (query, timestamp) and adds the keys it does not know to ``unknown``;
    timestamps must never decrease (``show`` writes one in a message). InputError naming ``path:line`` for
    the first bad line, or the file for an unreadable or empty one; unknown keys (other than ``fields``) are
    ignored with one warning line naming them.

    ``bulk(data, path, block_size)``, when given, reads the whole file's bytes at once first: it returns the
    workload the line-by-line reading would give, or None (the file is not in the form it reads, or has any
    error), and then the lines are read one by one, so that every message is theirs."""
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise InputError(f"--hash-block-size must be a positive integer, got {block_size!r}")
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read trace file ({exc.strerror})") from None
    if bulk is not None:
        workload = bulk(data, path, block_size)
        if workload is not None:
            return workload
    queries, lines, unknown = [], [], set()
    last = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        query, timestamp = parse_line(line, where, block_size, unknown)
        if timestamp < last:
            raise InputError(f"{where}: timestamp {show(timestamp)} is before the previous line's {show(last)}")
        last = timestamp
        queries.append(query)
        lines.append(number)
    if not queries:
        raise InputError(f"{path}: empty workload: the file has no requests")
    warn_unknown_keys(path, unknown, ", ".join(fields))
    return Workload(tuple(queries), str(path), tuple(lines))
