"""Compiled (numba) cores for flat workloads: every query is one radix edge hanging off the root.

Flat cache traces, the paging adversaries and block traces are millions of such queries, and there the
per-query Python cost of the general per-edge policies dominates. On a flat trie the dynamic radix tree
of :class:`~kvtheory.policies.radix.RadixPolicy` is a set of leaves under the root, one per cached edge,
never split, so one run is a handful of int64 arrays indexed by trie node (cached flag, stamp,
creation id) and one binary heap of (stamp, creation id) pairs: O(edges + queries) memory.

The kernel reproduces the per-edge policy hit for hit (tests/policies/test_flat_core.py compares them): same
clock (one tick per batch), same creation ids, same lazy heap semantics, so the same leaf is evicted.
It covers whole-node eviction (L-LRU), and token-at-a-time eviction (token-LRU, FIFO-leaf) when every
edge holds one token, where evicting a token is evicting its leaf; the general cores serve every other
trie. The heap and the buffers below (:func:`grow_columns`, :func:`set_aside`) serve every compiled core.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: the step-limit errors of the kernels below (constants: numba raises them without building a string)
_PER_LEVEL = " of the compiled heap exceeded its step limit of 64 levels"
_PER_HEAP = " of the compiled flat core exceeded its step limit of heap entries + 1 rounds"
_HEAP_PUSH_LIMIT = "internal error: kernel heap_push" + _PER_LEVEL
_HEAP_POP_LIMIT = "internal error: kernel heap_pop" + _PER_LEVEL
_FLAT_RADIX_RUN_LIMIT = "internal error: kernel flat_radix_run" + _PER_HEAP
_FLAT_LFU_RUN_LIMIT = "internal error: kernel flat_lfu_run" + _PER_HEAP

#: the step limit of one heap push or pop: a heap of fewer than 2**63 entries has at most 63 levels below its top
HEAP_LEVELS = 64


# -- a binary min-heap of (a, b) int64 pairs, in two arrays plus a size cell ----------------------------
@njit(cache=True, inline="always")
def heap_less(ha, hb, i, j):
    return ha[i] < ha[j] or (ha[i] == ha[j] and hb[i] < hb[j])


@njit(cache=True, inline="always")
def heap_push(ha, hb, size, a, b):
    i = size[0]
    size[0] += 1
    ha[i] = a
    hb[i] = b
    rounds_left = np.int64(HEAP_LEVELS)  # i < 2**63 more than halves per level: 0 after at most 63
    while i > 0:
        if rounds_left == 0:
            raise RuntimeError(_HEAP_PUSH_LIMIT)
        rounds_left -= 1
        up = (i - 1) // 2
        if heap_less(ha, hb, i, up):
            ha[i], ha[up] = ha[up], ha[i]
            hb[i], hb[up] = hb[up], hb[i]
            i = up
        else:
            break


@njit(cache=True, inline="always")
def heap_pop(ha, hb, size):
    n = size[0] - 1
    size[0] = n
    ha[0] = ha[n]
    hb[0] = hb[n]
    i = 0
    rounds_left = np.int64(HEAP_LEVELS)  # i + 1 at least doubles per level and stays <= n < 2**63: at most 63
    while True:
        if rounds_left == 0:
            raise RuntimeError(_HEAP_POP_LIMIT)
        rounds_left -= 1
        left = 2 * i + 1
        if left >= n:
            break
        best = left
        if left + 1 < n and heap_less(ha, hb, left + 1, left):
            best = left + 1
        if heap_less(ha, hb, best, i):
            ha[i], ha[best] = ha[best], ha[i]
            hb[i], hb[best] = hb[best], hb[i]
            i = best
        else:
            break


@njit(cache=True)
def grow_columns(array, needed):
    """``array`` itself if it has ``needed`` columns, else a copy with at least twice as many."""
    if array.shape[1] >= needed:
        return array
    wider = np.zeros((array.shape[0], max(needed, 2 * array.shape[1])), dtype=np.int64)
    wider[:, : array.shape[1]] = array
    return wider


@njit(cache=True)
def set_aside(aside, n_aside, a, b):
    """``aside`` (the pairs of two rows put aside from a heap) with (a, b) in column ``n_aside``, enlarged first
    (:func:`grow_columns`) if it is full."""
    aside = grow_columns(aside, n_aside + 1)
    aside[0, n_aside] = a
    aside[1, n_aside] = b
    return aside


@njit(cache=True)
def flat_radix_run(ends, edge_len, budget, batch, refresh):
    """Serve ``ends`` (the edge of each query) in batches of ``batch``; return each query's hits.

    Mirrors RadixPolicy.serve on a flat trie with whole-leaf eviction: per batch the clock ticks, cached
    edges of the batch are refreshed (if ``refresh``) and locked, leaves are evicted in (stamp, cid) order
    until the batch's missing tokens fit, then missing edges become new leaves (cid + 1 each) and, with
    ``refresh``, hit edges are pushed again with their current stamp (without it their entries stand). Raises
    if the footprint cannot fit.
    """
    n = ends.size
    n_nodes = edge_len.size
    hits = np.zeros(n, dtype=np.int64)
    cid_of = np.zeros(n_nodes, dtype=np.int64)  # creation id of v's leaf, 0 if v is not cached
    stamp = np.zeros(n_nodes, dtype=np.int64)
    locked = np.zeros(n_nodes, dtype=np.int64)  # the clock of the batch that last walked v
    seen = np.zeros(n_nodes, dtype=np.int64)  # the clock of the batch that last counted v's misses
    node_of_cid = np.zeros(n + 1, dtype=np.int64)
    ha = np.empty(n + 1, dtype=np.int64)  # a push per query, an entry set aside popped first: at most n entries
    hb = np.empty(n + 1, dtype=np.int64)
    size = np.zeros(1, dtype=np.int64)
    aside = np.empty((2, batch + 1), dtype=np.int64)
    cached_tokens = 0
    next_cid = 0
    clock = 0
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        clock += 1
        missing = 0
        for j in range(start, stop):
            v = ends[j]
            if cid_of[v] != 0:
                if refresh:
                    stamp[v] = clock
                locked[v] = clock
                hits[j] = edge_len[v]
            elif seen[v] != clock:
                seen[v] = clock
                missing += edge_len[v]
        overflow = cached_tokens + missing - budget
        n_aside = 0
        # every round pops an entry and nothing is pushed: at most (entries + 1) rounds, the last one ending
        rounds_left = size[0] + 1
        while overflow > 0:
            if rounds_left == 0:
                raise RuntimeError(_FLAT_RADIX_RUN_LIMIT)
            rounds_left -= 1
            if size[0] == 0:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            s, c = ha[0], hb[0]
            v = node_of_cid[c]
            if cid_of[v] != c or stamp[v] != s:
                heap_pop(ha, hb, size)
                continue
            if locked[v] == clock:
                heap_pop(ha, hb, size)
                aside = set_aside(aside, n_aside, s, c)
                n_aside += 1
                continue
            heap_pop(ha, hb, size)
            cid_of[v] = 0
            cached_tokens -= edge_len[v]
            overflow -= edge_len[v]
        for i in range(n_aside):
            heap_push(ha, hb, size, aside[0, i], aside[1, i])
        for j in range(start, stop):
            v = ends[j]
            if cid_of[v] != 0:
                if not refresh:
                    continue  # its entry, unchanged, is on the heap
                stamp[v] = clock
            else:
                next_cid += 1
                cid_of[v] = next_cid
                node_of_cid[next_cid] = v
                stamp[v] = clock
                cached_tokens += edge_len[v]
            heap_push(ha, hb, size, stamp[v], cid_of[v])
    return hits


@njit(cache=True)
def flat_lfu_run(ends, edge_len, budget, batch):
    """Serve ``ends`` in batches under LFU-leaf; return each query's hits.

    Mirrors :class:`~kvtheory.policies.lfu.LeafLFU` on a flat trie: a lazy min-heap of (count, last
    request step, -v), encoded as the pair (count, last * (nodes + 1) + nodes - v); the batch's edges are
    counted first (their entries then stale), and the top valid edge loses tokens from its end.
    """
    n = ends.size
    n_nodes = edge_len.size
    hits = np.zeros(n, dtype=np.int64)
    kept = np.zeros(n_nodes, dtype=np.int64)
    count = np.zeros(n_nodes, dtype=np.int64)
    last = np.zeros(n_nodes, dtype=np.int64)
    on_batch = np.full(n_nodes, -1, dtype=np.int64)
    ha = np.empty(n + 1, dtype=np.int64)  # at most a push per query: at most n entries
    hb = np.empty(n + 1, dtype=np.int64)
    size = np.zeros(1, dtype=np.int64)
    cached_tokens = 0
    step = 0
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        step += 1
        missing = 0
        for j in range(start, stop):
            v = ends[j]
            hits[j] = kept[v]
            count[v] += 1
            last[v] = step
            if on_batch[v] != step:
                on_batch[v] = step
                missing += edge_len[v] - kept[v]
        tokens = cached_tokens + missing - budget
        # every round pops an entry or frees the last tokens, and nothing is pushed: at most entries + 1 rounds
        rounds_left = size[0] + 1
        while tokens > 0:
            if rounds_left == 0:
                raise RuntimeError(_FLAT_LFU_RUN_LIMIT)
            rounds_left -= 1
            if size[0] == 0:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            a, b = ha[0], hb[0]
            v = n_nodes - b % (n_nodes + 1)
            if kept[v] == 0 or a != count[v] or b // (n_nodes + 1) != last[v]:
                heap_pop(ha, hb, size)
                continue
            run = min(tokens, kept[v])
            kept[v] -= run
            cached_tokens -= run
            tokens -= run
            if kept[v] == 0:
                heap_pop(ha, hb, size)
        for j in range(start, stop):
            v = ends[j]
            cached_tokens += edge_len[v] - kept[v]
            kept[v] = edge_len[v]
            if on_batch[v] == step:
                on_batch[v] = -step  # pushed once per batch
                heap_push(ha, hb, size, count[v], last[v] * (n_nodes + 1) + n_nodes - v)
    return hits
