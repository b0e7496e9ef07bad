"""Compiled (numba) core of LFU-leaf on any prefix trie.

It does what :class:`~kvtheory.policies.lfu.LeafLFU` does, step for step, so the two give the same hits
query for query (tests/policies/test_compiled_cores.py compares them). The cache is ``kept[v]`` tokens per trie edge v
(rows of ``state``, with the number of cached children, the request count and the step of the last request
of each edge, and the step of the batch whose paths hold v); eviction order is a lazy binary min-heap of
(count, last request, -v), encoded as the int64 pair (count, last * (nodes + 1) + nodes - v), an entry
being stale when its edge is empty, has cached children or has been requested since. Paths are walked up
the trie's parent array. Memory: O(trie nodes) arrays and a heap of at most one live entry per request.
The kernel: :func:`lfu_serve`; its object: :class:`CompiledLFU`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import KernelServed
from kvtheory.policies.compiled.heap import grow_columns, heap_pop, heap_push
from kvtheory.policies.compiled.radix import cached_prefix_of

#: the step-limit errors of the kernels below (constants: numba raises them without building a string)
_PER_EVICTION = " of the compiled LFU core exceeded its step limit of heap entries + tokens + 1 rounds"
_PER_NODE = " of the compiled LFU core exceeded its step limit of one step per trie node"
_EVICT_LIMIT = "internal error: kernel _evict" + _PER_EVICTION
_LFU_SERVE_LIMIT = "internal error: kernel lfu_serve" + _PER_NODE

# rows of the per-trie-node state
S_KEPT, S_CHILDREN, S_COUNT, S_LAST, S_ON = range(5)
# cells of the scalar array (the heap's size must be cell 0: heap_push / heap_pop read it there)
C_HEAP, C_STEP, C_SIZE, C_BUDGET, C_ALLOCATION = range(5)


@njit(cache=True)
def _push(state, hp, sc, v):
    n = state.shape[1]
    heap_push(hp[0], hp[1], sc, state[S_COUNT, v], state[S_LAST, v] * (n + 1) + n - v)


@njit(cache=True)
def _evict(parent, state, hp, sc, tokens, need):
    """Take tokens from the tail of the top valid leaf edge until ``tokens`` are freed; with nothing left to
    evict, stop if ``need`` tokens are free, else raise. The batch's edges already have this step as their
    last request, so none of their entries is valid, and a parent on the batch's paths is pushed after the
    batch, not here.

    Each round pops an entry or frees the last tokens, and an entry is pushed only for a parent whose last
    child was emptied (at least one token freed): at most heap entries + tokens + 1 rounds."""
    n = state.shape[1]
    step = sc[C_STEP]
    freed = 0
    rounds_left = sc[C_HEAP] + tokens + 1
    while tokens > 0:
        if rounds_left == 0:
            raise RuntimeError(_EVICT_LIMIT)
        rounds_left -= 1
        if sc[C_HEAP] == 0:
            if freed >= need:
                break
            raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
        a, b = hp[0, 0], hp[1, 0]
        v = n - b % (n + 1)
        if (
            state[S_KEPT, v] == 0
            or state[S_CHILDREN, v] > 0
            or a != state[S_COUNT, v]
            or b // (n + 1) != state[S_LAST, v]
        ):
            heap_pop(hp[0], hp[1], sc)
            continue
        run = min(tokens, state[S_KEPT, v])
        state[S_KEPT, v] -= run
        sc[C_SIZE] -= run
        tokens -= run
        freed += run
        if state[S_KEPT, v] == 0:
            heap_pop(hp[0], hp[1], sc)
            p = parent[v]
            state[S_CHILDREN, p] -= 1
            if p != 0 and state[S_CHILDREN, p] == 0 and state[S_ON, p] != step:
                _push(state, hp, sc, p)


@njit(cache=True)
def lfu_serve(parent, edge_len, state, hp, sc, touched, ends, batch, hits):
    """Serve the queries ending at trie nodes ``ends`` in consecutive batches of ``batch`` (the last may be
    shorter), writing each query's hits into ``hits``; return the (possibly enlarged) heap.

    Per batch, as LeafLFU.serve: hits are the cached prefixes before the batch, and every path edge's count
    grows by one per query and its last request becomes this step; if the missing tokens of the batch's
    union overflow the budget by ``overflow`` > 0, tokens are evicted to free ``overflow`` (shortfall) or all
    ``missing`` ones (allocation, as far as anything is evictable); the paths are filled, and the batch's
    edges without cached children are pushed."""
    n = ends.size
    n_nodes = parent.size  # a root path has at most (n_nodes - 1) nodes below the root: the walks' limit
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        sc[C_STEP] += 1
        step = sc[C_STEP]
        missing = 0
        n_touched = 0
        for q in range(start, stop):
            cached = 0
            v = ends[q]
            rounds_left = n_nodes
            while v != 0:
                if rounds_left == 0:
                    raise RuntimeError(_LFU_SERVE_LIMIT)
                rounds_left -= 1
                cached += state[S_KEPT, v]
                state[S_COUNT, v] += 1
                state[S_LAST, v] = step
                if state[S_ON, v] != step:
                    state[S_ON, v] = step
                    touched[n_touched] = v
                    n_touched += 1
                    missing += edge_len[v] - state[S_KEPT, v]
                v = parent[v]
            hits[q] = cached
        overflow = sc[C_SIZE] + missing - sc[C_BUDGET]
        if overflow > 0:
            _evict(parent, state, hp, sc, missing if sc[C_ALLOCATION] else overflow, overflow)
        for i in range(n_touched):
            v = touched[i]
            if state[S_KEPT, v] < edge_len[v]:
                if state[S_KEPT, v] == 0:
                    state[S_CHILDREN, parent[v]] += 1
                sc[C_SIZE] += edge_len[v] - state[S_KEPT, v]
                state[S_KEPT, v] = edge_len[v]
        hp = grow_columns(hp, sc[C_HEAP] + n_touched + 1)
        for i in range(n_touched):
            v = touched[i]
            if state[S_CHILDREN, v] == 0:
                _push(state, hp, sc, v)
    return hp


class CompiledLFU(KernelServed):
    """LFU-leaf's cache served batch by batch through :func:`lfu_serve`; the same hits, batch for batch, as
    :class:`~kvtheory.policies.lfu.LeafLFU`."""

    _KEPT_ROW, _SIZE_CELL = S_KEPT, C_SIZE

    def __init__(self, rule: type, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self.name = rule.name
        n = trie.n_nodes
        self._max_steps = (1 << 62) // (n + 1) - 1
        self._parent = np.asarray(trie.parent, dtype=np.int64)
        self._edge_len = np.asarray(trie.edge_len, dtype=np.int64)
        self._state = np.zeros((5, n), dtype=np.int64)
        self._heap = np.zeros((2, 64), dtype=np.int64)
        self._scalars = np.zeros(5, dtype=np.int64)
        self._scalars[C_BUDGET] = budget
        self._scalars[C_ALLOCATION] = self.evict_amount == "allocation"
        self._touched = np.zeros(n, dtype=np.int64)
        self._ends = np.asarray(trie.end, dtype=np.int64)

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        if self._scalars[C_STEP] + -(-ends.size // batch) > self._max_steps:
            raise ValueError("too many steps for the LFU core's int64 heap keys")
        self._heap = lfu_serve(
            self._parent, self._edge_len, self._state, self._heap, self._scalars, self._touched, ends, batch, hits
        )

    def cached_prefix(self, j: int) -> int:
        return int(cached_prefix_of(self._parent, self._state[S_KEPT], self._ends[j]))
