"""Alibaba Bailian traces (docs/formats.md §Bailian traces): the JSON Lines of qwen-bailian-usagetraces-anon,
block-hashed requests with their conversation links, read into :class:`BailianQuery` objects without
expanding them to tokens.

A line is ``{"chat_id": c, "parent_chat_id": p, "timestamp": s, "input_length": L, "output_length": o,
"type": "text", "turn": t, "hash_ids": [h_1, ..., h_n]}`` with block_size * (n - 1) < L <= block_size * n
(block_size 16 unless given): query j is blocks h_1..h_n, the last holding L - block_size * (n - 1)
tokens, exactly as a Mooncake request (the partial-block rule of docs/formats.md §Mooncake traces);
a_j = s seconds and o_j = o.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kvtheory.errors import InputError
from kvtheory.model.query import BlockQuery
from kvtheory.model.records import INT64_MAX, MAX_TOKENS, Int, IntArray, Number, RecordType, Text
from kvtheory.model.traces import register_format
from kvtheory.model.traces.base import BY_FIELDS, Sample, TraceFormat, read_block_trace
from kvtheory.model.workload import MAX_ARRIVAL, MAX_OUTPUT_LEN, Workload

FIELDS = ("chat_id", "parent_chat_id", "timestamp", "input_length", "output_length", "type", "turn", "hash_ids")
#: tokens per hash id in every file of the release (``*_blksz_16.jsonl``)
BAILIAN_BLOCK_SIZE = 16

#: A Bailian line (docs/formats.md §Bailian traces); other keys are ignored with one warning per file.
BAILIAN_RECORD = RecordType(
    "a Bailian request",
    {
        "chat_id": Int("a non-negative integer", lo=0, hi=INT64_MAX),
        "parent_chat_id": Int("a non-negative integer, or -1 for a root request", lo=-1, hi=INT64_MAX),
        "timestamp": Number("a non-negative number of seconds", lo=0.0, hi=MAX_ARRIVAL),
        "input_length": Int("a positive integer", lo=1, hi=MAX_TOKENS),
        "output_length": Int("a non-negative integer", lo=0, hi=MAX_OUTPUT_LEN),
        "type": Text("a non-empty string (text, search, image, file)"),
        "turn": Int("a positive integer", lo=1, hi=INT64_MAX),
        "hash_ids": IntArray("a non-empty list of integer block ids", element="hash id"),
    },
    required=frozenset(FIELDS),
    extra=True,
)


@dataclass(frozen=True, eq=False)
class BailianQuery(BlockQuery):
    """A :class:`BlockQuery` that keeps its Bailian request's conversation fields: ``chat_id`` (the request),
    ``parent_chat_id`` (the request it follows, -1 for a root), ``turn`` (1, 2, ...) and ``type`` (``text``,
    ``search``, ``image``, ``file``).

    Why fields on the query and not a side table of the workload: arrival and output length already live on
    the query (:class:`~kvtheory.model.query.Query`, :class:`BlockQuery`), and every operation that takes a
    workload apart (slicing, ``Workload.select`` for one worker of a routing, the cluster simulation) moves
    query objects, so fields on them follow each request wherever it goes, with nothing to keep aligned;
    a side table would have to be sliced in step by each of those. Every consumer that knows block queries
    (the trie, the policies, FIF) sees a plain :class:`BlockQuery`: the fields change no hit.

    Two Bailian queries are equal when their blocks, lengths, arrival, output length and all four fields are
    equal; a Bailian query never equals a plain :class:`BlockQuery` (both ways round: Python asks the
    subclass first).

    >>> q = BailianQuery((7, 8), 20, 16, 1.5, 3, chat_id=2, parent_chat_id=1, turn=2, type="text")
    >>> q.length, q.hash_ids, q.parent_chat_id, q == BlockQuery((7, 8), 20, 16, 1.5, 3)
    (20, (7, 8), 1, False)
    """

    chat_id: int = field(kw_only=True)
    parent_chat_id: int = field(kw_only=True)
    turn: int = field(kw_only=True)
    type: str = field(kw_only=True)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BailianQuery)
            and BlockQuery.__eq__(self, other)
            and (self.chat_id, self.parent_chat_id, self.turn, self.type)
            == (other.chat_id, other.parent_chat_id, other.turn, other.type)
        )

    __hash__ = BlockQuery.__hash__


def parse_bailian_line(line: bytes, where: str, block_size: int, unknown: set[str]) -> tuple[BailianQuery, float]:
    """One record as a query and its timestamp (s); InputError prefixed by ``where`` if it is malformed."""
    record = BAILIAN_RECORD.parse(line, where)
    unknown.update(key for key in record if key not in BAILIAN_RECORD.fields)
    length, ids = record["input_length"], record["hash_ids"]
    n = len(ids)
    if not block_size * (n - 1) < length <= block_size * n:
        raise InputError(
            f"{where}: input_length {length} does not fit {n} block(s) of {block_size} tokens "
            f"(it must lie in ({block_size * (n - 1)}, {block_size * n}])"
        )
    timestamp = float(record["timestamp"])
    query = BailianQuery(
        tuple(ids.tolist()),
        length,
        block_size,
        timestamp,
        record["output_length"],
        chat_id=record["chat_id"],
        parent_chat_id=record["parent_chat_id"],
        turn=record["turn"],
        type=record["type"],
    )
    return query, timestamp


def read_bailian(path: str | Path, block_size: int = BAILIAN_BLOCK_SIZE) -> Workload:
    """Read a Bailian trace, block by block (never expanded to tokens); timestamps must be non-negative and
    non-decreasing.

    Raises InputError naming ``path:line`` for the first bad line; unknown keys are ignored with one
    warning line naming them.
    """
    return read_block_trace(path, block_size, parse_bailian_line, FIELDS, show="{:g}".format)


@register_format
class BailianFormat(TraceFormat):
    name = "bailian"
    summary = "Alibaba Bailian JSON Lines: chat_id, parent_chat_id, timestamp s, turn, type, 16-token hash_ids"
    block_size = BAILIAN_BLOCK_SIZE

    @classmethod
    def read(cls, path: Path, block_size: int) -> Workload:
        return read_bailian(path, block_size)

    @classmethod
    def detect(cls, sample: Sample) -> int:
        """A first line that is a JSON object with ``hash_ids`` and ``chat_id`` (a Mooncake line with the
        conversation fields: more specific than Mooncake's ``hash_ids`` alone)."""
        return BY_FIELDS + 10 if sample.has_keys("hash_ids", "chat_id") else 0
