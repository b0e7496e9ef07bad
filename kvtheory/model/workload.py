"""Workloads: ordered lists of queries, and their JSON Lines file format.

A workload file has one query per line: ``{"tokens": [int, ...]}`` with optional ``"arrival"`` (seconds,
float) and ``"output_len"`` (int). Reading validates every line (:data:`QUERY_RECORD`, through the
shared :mod:`kvtheory.model.records`) and names the line of the first error.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import orjson

from kvtheory.errors import InputError
from kvtheory.model.query import BlockQuery, Query
from kvtheory.model.records import Int, IntArray, Number, RecordType
from kvtheory.model.trie import PrefixTrie

#: Largest accepted arrival time (seconds, about 31,700 years) and output length (tokens): bounds
#: that keep every time and cost sum finite and every length an int64.
MAX_ARRIVAL = 1e12
MAX_OUTPUT_LEN = 2**40


class _OffsetColumns(Sequence):
    """Rows held as columns, row j's values at ``offsets[j]:offsets[j + 1]`` of flat arrays: a step-1 slice is
    columns again (:meth:`_rows`), an index one row (:meth:`_row`), and two sequences are equal row for row."""

    offsets: np.ndarray

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return tuple(self[j] for j in range(start, stop, step))
            stop = max(start, stop)
            return self._rows(start, stop, int(self.offsets[start]), int(self.offsets[stop]))
        return self._row(range(len(self))[index])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))

    @abstractmethod
    def _rows(self, start: int, stop: int, first: int, last: int):
        """Rows start..stop - 1, whose flat values are first..last - 1, as columns of the same kind."""

    @abstractmethod
    def _row(self, j: int):
        """Row j as a query object."""


class QueryColumns(_OffsetColumns):
    """Queries held as columns: query j is ``tokens[offsets[j]:offsets[j + 1]]`` of one int64 array, with
    ``arrival[j]`` and ``output_len[j]`` when those columns are given. A :class:`Query` is made only when
    one is asked for, so a million-request trace costs a few arrays, not a million objects.

    >>> columns = QueryColumns(np.array([5, 6, 5]), np.array([0, 2, 3]))
    >>> len(columns), columns[1].tokens.tolist()
    (2, [5])
    """

    def __init__(
        self,
        tokens: np.ndarray,
        offsets: np.ndarray,
        arrival: np.ndarray | None = None,
        output_len: np.ndarray | None = None,
    ) -> None:
        self.tokens = np.asarray(tokens, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.arrival = arrival
        self.output_len = output_len

    def _rows(self, start: int, stop: int, first: int, last: int) -> QueryColumns:
        return QueryColumns(
            self.tokens[first:last],
            self.offsets[start : stop + 1] - first,
            None if self.arrival is None else self.arrival[start:stop],
            None if self.output_len is None else self.output_len[start:stop],
        )

    def _row(self, j: int) -> Query:
        arrival = None if self.arrival is None else float(self.arrival[j])
        output_len = None if self.output_len is None else int(self.output_len[j])
        return Query(self.tokens[self.offsets[j] : self.offsets[j + 1]], arrival, output_len)

    def __hash__(self) -> int:
        return hash((self.tokens.tobytes(), self.offsets.tobytes()))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


class BlockColumns(_OffsetColumns):
    """Block queries held as columns (what the Mooncake reader makes of a file): query j has the hash ids
    ``ids[offsets[j]:offsets[j + 1]]`` of ``block_size``-token blocks, ``lengths[j]`` tokens, ``arrival[j]``
    seconds and ``output_len[j]`` output tokens. A :class:`BlockQuery` is made only when one is asked for, and the
    trie and the block-level view are built from the columns (:meth:`trie`,
    :func:`kvtheory.model.blocks.block_workload`).

    >>> columns = BlockColumns(np.array([7, 8, 7]), np.array([0, 2, 3]), np.array([5, 3]), 4, [0.0, 1.5], [2, 0])
    >>> len(columns), columns[1]
    (2, BlockQuery(hash_ids=(7,), length=3, block_size=4, arrival=1.5, output_len=0))
    """

    def __init__(self, ids, offsets, lengths, block_size: int, arrival: Sequence[float], output_len) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.block_size = block_size
        self.arrival = arrival
        self.output_len = output_len

    def _rows(self, start: int, stop: int, first: int, last: int) -> BlockColumns:
        return BlockColumns(
            self.ids[first:last],
            self.offsets[start : stop + 1] - first,
            self.lengths[start:stop],
            self.block_size,
            self.arrival[start:stop],
            self.output_len[start:stop],
        )

    def _row(self, j: int) -> BlockQuery:
        ids = tuple(self.ids[self.offsets[j] : self.offsets[j + 1]].tolist())
        return BlockQuery(ids, int(self.lengths[j]), self.block_size, float(self.arrival[j]), int(self.output_len[j]))

    def __hash__(self) -> int:
        return hash((self.ids.tobytes(), self.offsets.tobytes(), self.lengths.tobytes(), self.block_size))

    def trie(self) -> PrefixTrie:
        """The trie of the queries (:meth:`PrefixTrie.from_block_columns`), the one-token ones straight from their
        ids."""
        if bool((self.lengths == 1).all()):  # token h_1 * block_size of the first block: ordered as the ids
            return PrefixTrie.of_one_token_queries(self.ids[self.offsets[:-1]])
        return PrefixTrie.from_block_columns(self.ids, self.offsets, self.lengths, self.block_size)

    def leading_ids(self, counts: np.ndarray) -> np.ndarray:
        """The first ``counts[j]`` ids of every query j, one after the other (``counts[j]`` at most its ids)."""
        counts = np.asarray(counts, dtype=np.int64)
        heads = np.cumsum(counts) - counts  # where query j's run starts in the result
        return self.ids[np.repeat(self.offsets[:-1] - heads, counts) + np.arange(int(counts.sum()), dtype=np.int64)]


@dataclass(frozen=True)
class Workload(Sequence):
    """An ordered, non-empty sequence of queries q_1..q_n.

    >>> w = Workload.from_token_lists([[1, 2], [1, 3]])
    >>> len(w), w.total_tokens, w.max_length
    (2, 4, 2)
    """

    queries: tuple[Query, ...] | QueryColumns | BlockColumns
    source: str | None = None
    lines: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.queries:
            raise InputError("empty workload: it has no queries")

    def __repr__(self) -> str:
        """A short summary (counts, tokens, where from), never every query: printing a workload of a million
        queries must not dump them.

        >>> Workload.from_token_lists([[1, 2], [1, 3]])
        Workload(2 queries, 4 tokens, L_max = 2)
        """
        source = "" if self.source is None else f", from {self.source}"
        queries = f"{len(self)} {'query' if len(self) == 1 else 'queries'}"
        return f"Workload({queries}, {self.total_tokens} tokens, L_max = {self.max_length}{source})"

    def where(self, j: int) -> str:
        """Where query j comes from, for error messages: ``file:line`` or ``query j``."""
        if self.source is not None and self.lines is not None:
            return f"{self.source}:{self.lines[j]}"
        return f"query {j}"

    @cached_property
    def trie(self) -> PrefixTrie:
        """The compressed prefix trie of all queries (sequence j of the trie is query j); built from the blocks,
        never the tokens, when every query is a :class:`BlockQuery` of one block size, and straight from the
        token column when the queries are :class:`QueryColumns` of one token each."""
        if isinstance(self.queries, QueryColumns):
            columns = self.queries
            if columns.tokens.size == len(columns):
                return PrefixTrie.of_one_token_queries(columns.tokens)
            return PrefixTrie(np.split(columns.tokens, columns.offsets[1:-1]))
        if isinstance(self.queries, BlockColumns):
            return self.queries.trie()
        sizes = {q.block_size if isinstance(q, BlockQuery) else None for q in self.queries}
        if len(sizes) == 1 and None not in sizes:
            block_size = sizes.pop()
            return PrefixTrie.from_blocks(
                [q.hash_ids for q in self.queries], [q.length for q in self.queries], block_size
            )
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
        if isinstance(self.queries, (QueryColumns, BlockColumns)):
            return self.queries.lengths
        return np.fromiter((q.length for q in self.queries), dtype=np.int64, count=len(self.queries))

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
    extra=True,  # other keys are ignored, with one warning per file (read_workload)
)


def parse_query_line(line: bytes | str, where: str, unknown: set[str] | None = None) -> Query:
    """Parse and validate one JSON Lines record; ``where`` (e.g. ``"w.jsonl:7"``) prefixes errors.

    Keys other than tokens, arrival and output_len are ignored and added to ``unknown``."""
    record = QUERY_RECORD.parse(line, where)
    if unknown is not None and len(record) > 1:
        unknown.update(key for key in record if key not in QUERY_RECORD.fields)
    arrival = record.get("arrival")
    return Query(record["tokens"], None if arrival is None else float(arrival), record.get("output_len"))


# A file of plain records only, as write_workload writes them: {"tokens":[n,...]} with non-negative
# integers below 10**18 (no leading zeros), one per line, blank lines allowed.
_PLAIN_NUMBER = rb"(?:0|[1-9][0-9]{0,17})"
_PLAIN_FILE = re.compile(rb'(?:\{"tokens":\[' + _PLAIN_NUMBER + rb"(?:," + _PLAIN_NUMBER + rb")*\]\}|\n)*")


def _all_plain(data: bytes, chunk: int = 1 << 16) -> bool:
    """Whether ``data`` is plain records and blank lines only, checked in pieces of about ``chunk`` bytes cut
    at line ends (one match over the whole file would grow the regex engine's stack with every line). A
    piece ends after the first line end at or past the next multiple of ``chunk`` that the previous piece
    did not reach; there are at most len(data) / chunk + 1 of them."""
    start = 0
    for mark in range(chunk, len(data) + chunk, chunk):
        if mark < start:
            continue  # a long line carried the previous piece past this mark
        stop = data.find(b"\n", mark)
        stop = len(data) if stop < 0 else stop + 1
        if not _PLAIN_FILE.fullmatch(data, start, stop):
            return False
        start = stop
    return True


def _read_plain(data: bytes, path: Path) -> Workload | None:
    """Read a file of plain records in bulk (one numpy parse of all tokens), or None if it has any other
    line: that file takes the line-by-line checked path. Every plain record is valid, so this accepts
    exactly what the checked path accepts on such files, with the same queries."""
    if not _all_plain(data):
        return None
    cleaned = data.translate(None, b'{}"tokens:[]')  # digits, commas and newlines are left
    raw = np.frombuffer(cleaned, dtype=np.uint8)
    newlines = np.flatnonzero(raw == ord("\n"))
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [raw.size]))
    filled = ends > starts
    if not filled.any():
        return None
    commas_per_line = np.bincount(np.searchsorted(newlines, np.flatnonzero(raw == ord(","))), minlength=starts.size)
    lengths = commas_per_line[filled] + 1
    tokens = np.fromstring(cleaned.replace(b",", b" "), dtype=np.int64, sep=" ")
    if int(lengths.sum()) != tokens.size:
        return None
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    numbers = (np.flatnonzero(filled) + 1).tolist()
    return Workload(QueryColumns(tokens, offsets), str(path), tuple(numbers))


def read_workload(path: str | Path) -> Workload:
    """Read and validate a JSON Lines workload; blank lines are skipped.

    Raises InputError naming ``path:line`` for the first bad line, or the file for an unreadable or
    empty one. Unknown keys are ignored, with one warning line on stderr naming them all.
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
    unknown: set[str] = set()
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            queries.append(parse_query_line(line, f"{path}:{number}", unknown))
            lines.append(number)
    if not queries:
        raise InputError(f"{path}: empty workload: the file has no queries")
    warn_unknown_keys(path, unknown, "tokens, arrival, output_len")
    return Workload(tuple(queries), str(path), tuple(lines))


def warn_unknown_keys(path, unknown: set[str], known: str) -> None:
    """One line on stderr naming the keys a reader ignored (so that a typo stays visible)."""
    if unknown:
        names = ", ".join(repr(key) for key in sorted(unknown))
        print(f"kvtheory: warning: {path}: ignored unknown key(s) {names}; known: {known}", file=sys.stderr)


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
