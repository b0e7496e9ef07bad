"""Statistics of a trace (docs/formats.md §Trace statistics): its size, its blocks, their reuse, the
infinite-cache bound, and the prefix-closure check of its hash ids.

Notation: requests q_1..q_n in file order, q_j of L_j tokens; for a block trace of block size b, q_j is the
ids h_{j,1}..h_{j,m_j} with m_j = ceil(L_j / b), block i of q_j holding l_{j,i} = min(b, L_j - b(i - 1))
tokens (the reader's partial-block rule: a shorter last block with id h is the head of h's run of b tokens).

* ``tokens`` T = sum_j L_j; ``blocks`` M = sum_j m_j (block references); ``distinct_blocks`` D_b, the
  number of distinct ids; ``reuse`` = (M - D_b) / M, the fraction of block references whose id appeared
  before in the trace (at any position).
* ``distinct_tokens`` D, the token nodes of the prefix trie (docs/model.md §Queries and token nodes).
  ``ideal_hit_rate`` = (T - D) / T: the hit rate of an infinite cache at batch size 1, which misses each
  token node exactly once (its compulsory miss) and hits every other request of it; no policy and no
  optimum at any budget does better. Query j's hits there are max over r < j of min(c_{jr} b, L_j, L_r),
  c_{jr} the leading ids q_j and q_r share: the model shares prefixes only.
* ``id_hit_rate`` = (sum over block references (j, i) of min(l_{j,i}, l*(h_{j,i}, j))) / T, where
  l*(h, j) is the most tokens of id h held by any reference before q_j's (0 if none): the hit rate if a
  block were reused whenever its id was seen before, wherever it stood. It is >= ``ideal_hit_rate``, with
  equality on a prefix-closed trace.
* **Prefix closure.** Id h's predecessors P(h) are the ids just before it over all its references (the
  empty predecessor for a first block). The trace is prefix-closed when |P(h)| = 1 for every id; then, by
  induction along the ids, every reference of an id has the same whole prefix (an id names a block together
  with its prefix, which the Mooncake and Bailian hashes promise). ``open_ids`` counts the ids with
  |P(h)| > 1; ``open_requests`` counts the requests holding at least one of them: the requests that share a
  block with another request (or with themselves, further on) but not that block's predecessors. The model
  gives such a shared block no hit: it is reuse that prefix caching cannot see.

A workload of token queries (kvtheory JSON Lines, the flat formats) has no blocks: its block fields are
``None`` and ``id_hit_rate`` too; ``tokens``, ``distinct_tokens`` and ``ideal_hit_rate`` are as above.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kvtheory.model.query import BlockQuery
from kvtheory.model.workload import Workload


@dataclass(frozen=True)
class TraceStats:
    """The statistics of the module docstring, for one workload."""

    requests: int
    tokens: int
    distinct_tokens: int
    ideal_hit_rate: float
    block_size: int | None = None
    blocks: int | None = None
    distinct_blocks: int | None = None
    reuse: float | None = None
    id_hit_rate: float | None = None
    open_ids: int | None = None
    open_requests: int | None = None
    prefix_closed: bool | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PrefixClosure:
    """The prefix-closure check of a list of id sequences (module docstring): ``open_ids`` = #{h : |P(h)| > 1},
    ``open_requests`` = #{j : q_j holds such an id}, and those ids (sorted) and request indices (0-based)."""

    open_ids: int
    open_requests: int
    ids: tuple[int, ...]
    requests: tuple[int, ...]


_FIRST = object()  # the predecessor of a first block


def prefix_closure(id_lists) -> PrefixClosure:
    """The prefix-closure check of ``id_lists`` (the hash ids of each request, in order).

    >>> prefix_closure([[1, 2, 3], [1, 2], [4, 2]])  # 2 follows 1 and 4: requests 0, 1 and 2 are open
    PrefixClosure(open_ids=1, open_requests=3, ids=(2,), requests=(0, 1, 2))
    >>> prefix_closure([[1, 2, 3], [1, 2, 5], [6]]).open_requests
    0
    """
    predecessor: dict[int, object] = {}
    open_ids: set[int] = set()
    for ids in id_lists:
        before = _FIRST
        for h in ids:
            seen = predecessor.setdefault(h, before)
            if seen != before:  # an int, or _FIRST (equal to itself only)
                open_ids.add(h)
            before = h
    requests = tuple(j for j, ids in enumerate(id_lists) if not open_ids.isdisjoint(ids))
    return PrefixClosure(len(open_ids), len(requests), tuple(sorted(open_ids)), requests)


def _id_hits(queries, block_size: int) -> int:
    """sum over block references of min(tokens held, most tokens of that id held by an earlier request)."""
    held: dict[int, int] = {}
    hits = 0
    for q in queries:
        n = len(q.hash_ids)
        mine: dict[int, int] = {}
        for i, h in enumerate(q.hash_ids):
            tokens = block_size if i < n - 1 else q.length - block_size * (n - 1)
            hits += min(tokens, held.get(h, 0))
            mine[h] = max(mine.get(h, 0), tokens)
        for h, tokens in mine.items():
            if tokens > held.get(h, 0):
                held[h] = tokens
    return hits


def trace_stats(workload: Workload) -> TraceStats:
    """The statistics of ``workload`` (module docstring); block fields when every query is a
    :class:`BlockQuery` of one block size."""
    tokens = workload.total_tokens
    distinct_tokens = workload.trie.distinct_tokens
    base = {
        "requests": len(workload),
        "tokens": tokens,
        "distinct_tokens": distinct_tokens,
        "ideal_hit_rate": (tokens - distinct_tokens) / tokens,
    }
    sizes = {q.block_size if isinstance(q, BlockQuery) else None for q in workload}
    if len(sizes) != 1 or None in sizes:
        return TraceStats(**base)
    (block_size,) = sizes
    id_lists = [q.hash_ids for q in workload]
    blocks = sum(len(ids) for ids in id_lists)
    distinct = len({h for ids in id_lists for h in ids})
    closure = prefix_closure(id_lists)
    return TraceStats(
        **base,
        block_size=block_size,
        blocks=blocks,
        distinct_blocks=distinct,
        reuse=(blocks - distinct) / blocks,
        id_hit_rate=_id_hits(workload, block_size) / tokens,
        open_ids=closure.open_ids,
        open_requests=closure.open_requests,
        prefix_closed=closure.open_ids == 0,
    )
