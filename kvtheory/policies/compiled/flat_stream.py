"""Kernels of streamed runs of flat traces (their driver: :mod:`kvtheory.policies.flat_streams`): one-token
queries read chunk by chunk, in O(distinct objects) memory.

A flat trace (an oracleGeneral file, :class:`~kvtheory.model.traces.flat.OracleGeneralColumns`) is served at
batch size 1 without ever holding a per-request array of the whole trace: each chunk of object ids becomes
node numbers through an open-addressing hash table (:func:`dense_ids`: node i is the i-th distinct object
met, the table at most half full), and a kernel whose state persists between chunks serves the chunk
(numba's, or the same compiled ahead of time: :mod:`kvtheory.policies.native`).
State per node (flags, links, counts) grows with the table; the radix policies keep their cached nodes in
a linked list and LFU (and FIF, :mod:`kvtheory.optimum.flat_fif`) in an indexed heap of one entry per cached
node: O(distinct objects) in all, never O(requests).

The kernels give the hits of the general radix and LFU cores (:mod:`kvtheory.policies.compiled.radix`,
:mod:`kvtheory.policies.compiled.edge_cache`) on the same queries at batch size 1, hit for hit
(tests/policies/test_flat_stream.py); a whole trie of one-token queries takes them too, its nodes as the ids
of one chunk (:func:`kvtheory.policies.dispatch.compiled_hits`). Node numbers differ from the trie's (first
appearance, not sorted ids), which changes no decision: the radix core orders leaves by (stamp, creation id)
and LFU by (request count, last request step), and at batch size 1 no two nodes share a stamp or a last
request step, so every key is distinct and the node number is only a payload.
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit
from kvtheory.policies.compiled.heap import HEAP_LEVELS

#: Fibonacci hashing's multiplier, 2**64 / golden ratio, as a signed 64-bit integer
_MIX = -7046029254386353131
_TABLE_LIMIT = "internal error: kernel dense_ids exceeded its step limit of one probe per table slot"
_HEAP_LIMIT = "internal error: a sift of the streamed flat cores' heap exceeded its step limit of 64 levels"


@njit(cache=True)
def _slot(table, x):
    """The slot of id ``x`` in the table (row i: id, node number; node 0 for an empty slot): where it is, or
    the empty slot where it would go."""
    mask = table.shape[0] - 1
    h = x * _MIX
    i = (h ^ (h >> 29)) & mask
    for _ in range(table.shape[0]):
        if table[i, 1] == 0 or table[i, 0] == x:
            return i
        i = (i + 1) & mask
    raise RuntimeError(_TABLE_LIMIT)


@njit(cache=True)
def dense_ids(ids, table, count, out):
    """Write each id's node number (1, 2, ... in order of first appearance) into ``out``, adding new ids to the
    open-addressing ``table`` (``count[0]`` nodes so far); return the table, doubled whenever it would be more
    than half full."""
    for j in range(ids.size):
        x = ids[j]
        i = _slot(table, x)
        if table[i, 1] == 0:
            if 2 * (count[0] + 1) > table.shape[0]:
                old = table
                table = np.zeros((2 * old.shape[0], 2), dtype=np.int64)
                for k in range(old.shape[0]):
                    if old[k, 1] != 0:
                        s = _slot(table, old[k, 0])
                        table[s, 0], table[s, 1] = old[k, 0], old[k, 1]
                i = _slot(table, x)
            count[0] += 1
            table[i, 0], table[i, 1] = x, count[0]
        out[j] = table[i, 1]
    return table


# -- an indexed binary min-heap of distinct (a, b) int64 keys, one per node: row i of ``heap`` is the entry
# (a, b, node) at slot i, and pos[node] its slot; a node's key is changed in place and sifted, so no entry is
# ever stale. A sift carries the moving entry and shifts the others past it (one write each).
@njit(cache=True)
def _before(a, b, c, d):
    """Whether key (a, b) orders before key (c, d)."""
    return a < c or (a == c and b < d)


@njit(cache=True)
def _put(heap, pos, i, a, b, v):
    heap[i, 0], heap[i, 1], heap[i, 2] = a, b, v
    pos[v] = i


@njit(cache=True)
def sift_up(heap, pos, i):
    """Move the entry at slot i up to its place (its key decreased, or it was just appended)."""
    a, b, v = heap[i, 0], heap[i, 1], heap[i, 2]
    for _ in range(HEAP_LEVELS):  # i < 2**63 more than halves per level
        up = (i - 1) // 2
        if i == 0 or not _before(a, b, heap[up, 0], heap[up, 1]):
            _put(heap, pos, i, a, b, v)
            return
        _put(heap, pos, i, heap[up, 0], heap[up, 1], heap[up, 2])
        i = up
    raise RuntimeError(_HEAP_LIMIT)


@njit(cache=True)
def sift_down(heap, pos, n, i):
    """Move the entry at slot i of the heap's first n slots down to its place (its key increased)."""
    a, b, v = heap[i, 0], heap[i, 1], heap[i, 2]
    for _ in range(HEAP_LEVELS):  # i + 1 at least doubles per level and stays <= n < 2**63
        child = 2 * i + 1
        if child + 1 < n and _before(heap[child + 1, 0], heap[child + 1, 1], heap[child, 0], heap[child, 1]):
            child += 1
        if child >= n or not _before(heap[child, 0], heap[child, 1], a, b):
            _put(heap, pos, i, a, b, v)
            return
        _put(heap, pos, i, heap[child, 0], heap[child, 1], heap[child, 2])
        i = child
    raise RuntimeError(_HEAP_LIMIT)


