"""The kernels of FIF streamed over a flat trace at batch size 1 (:mod:`kvtheory.optimum.flat_fif`), compiled by
numba just in time or ahead of time (:mod:`kvtheory.policies.native`).

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

from kvtheory.jit import njit
from kvtheory.policies.compiled.flat_stream import heap_admit, sift_up


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
