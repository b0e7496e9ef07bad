"""FIF streamed over a flat trace at batch size 1 (Belady's rule), in O(distinct objects) memory beside one
next-use array.

The offline rule needs the future: a first pass reads the trace's chunks from the last to the first and
writes ``next_use[j]``, the position of the next request of query j's object (n: never again), into one
int32 array (int64 from 2**31 requests on), keeping only the latest position per object. A second pass reads
the chunks in order and serves them: a miss on a full cache evicts the cached object whose next request is
furthest, ties (objects never requested again) to the larger id. That is :mod:`kvtheory.optimum.compiled_fif`
at batch size 1 on a flat trie, where every group key is (next step, multiplicity 1) and the last tie-break,
the larger trie node, is the larger id (the trie numbers its leaves in sorted id order): the same evictions,
hit for hit (tests/optimum/test_flat_fif.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kvtheory.model.traces.flat import OracleGeneralColumns
from kvtheory.policies.compiled.flat_stream import NodeStream, heap_admit, new_heap, sift_up


@njit(cache=True)
def next_uses(nodes, base, n, after, next_use):
    """Walk the chunk ``nodes`` (queries base, base + 1, ...) backwards: ``next_use[j]`` is the position of the
    next request of the same node; ``after[v]`` holds n - (the earliest position of v seen so far), 0 if none."""
    for j in range(nodes.size - 1, -1, -1):
        v = nodes[j]
        next_use[base + j] = n - after[v]
        after[v] = n - (base + j)


@njit(cache=True)
def fif_chunk(nodes, ids, base, next_use, hits, budget, state, kept, pos, heap):
    """Serve the chunk ``nodes`` (queries base, base + 1, ...; object ids ``ids``) one per batch under FIF,
    writing each query's hits into ``hits``; return the heap.

    ``state`` = [cached nodes]; ``kept[v]`` is 1 when v is cached. The heap holds every cached node keyed
    (minus its next request's position, the complement of its id): its top is the furthest next request, then
    the larger id, and a miss on a full cache evicts it.
    """
    for j in range(nodes.size):
        v = nodes[j]
        hits[j] = kept[v]
        if kept[v] != 0:
            i = pos[v]
            heap[i, 0] = -next_use[base + j]
            sift_up(heap, pos, i)
        else:
            heap, out = heap_admit(heap, pos, state, budget, v, -next_use[base + j], ~ids[j])
            if out >= 0:
                kept[out] = 0
            kept[v] = 1
    return heap


def stream_fif(columns: OracleGeneralColumns, budget: int, *, query_hits: bool = False):
    """FIF's total hits on the flat trace ``columns`` at batch size 1, and every query's hits (a new int64
    array) when ``query_hits``, else None."""
    n = len(columns)
    next_use = np.empty(n, dtype=np.int32 if n < (1 << 31) - 1 else np.int64)
    stream = NodeStream(3)
    base = n
    for ids in columns.id_chunks(reverse=True):
        base -= ids.size
        next_uses(stream.nodes(ids), base, n, stream.state[2], next_use)
    state = np.zeros(1, dtype=np.int64)
    heap = new_heap()
    total, kept_hits, base = 0, [], 0
    kept, pos = stream.state[0], stream.state[1]
    try:
        for ids in columns.id_chunks():
            nodes = stream.nodes(ids)
            hits = np.empty(ids.size, dtype=np.int64)
            heap = fif_chunk(nodes, ids, base, next_use, hits, budget, state, kept, pos, heap)
            base += ids.size
            total += int(hits.sum())
            if query_hits:
                kept_hits.append(hits)
    except RuntimeError as exc:
        raise RuntimeError(str(exc)) from None
    return total, (np.concatenate(kept_hits) if query_hits else None)
