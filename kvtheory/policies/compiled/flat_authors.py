"""rlt-authors streamed over a flat trace at batch size 1, in O(distinct objects) memory, draw for draw as its
per-edge class (:class:`~kvtheory.policies.rlt_authors.AuthorsRLT`) and its compiled core on the whole trie.

On a flat trie every radix node is one token, a leaf under the root, and at batch size 1 a query v's step
reduces to: the hit is whether v is cached; a miss on a full cache calls ``evict(1)`` with nothing locked
(v is not cached): rule R1 (1 + marked_count >= B clears every mark), rule R2 (no candidate left clears them
again), then one uniform draw over the candidates, the cached unmarked leaves, in ``collect_leaves``' order;
v is then inserted, and ``insert`` marks v whether it hit or not (rule P1: when that brings marked_count to B,
every mark is cleared and v alone is marked again, marked_count = 1). A marked node is never evicted (R1 and R2
clear the marks first), so the marked nodes are cached ones and marked_count is their number.

``collect_leaves`` lists the root's children from the last inserted to the first: descending order of the
insertion step (a node evicted and inserted again is the newest). Each insertion takes the next *stamp*; a
Fenwick tree over the stamps weighs 1 for a candidate, so the draw's ``index``-th candidate in that order is
the (m - index)-th in ascending order, found in O(log B). When the stamps run out, the cached nodes are
renumbered in order (the tree rebuilt in O(B)) into a tree twice as long as the cache: O(1) amortized per
insertion and O(min(B, distinct objects)) memory. Hit for hit and draw for draw (one ``integers(m)`` per
eviction, none when m = 1, as numpy): tests/policies/test_flat_authors.py.
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit
from kvtheory.policies.compiled.edge_cache import bounded_draw

# indices into ``counters``: cached tokens, marked_count, stamps used, candidates
_SIZE, _MARKED_COUNT, _STAMPS, _CANDIDATES = range(4)
# rows of the per-node state: the node's stamp, signed (0: not cached; negative: marked), and the list of marked
# nodes (one load tells a query whether it hits and whether it is marked)
_STAMP, _LIST = range(2)
_LEVELS = 64  # a Fenwick walk doubles its step (or its index's lowest bit) per level: at most 63 below 2**63
_FENWICK_LIMIT = "internal error: kernel _add of the streamed rlt-authors core exceeded its step limit of 64 levels"
_NOTHING_TO_EVICT = "nothing left to evict: the batch footprint exceeds the budget"
_MIN_STAMPS = 1 << 10


@njit(cache=True)
def _add(fenwick, s, delta):
    """Add ``delta`` to the weight of stamp s (1-based)."""
    for _ in range(_LEVELS):
        if s >= fenwick.size:
            return
        fenwick[s] += delta
        s += s & -s
    raise RuntimeError(_FENWICK_LIMIT)


@njit(cache=True)
def _kth(fenwick, k):
    """The least stamp whose prefix of weights reaches k >= 1 (k at most the total weight)."""
    step, levels = 1, 0
    for _ in range(_LEVELS):  # the largest power of two below the tree's length
        if 2 * step >= fenwick.size:
            break
        step, levels = 2 * step, levels + 1
    s = 0
    for _ in range(levels + 1):
        if s + step < fenwick.size and fenwick[s + step] < k:
            s += step
            k -= fenwick[s]
        step //= 2
    return s + 1


@njit(cache=True)
def _build(fenwick, weights):
    """The tree of ``weights`` (index 0 unused), in place in O(length): each node passes its sum to its parent."""
    fenwick[:] = weights
    for i in range(1, fenwick.size):
        up = i + (i & -i)
        if up < fenwick.size:
            fenwick[up] += fenwick[i]


@njit(cache=True)
def _renumber(rows, counters, owner):
    """The cached nodes' stamps renumbered 1, 2, ... in order, in a tree of twice the cache's length (at least
    :data:`_MIN_STAMPS`): return it and its owner array (stamp -> node, 0 for none)."""
    length = max(2 * counters[_SIZE], _MIN_STAMPS) + 1
    fenwick = np.empty(length, dtype=np.int64)
    fresh = np.zeros(length, dtype=np.int64)
    weights = np.zeros(length, dtype=np.int64)
    s = 0
    for old in range(1, counters[_STAMPS] + 1):
        v = owner[old]
        if v != 0:
            s += 1
            fresh[s] = v
            weights[s] = 1 if rows[_STAMP, v] > 0 else 0
            rows[_STAMP, v] = s if rows[_STAMP, v] > 0 else -s
    _build(fenwick, weights)
    counters[_STAMPS] = s
    return fenwick, fresh


@njit(cache=True)
def _clear_marks(rows, counters, fenwick, owner):
    """A new phase: every node of the marked list (cached) unmarked, a candidate again. Many at once (more than
    an eighth of the tree's length, as when marked_count reached B): the tree is rebuilt in one pass instead."""
    marked = counters[_MARKED_COUNT]
    rebuild = 8 * marked > fenwick.size
    for i in range(marked):
        u = rows[_LIST, i]
        rows[_STAMP, u] = -rows[_STAMP, u]
        if not rebuild:
            _add(fenwick, rows[_STAMP, u], 1)
    if rebuild:
        weights = np.zeros(fenwick.size, dtype=np.int64)
        for s in range(1, counters[_STAMPS] + 1):
            u = owner[s]
            if u != 0 and rows[_STAMP, u] > 0:
                weights[s] = 1
        _build(fenwick, weights)
    counters[_CANDIDATES] += marked
    counters[_MARKED_COUNT] = 0


@njit(cache=True)
def _mark(rows, counters, fenwick, owner, v, budget, candidate):
    """``insert``'s mark of the cached node v (a ``candidate`` until now, else just inserted with weight 0); rule
    P1 when marked_count reaches B: every other mark cleared, v's kept (marked_count = 1). v is not marked."""
    if candidate:
        _add(fenwick, rows[_STAMP, v], -1)
        counters[_CANDIDATES] -= 1
    rows[_STAMP, v] = -rows[_STAMP, v]  # before a clear: v is not on the list, so the clear leaves it marked
    if counters[_MARKED_COUNT] + 1 >= budget:
        _clear_marks(rows, counters, fenwick, owner)
    rows[_LIST, counters[_MARKED_COUNT]] = v
    counters[_MARKED_COUNT] += 1


@njit(cache=True)
def authors_chunk(nodes, hits, budget, counters, rows, fenwick, owner, next_uint32, rng_state):
    """Serve the one-token queries ``nodes`` one per batch under rlt-authors, writing each query's hits into
    ``hits`` (module docstring); ``rows`` (rows ``_STAMP``, ``_LIST``), ``counters`` and the Fenwick tree with its
    ``owner`` array are kept between chunks; draws from the bit generator (``next_uint32``, ``rng_state``).
    Returns the tree and its owner array (both renumbered when the stamps ran out)."""
    for j in range(nodes.size):
        v = nodes[j]
        stamp = rows[_STAMP, v]
        hits[j] = stamp != 0
        if stamp == 0:
            if counters[_SIZE] + 1 > budget:
                if 1 + counters[_MARKED_COUNT] >= budget:  # R1
                    _clear_marks(rows, counters, fenwick, owner)
                if counters[_CANDIDATES] == 0:  # R2
                    _clear_marks(rows, counters, fenwick, owner)
                m = counters[_CANDIDATES]
                if m == 0:  # only for a budget < 1
                    raise RuntimeError(_NOTHING_TO_EVICT)
                index = 0 if m == 1 else bounded_draw(next_uint32, rng_state, m)
                s = _kth(fenwick, m - index)
                u = owner[s]
                owner[s], rows[_STAMP, u] = 0, 0
                _add(fenwick, s, -1)
                counters[_CANDIDATES] -= 1
                counters[_SIZE] -= 1
            if counters[_STAMPS] + 1 == fenwick.size:
                fenwick, owner = _renumber(rows, counters, owner)
            s = counters[_STAMPS] + 1
            counters[_STAMPS] = s
            owner[s], rows[_STAMP, v] = v, s  # weight 0: marked below
            counters[_SIZE] += 1
        if stamp >= 0:
            _mark(rows, counters, fenwick, owner, v, budget, stamp > 0)
    return fenwick, owner