@njit(cache=True)
def heap_admit(heap, pos, state, budget, v, a, b):
    """Cache node v with key (a, b): in place of the top entry, whose node it returns, when ``state[0]`` (the
    entries) is ``budget`` already, else in a new slot (the heap doubled when full, up to ``budget`` rows),
    returning -1. Returns the heap too."""
    n = state[0]
    if n == budget:
        if n == 0:
            raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
        out = heap[0, 2]
        heap[0, 0], heap[0, 1], heap[0, 2] = a, b, v
        sift_down(heap, pos, n, 0)
        return heap, out
    if n == heap.shape[0]:
        longer = np.empty((max(min(2 * n, budget), n + 1), 3), dtype=np.int64)
        longer[:n] = heap
        heap = longer
    heap[n, 0], heap[n, 1], heap[n, 2] = a, b, v
    state[0] = n + 1
    sift_up(heap, pos, n)
    return heap, -1


@njit(cache=True)
def radix_chunk(nodes, hits, budget, refresh, state, cached, prev, succ):
    """Serve the one-token queries ``nodes`` one per batch under radix eviction (L-LRU, token-LRU and FIFO-leaf:
    on one-token edges every eviction takes a whole leaf), writing each query's hits (0 or 1) into ``hits``.

    The radix core evicts the cached leaf of least (stamp, creation id), the stamp being the clock of the leaf's
    last refresh (every hit if ``refresh``, else its insertion). At batch size 1 the clock ticks once per
    query and each tick stamps one node, so no two cached nodes share a stamp and that leaf is the least
    recently refreshed one: the head of a doubly linked list (``prev``, ``succ``; node 0 the sentinel) to
    whose tail a node moves when stamped. ``state`` = [cached tokens]; ``cached[v]`` is 1 when v is cached.
    """
    for j in range(nodes.size):
        v = nodes[j]
        if cached[v] != 0:
            hits[j] = 1
            if not refresh:
                continue
            succ[prev[v]], prev[succ[v]] = succ[v], prev[v]  # unlink v, to put it at the tail
        else:
            hits[j] = 0
            if state[0] + 1 > budget:
                u = succ[0]
                if u == 0:
                    raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
                succ[0], prev[succ[u]] = succ[u], 0
                cached[u] = 0
                state[0] -= 1
            cached[v] = 1
            state[0] += 1
        tail = prev[0]
        prev[v], succ[v] = tail, 0
        succ[tail], prev[0] = v, v


@njit(cache=True)
def lfu_chunk(nodes, hits, budget, state, kept, count, last, pos, heap):
    """Serve the one-token queries ``nodes`` one per batch under LFU-leaf, writing each query's hits into
    ``hits``; return the heap.

    ``state`` = [cached nodes, step]; ``kept[v]`` is 1 when v is cached, ``count[v]`` its requests so far and
    ``last[v]`` the step of the latest. The heap holds every cached node keyed (count, last); a miss on a full
    cache evicts its top, the least requested, then least recently (the request is counted first, but the
    requested node is not cached, so it is not a candidate).
    """
    for j in range(nodes.size):
        v = nodes[j]
        state[1] += 1
        hits[j] = kept[v]
        count[v] += 1
        last[v] = state[1]
        if kept[v] != 0:
            i = pos[v]
            heap[i, 0], heap[i, 1] = count[v], last[v]
            sift_down(heap, pos, state[0], i)
        else:
            heap, out = heap_admit(heap, pos, state, budget, v, count[v], last[v])
            if out >= 0:
                kept[out] = 0
            kept[v] = 1
    return heap
