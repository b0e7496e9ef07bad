"""Workloads: ordered lists of queries, and their JSON Lines file format.

A workload file has one query per line: ``{"tokens": [int, ...]}`` with optional ``"arrival"`` (seconds,
float) and ``"output_len"`` (int). Reading validates every line and names the line of the first error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import orjson

from kvtheory.errors import InputError
from kvtheory.model.query import BlockQuery, Query
from kvtheory.model.trie import PrefixTrie

_KNOWN_KEYS = frozenset({"tokens", "arrival", "output_len"})


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
        """The compressed prefix trie of all queries (sequence j of the trie is query j); built from the blocks,
        never the tokens, when every query is a :class:`BlockQuery` of one block size."""
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

    @property
    def total_tokens(self) -> int:
        """T = sum of |q_j| over the workload."""
        return sum(q.length for q in self.queries)

    @property
    def max_length(self) -> int:
        """L_max = max |q_j|."""
        return max(q.length for q in self.queries)

    def token_lists(self) -> list[list[int]]:
        return [q.tokens.tolist() for q in self.queries]


_INT64_LIMITS = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)


def _fast_tokens(line: bytes) -> tuple[np.ndarray, dict] | None:
    """Parse a line whose token list holds only non-negative decimal integers, numpy-fast.

    The token list is cut out and parsed by numpy; the rest of the line (with ``"tokens": []``) goes
    through orjson. Anything unusual returns None and the line takes the fully checked path, so this
    only ever accepts lines that the checked path accepts with the same result.
    """
    key = line.find(b'"tokens"')
    start = line.find(b"[", key)
    stop = line.find(b"]", start)
    if key < 0 or start < 0 or stop < 0:
        return None
    text = line[start + 1 : stop]
    if text.translate(None, b"0123456789, \t").strip() or not text.strip():
        return None
    try:
        tokens = np.fromstring(text, dtype=np.int64, sep=",")
        rest = orjson.loads(line[: start + 1] + line[stop:])
    except (ValueError, orjson.JSONDecodeError):
        return None
    if tokens.size != text.count(b",") + 1 or not isinstance(rest, dict) or rest.get("tokens") != []:
        return None
    if tokens.size and tokens.max() == _INT64_LIMITS[1]:
        return None
    return tokens, rest


def parse_query_line(line: bytes | str, where: str, unknown: set[str] | None = None) -> Query:
    """Parse and validate one JSON Lines record; ``where`` (e.g. ``"w.jsonl:7"``) prefixes errors.

    Keys other than tokens, arrival and output_len are ignored and added to ``unknown``."""
    fast = _fast_tokens(line) if isinstance(line, bytes) else None
    if fast is not None:
        tokens, rest = fast
        return Query(tokens, *_optional_fields(rest, where, unknown))
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.args[0].split(':')[0]})") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object with a 'tokens' list")
    tokens = record.get("tokens")
    if not isinstance(tokens, list):
        raise InputError(f"{where}: 'tokens' must be a list of integers")
    if not tokens:
        raise InputError(f"{where}: 'tokens' is empty; a query needs at least one token")
    try:
        array = np.array(tokens)
    except (OverflowError, ValueError):
        array = None
    # numpy folds JSON true/false into an int64 array, so booleans are looked for separately.
    if array is None or array.dtype != np.int64 or _mentions_boolean(line):
        for token in tokens:
            if type(token) is float and abs(token) >= 2.0**63:
                raise InputError(f"{where}: token {token!r} does not fit in a signed 64-bit integer")
            if type(token) is not int:
                raise InputError(f"{where}: token {token!r} is not an integer")
        if array is None or array.dtype != np.int64:
            raise InputError(f"{where}: a token id does not fit in a signed 64-bit integer")
    return Query(array, *_optional_fields(record, where, unknown))


def _optional_fields(record: dict, where: str, unknown: set[str] | None) -> tuple[float | None, int | None]:
    """Validate the optional ``arrival`` and ``output_len`` of a record; collect its unknown keys."""
    if unknown is not None and len(record) > 1:
        unknown.update(set(record) - _KNOWN_KEYS)
    arrival = record.get("arrival")
    if arrival is not None and (type(arrival) not in (int, float) or not np.isfinite(arrival) or arrival < 0):
        raise InputError(f"{where}: 'arrival' must be a non-negative number of seconds, got {arrival!r}")
    output_len = record.get("output_len")
    if output_len is not None and (type(output_len) is not int or output_len < 0):
        raise InputError(f"{where}: 'output_len' must be a non-negative integer, got {output_len!r}")
    return (None if arrival is None else float(arrival)), output_len


def _mentions_boolean(line: bytes | str) -> bool:
    raw = line.encode() if isinstance(line, str) else line
    return b"true" in raw or b"false" in raw


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
    """Write a workload as JSON Lines (the inverse of :func:`read_workload`)."""
    with open(path, "wb") as handle:
        for query in workload:
            record: dict = {"tokens": query.tokens}
            if query.arrival is not None:
                record["arrival"] = query.arrival
            if query.output_len is not None:
                record["output_len"] = query.output_len
            handle.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY))
            handle.write(b"\n")
