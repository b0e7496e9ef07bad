"""FIF's compiled (numba) core for flat workloads: every query is one radix edge hanging off the root.

On a flat trie every edge's floor is 0, so FIF's rule (:mod:`kvtheory.optimum.fif`) orders the cached
tokens off the current batch by (group key, depth, trie node id), largest first, where the group key
encodes (next request step T, multiplicity m) exactly as :class:`~kvtheory.optimum.fif.FurthestInFuture`
does. One max-heap of (key, kept, v) per cached edge, lazily cleaned, gives that order: the top edge
loses tokens down to the next edge's (kept, v) in the same group (or all of them), then goes back.
Memory: the next-request key of every query and a few arrays per trie node, all int64 numpy arrays.

The kernel reproduces FurthestInFuture hit for hit and token for token (tests/test_flat_core.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import flat_trie_arrays
from kvtheory.policies.compiled.flat import heap_pop, heap_push


@njit(cache=True)
def _next_keys(ends, n_nodes, batch, width):
    """For each query j of step t: the group key of the next step after t that requests its edge
    (never: key(steps, 0)), as FurthestInFuture's cursor gives it after serving step t."""
    n = ends.size
    steps = (n + batch - 1) // batch
    never = steps * width + (width - 1)
    last = np.full(n_nodes, never, dtype=np.int64)
    count = np.zeros(n_nodes, dtype=np.int64)
    following = np.empty(n, dtype=np.int64)
    for t in range(steps - 1, -1, -1):
        start, stop = t * batch, min(t * batch + batch, n)
        for j in range(start, stop):
            following[j] = last[ends[j]]
            count[ends[j]] += 1
        for j in range(start, stop):
            v = ends[j]
            if count[v] > 0:
                last[v] = t * width + (width - 1 - count[v])
                count[v] = 0
    return following


@njit(cache=True)
def flat_fif_run(ends, edge_len, budget, batch, width):
    """Serve ``ends`` in batches of ``batch`` under FIF; return each query's hits and the final kept tokens."""
    n = ends.size
    n_nodes = edge_len.size
    following = _next_keys(ends, n_nodes, batch, width)
    hits = np.zeros(n, dtype=np.int64)
    kept = np.zeros(n_nodes, dtype=np.int64)
    group = np.full(n_nodes, -1, dtype=np.int64)  # the group key v is cached in, -1 if none or on the batch
    seen = np.full(n_nodes, -1, dtype=np.int64)
    capacity = 2 * n + 1
    ha = np.empty(capacity, dtype=np.int64)
    hb = np.empty(capacity, dtype=np.int64)
    size = np.zeros(1, dtype=np.int64)
    cached_tokens = 0
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        t = start // batch
        for j in range(start, stop):
            hits[j] = kept[ends[j]]
        missing = 0
        for j in range(start, stop):
            v = ends[j]
            if seen[v] != t:
                seen[v] = t
                group[v] = -1
                missing += edge_len[v] - kept[v]
        overflow = cached_tokens + missing - budget
        while overflow > 0:
            if size[0] == 0:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            key, rank = -ha[0], -hb[0]
            v = rank % n_nodes
            top = rank // n_nodes
            heap_pop(ha, hb, size)
            if group[v] != key or kept[v] != top:
                continue
            take = top
            while size[0] > 0:
                key2, rank2 = -ha[0], -hb[0]
                v2 = rank2 % n_nodes
                if group[v2] != key2 or kept[v2] != rank2 // n_nodes:
                    heap_pop(ha, hb, size)
                    continue
                if key2 == key:
                    take = top - rank2 // n_nodes + (1 if v > v2 else 0)
                break
            take = min(take, overflow)
            kept[v] -= take
            cached_tokens -= take
            overflow -= take
            if kept[v] > 0:
                heap_push(ha, hb, size, -key, -(kept[v] * n_nodes + v))
            else:
                group[v] = -1
        for j in range(start, stop):
            v = ends[j]
            if group[v] == -1:  # the first of the batch's queries on edge v
                cached_tokens += edge_len[v] - kept[v]
                kept[v] = edge_len[v]
                group[v] = following[j]
                if size[0] == ha.size:
                    ha = np.concatenate((ha, np.empty(ha.size, dtype=np.int64)))
                    hb = np.concatenate((hb, np.empty(hb.size, dtype=np.int64)))
                heap_push(ha, hb, size, -group[v], -(kept[v] * n_nodes + v))
    return hits, kept


def run_flat_fif(trie: PrefixTrie, budget: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """FIF's hits per query and final kept tokens per trie node on a flat trie (see :func:`flat_fif_run`)."""
    arrays = flat_trie_arrays(trie)
    if arrays is None:
        raise ValueError("run_flat_fif needs a flat trie (every query one edge off the root)")
    ends, edge_len = arrays
    n_nodes = edge_len.size
    if int(edge_len.max(initial=0)) + 1 >= (1 << 62) // max(n_nodes, 1):
        raise ValueError("edges too long for the flat FIF core's int64 heap keys")
    width = min(batch, ends.size) + 2  # FurthestInFuture's: the longest batch + 2
    try:
        return flat_fif_run(ends, edge_len, int(budget), int(batch), width)
    except RuntimeError as exc:
        raise RuntimeError(str(exc)) from None
