"""RLT and random-leaf streamed over a flat trace at batch size 1, in O(distinct objects) memory, draw for draw
as the compiled sampler core (:func:`~kvtheory.policies.compiled.edge_cache.run_batches`) on the whole trie.

On a flat trie every radix edge is one token and a leaf under the root, so at batch size 1 that core's step
for query v (its node) reduces to: the hit is ``kept[v]`` (0 or 1); v is marked and leaves the candidate
pool (RLT: joins the marked list); a miss on a full cache evicts one token, ``overflow`` = 1, in a block of
one draw: the pool's only candidate, or ``pool[bounded_draw(m)]`` over its m >= 2 candidates, after, under
RLT with an empty pool, a new phase (every marked edge but v unmarked in ascending node number, each cached
one joining the pool's end); v is filled; random-leaf then unmarks v, which joins the pool's end. The pool
keeps the core's order (appended at the end, a leaving candidate's slot taken by the last one), so the same
draws pick the same candidates.

Nodes are numbered in order of first appearance (:class:`~kvtheory.policies.flat_streams.NodeStream`),
not as the trie numbers them (in ascending signed id, its construction's sorted order); the one place the
core reads its numbers, a new phase's ascending order, is the ascending order of the objects' ids, which is
what :func:`sampler_chunk` sorts by. Hit for hit, draw for draw: tests/policies/test_flat_sampler.py.
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit
from kvtheory.policies.compiled.edge_cache import bounded_draw

# indices into ``counters``: cached tokens, pool size, marked-list length
_SIZE, _POOL, _MARKED = 0, 1, 2
# rows of the per-node state: cached (0/1), pool slot + 1 (0: not in the pool), the pool; RLT adds marked
# (0/1), the object id and the marked list
_KEPT, _SLOT, _POOL_ROW, _LISTED, _IDENT, _LIST = range(6)
_NOTHING_TO_EVICT = "nothing left to evict: the batch footprint exceeds the budget"


@njit(cache=True)
def _join(rows, counters, v):
    """v joins the pool at its end (if not in it)."""
    if rows[_SLOT, v] == 0:
        rows[_POOL_ROW, counters[_POOL]] = v
        counters[_POOL] += 1
        rows[_SLOT, v] = counters[_POOL]


@njit(cache=True)
def _leave(rows, counters, v):
    """v leaves the pool (if in it): the last candidate takes its slot."""
    s = rows[_SLOT, v]
    if s != 0:
        counters[_POOL] -= 1
        last = rows[_POOL_ROW, counters[_POOL]]
        rows[_POOL_ROW, s - 1] = last
        rows[_SLOT, last] = s
        rows[_SLOT, v] = 0


@njit(cache=True)
def _new_phase(rows, counters, v):
    """RLT with no candidate left while v (marked) is served: every marked node but v is unmarked, in ascending
    object id, the cached ones joining the pool; the marked list is then v alone."""
    n_marked = counters[_MARKED]
    cleared = np.empty(n_marked - 1, dtype=np.int64)
    c = 0
    for i in range(n_marked):
        u = rows[_LIST, i]
        if u != v:
            cleared[c] = u
            c += 1
    rows[_LIST, 0] = v
    counters[_MARKED] = 1
    cleared = cleared[np.argsort(rows[_IDENT][cleared])]  # distinct ids: any sort gives this order
    for u in cleared:
        rows[_LISTED, u] = 0
        if rows[_KEPT, u] != 0:
            _join(rows, counters, u)


@njit(cache=True)
def sampler_chunk(ids, nodes, hits, budget, marking, counters, rows, next_uint32, rng_state):
    """Serve the one-token queries of object ids ``ids`` (nodes ``nodes``) one per batch under RLT
    (``marking``) or random-leaf, writing each query's hits into ``hits`` (module docstring); ``rows`` is
    the per-node state (rows ``_KEPT`` ...) and ``counters`` = [cached tokens, pool size, marked-list
    length], both kept between chunks; draws from the bit generator (``next_uint32``, ``rng_state``)."""
    for j in range(nodes.size):
        v = nodes[j]
        hits[j] = rows[_KEPT, v]
        _leave(rows, counters, v)
        if marking and rows[_LISTED, v] == 0:
            rows[_LISTED, v] = 1
            rows[_IDENT, v] = ids[j]
            rows[_LIST, counters[_MARKED]] = v
            counters[_MARKED] += 1
        if rows[_KEPT, v] == 0:
            if counters[_SIZE] + 1 > budget:
                if counters[_POOL] == 0 and marking:
                    _new_phase(rows, counters, v)
                m = counters[_POOL]
                if m == 0:  # only for a budget < 1: a full cache holds a node u != v, a candidate or unmarked now
                    raise RuntimeError(_NOTHING_TO_EVICT)
                u = rows[_POOL_ROW, 0] if m == 1 else rows[_POOL_ROW, bounded_draw(next_uint32, rng_state, m)]
                rows[_KEPT, u] = 0
                _leave(rows, counters, u)
                counters[_SIZE] -= 1
            rows[_KEPT, v] = 1
            counters[_SIZE] += 1
        if not marking:
            _join(rows, counters, v)
