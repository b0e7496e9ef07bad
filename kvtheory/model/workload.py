"""Workloads: ordered lists of queries, and their JSON Lines file format.

A workload file has one query per line: ``{"tokens": [int, ...]}`` with optional ``"arrival"`` (seconds,
float) and ``"output_len"`` (int). Reading validates every line (:data:`QUERY_RECORD`, through the
shared :mod:`kvtheory.model.records`) and names the line of the first error.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import orjson

from kvtheory.errors import InputError
from kvtheory.model.query import Query
from kvtheory.model.records import Int, IntArray, Number, RecordType
from kvtheory.model.trie import PrefixTrie

#: Largest accepted arrival time (seconds, about 31,700 years) and output length (tokens): bounds
#: that keep every time and cost sum finite and every length an int64.
MAX_ARRIVAL = 1e12
MAX_OUTPUT_LEN = 2**40


@dataclass(frozen=True)
class Workload(Sequence):
    """An ordered, non-empty sequence of queries q_1..q_n.

    >>> w = Workload.from_token_lists([[1, 2], [1, 3]])
    >>> len(w), w.total_tokens, w.max_length
    (2, 4, 2)
    """

    queries: tuple[Query, ...]
    source: str | None = None
    lines: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.queries:
            raise InputError("empty workload: it has no queries")

    def where(self, j: int) -> str:
        """Where query j comes from, for error messages: ``file:line`` or ``query j``."""
        if self.source is not None and self.lines is not None:
            return f"{self.source}:{self.lines[j]}"
        return f"query {j}"

    @cached_property
    def trie(self) -> PrefixTrie:
        """The compressed prefix trie of all queries (sequence j of the trie is query j)."""
        return PrefixTrie([q.tokens for q in self.queries])

    @classmethod
    def from_token_lists(cls, token_lists: Iterable[Sequence[int]]) -> Workload:
        return cls(tuple(Query.of(tokens) for tokens in token_lists))

    def __len__(self) -> int:
        return len(self.queries)

    def __getitem__(self, index):
        if isinstance(index, slice):
            lines = None if self.lines is None else self.lines[index]
            return Workload(self.queries[index], self.source, lines)
        return self.queries[index]

    def select(self, indices) -> Workload:
        """The queries at ``indices``, in that order (what one worker of a routing serves)."""
        lines = None if self.lines is None else [self.lines[j] for j in indices]
        return Workload(tuple(self.queries[j] for j in indices), self.source, lines)

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries)

    @cached_property
    def lengths(self) -> np.ndarray:
        """|q_j| for every query, an int64 array."""
        return np.fromiter((q.tokens.size for q in self.queries), dtype=np.int64, count=len(self.queries))

    @property
    def total_tokens(self) -> int:
        """T = sum of |q_j| over the workload."""
        return int(self.lengths.sum())

    @property
    def max_length(self) -> int:
        """L_max = max |q_j|."""
        return int(self.lengths.max())

    def token_lists(self) -> list[list[int]]:
        return [q.tokens.tolist() for q in self.queries]


#: A workload line (docs/formats.md §Workload files): token ids t1..tL, arrival a_j in seconds, output length o_j.
QUERY_RECORD = RecordType(
    "a query",
    {
        "tokens": IntArray("a non-empty list of integer token ids", element="token"),
        "arrival": Number("a non-negative number of seconds", lo=0.0, hi=MAX_ARRIVAL),
        "output_len": Int("a non-negative integer", lo=0, hi=MAX_OUTPUT_LEN),
    },
    required=frozenset({"tokens"}),
)


def parse_query_line(line: bytes | str, where: str) -> Query:
    """Parse and validate one JSON Lines record; ``where`` (e.g. ``"w.jsonl:7"``) prefixes errors."""
    record = QUERY_RECORD.parse(line, where)
    arrival = record.get("arrival")
    return Query(record["tokens"], None if arrival is None else float(arrival), record.get("output_len"))


# A file of plain records only, as write_workload writes them: {"tokens":[n,...]} with non-negative
# integers below 10**18 (no leading zeros), one per line, blank lines allowed.
_PLAIN_NUMBER = rb"(?:0|[1-9][0-9]{0,17})"
_PLAIN_FILE = re.compile(rb'(?:\{"tokens":\[' + _PLAIN_NUMBER + rb"(?:," + _PLAIN_NUMBER + rb")*\]\}|\n)*")


def _read_plain(data: bytes, path: Path) -> Workload | None:
    """Read a file of plain records in bulk (one numpy parse of all tokens), or None if it has any other
    line: that file takes the line-by-line checked path. Every plain record is valid, so this accepts
    exactly what the checked path accepts on such files, with the same queries."""
    if not _PLAIN_FILE.fullmatch(data):
        return None
    lines = data.split(b"\n")
    numbers = [number for number, line in enumerate(lines, start=1) if line]
    if not numbers:
        return None
    head = len(b'{"tokens":[')
    body = b",".join(lines[number - 1][head:-2] for number in numbers)
    tokens = np.fromstring(body, dtype=np.int64, sep=",")
    lengths = np.fromiter((lines[number - 1].count(b",") + 1 for number in numbers), dtype=np.int64)
    if int(lengths.sum()) != tokens.size:
        return None
    if np.all(lengths == lengths[0]):  # rows of one 2-D array: views without a Python loop over slices
        arrays = list(tokens.reshape(-1, int(lengths[0])))
    else:
        stops = np.cumsum(lengths).tolist()
        arrays = [tokens[start:stop] for start, stop in zip([0, *stops[:-1]], stops)]
    queries = tuple(map(Query, arrays))
    return Workload(queries, str(path), tuple(numbers))


def read_workload(path: str | Path) -> Workload:
    """Read and validate a JSON Lines workload; blank lines are skipped.

    Raises InputError naming ``path:line`` for the first bad line, or the file for an unreadable or
    empty one.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read workload file ({exc.strerror})") from None
    plain = _read_plain(data, path)
    if plain is not None:
        return plain
    queries, lines = [], []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            queries.append(parse_query_line(line, f"{path}:{number}"))
            lines.append(number)
    if not queries:
        raise InputError(f"{path}: empty workload: the file has no queries")
    return Workload(tuple(queries), str(path), tuple(lines))


def write_workload(workload: Workload, path: str | Path) -> None:
    """Write a workload as JSON Lines (the inverse of :func:`read_workload`).

    The file is written beside ``path`` under a temporary name and then renamed over it, so a reader (or
    a second writer of the same path, as two ``kvtheory check`` runs saving one counterexample) sees the
    old file or the new one, whole, never a mix or a torn line.
    """
    path = Path(path)
    handle = tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=f".{path.name}.", delete=False)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(handle.fileno(), 0o666 & ~umask)  # the mode open() would give, not mkstemp's 0600
        with handle:
            for query in workload:
                record: dict = {"tokens": query.tokens}
                if query.arrival is not None:
                    record["arrival"] = query.arrival
                if query.output_len is not None:
                    record["output_len"] = query.output_len
                handle.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY))
                handle.write(b"\n")
        os.replace(handle.name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise
