"""The compiled (numba) core of uniform leaf-token eviction (RLT and random-leaf) on any prefix trie.

It does what :class:`~kvtheory.policies.edge_cache.LeafTokenSampler` does, step for step and draw for
draw from the same ``numpy.random.Generator`` (its bit generator's 32-bit output through Lemire's
rejection, as numpy's ``Generator.integers`` draws below 2**32): the cache is ``kept[v]`` tokens per
radix edge v with ``children[v]`` cached children, the candidates (cached, childless, unmarked edges)
sit in a pool in the per-edge class's order, and evictions are blocks of ``rng.integers(0, n,
size=...)`` draws over the n candidates, cut just after the first draw that empties an edge. Paths are
walked through the trie's parent array; all state is int64 / uint8 numpy arrays indexed by trie node:
O(edges + queries) memory. The kernel: :func:`run_batches`; its object:
:class:`CompiledLeafSampler` (tests/policies/test_sampler_core.py compares it with the per-edge classes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import KernelServed, kept_of_array
from kvtheory.policies.compiled.radix import cached_prefix_of
from kvtheory.policies.edge_cache import _MIN_BLOCK
from kvtheory.policies.native import bit_source

#: the step-limit errors of the kernels below (constants: numba raises them without building a string)
_PER_DRAW = " of the compiled sampler core exceeded its step limit of 256 rejected draws"
_PER_NODE = " of the compiled sampler core exceeded its step limit of one step per trie node"
_PER_EVICTION = " of the compiled sampler core exceeded its step limit of tokens + marked edges + 1 rounds"
_BOUNDED_DRAW_LIMIT = "internal error: kernel bounded_draw" + _PER_DRAW
_RUN_BATCHES_NODE_LIMIT = "internal error: kernel run_batches" + _PER_NODE
_RUN_BATCHES_EVICT_LIMIT = "internal error: kernel run_batches" + _PER_EVICTION

# indices into the int64 ``counters`` array of a sampler's state
_SIZE, _POOL, _MARKED, _STEP, _PHASES = 0, 1, 2, 3, 4
#: the step limit of one bounded draw's rejection loop (see :func:`bounded_draw`)
DRAW_ROUNDS = 256


class SamplerState:
    """The arrays of one sampler run over ``trie``: the trie (``parent``, ``edge_len``, ``ends``), the cache
    (``kept``, ``children``), marks (``marked``; RLT's list of marked edges ``marked_list``/``listed``),
    the candidate pool (``pool``, ``slot``), ``seen[v]`` (the last batch whose paths hold v), scratch space
    (the batch's edges, draws per edge, edges drawn), and ``counters`` = [cached tokens, pool size,
    marked-list length, batches served, phases]."""

    def __init__(self, trie: PrefixTrie) -> None:
        n = trie.n_nodes
        self.parent = np.asarray(trie.parent, dtype=np.int64)
        self.edge_len = np.asarray(trie.edge_len, dtype=np.int64)
        self.ends = np.asarray(trie.end, dtype=np.int64)
        self.kept = np.zeros(n, dtype=np.int64)
        self.children = np.zeros(n, dtype=np.int64)
        self.marked = np.zeros(n, dtype=np.uint8)
        self.listed = np.zeros(n, dtype=np.uint8)
        self.marked_list = np.empty(n, dtype=np.int64)
        self.pool = np.zeros(n, dtype=np.int64)
        self.slot = np.full(n, -1, dtype=np.int64)
        self.seen = np.full(n, -1, dtype=np.int64)
        self.scratch = np.zeros(3 * n, dtype=np.int64)
        self.counters = np.zeros(5, dtype=np.int64)
        self.counters[_PHASES] = 1

    def arrays(self) -> tuple:
        return (
            self.parent, self.edge_len, self.kept, self.children, self.marked, self.listed,
            self.marked_list, self.pool, self.slot, self.seen, self.scratch, self.counters,
        )  # fmt: skip


@njit(cache=True)
def _join_pool(pool, slot, pool_size, v):
    """v joins the candidate pool at its end (if not in it)."""
    if slot[v] < 0:
        pool[pool_size[0]] = v
        slot[v] = pool_size[0]
        pool_size[0] += 1


@njit(cache=True)
def _leave_pool(pool, slot, pool_size, v):
    """v leaves the pool (if in it): the last candidate takes its slot, as the per-edge class does."""
    s = slot[v]
    if s >= 0:
        pool_size[0] -= 1
        last = pool[pool_size[0]]
        pool[s] = last
        slot[last] = s
        slot[v] = -1


@njit(cache=True)
def bounded_draw(next_uint32, state, m):
    """One draw of numpy's ``Generator.integers(0, m, size=...)`` for 2 <= m < 2**32: Lemire's rejection
    on the bit generator's 32-bit output, as numpy's ``random_bounded_uint64_fill`` draws each element.

    A draw is rejected with probability threshold / 2**32 <= 1/2 (threshold <= min(m - 1, 2**32 - m)), so a
    working bit source is rejected :data:`DRAW_ROUNDS` times in a row with probability at most 2**-256: a
    run that reaches the limit has a broken bit source (one stuck at a rejected value)."""
    excl = np.uint64(m)
    product = np.uint64(next_uint32(state)) * excl
    leftover = product & np.uint64(0xFFFFFFFF)
    if leftover < excl:
        threshold = (np.uint64(0xFFFFFFFF) - (excl - np.uint64(1))) % excl
        rounds_left = DRAW_ROUNDS
        while leftover < threshold:
            if rounds_left == 0:
                raise RuntimeError(_BOUNDED_DRAW_LIMIT)
            rounds_left -= 1
            product = np.uint64(next_uint32(state)) * excl
            leftover = product & np.uint64(0xFFFFFFFF)
    return np.int64(product >> np.uint64(32))


@njit(cache=True)
def _emptied(v, parent, children, marked, pool, slot, counters):
    """Edge v lost its last cached token: it leaves the pool, and its parent may become a candidate."""
    pool_size = counters[_POOL : _POOL + 1]
    _leave_pool(pool, slot, pool_size, v)
    p = parent[v]
    children[p] -= 1
    if p != 0 and children[p] == 0 and marked[p] == 0:
        _join_pool(pool, slot, pool_size, p)


@njit(cache=True)
def _new_phase(step, kept, children, marked, listed, marked_list, pool, slot, seen, counters):
    """RLT with no candidate left: unmark every marked edge off the batch (``seen[v] != step``), in ascending
    ids, and let the cached childless ones join the pool. Return False when none was marked (no phase)."""
    n_marked = counters[_MARKED]
    survivors = 0
    for i in range(n_marked):
        if seen[marked_list[i]] == step:
            survivors += 1
    if survivors == n_marked:
        return False
    cleared = np.empty(n_marked - survivors, dtype=np.int64)
    kept_marks, c = 0, 0
    for i in range(n_marked):
        v = marked_list[i]
        if seen[v] == step:
            marked_list[kept_marks] = v
            kept_marks += 1
        else:
            cleared[c] = v
            c += 1
    counters[_MARKED] = kept_marks
    counters[_PHASES] += 1
    cleared.sort()
    pool_size = counters[_POOL : _POOL + 1]
    for v in cleared:
        listed[v] = 0
        marked[v] = 0
        if kept[v] > 0 and children[v] == 0:
            _join_pool(pool, slot, pool_size, v)
    return True


@njit(cache=True)
def run_batches(
    ends, batch, hits, parent, edge_len, kept, children, marked, listed, marked_list, pool, slot, seen, scratch,
    counters, budget, next_uint32, rng_state, marking, allocation, min_block,
):  # fmt: skip
    """Serve the queries ending at trie nodes ``ends`` in consecutive batches of ``batch`` (the last may be
    shorter), writing each query's hits into ``hits``.

    Per batch, as LeafTokenSampler.serve: hits against the cache before the batch; the batch's edges
    (ascending ids) are marked and leave the pool; with ``missing`` uncached tokens overflowing the budget
    by ``overflow`` > 0, evict ``overflow`` tokens (shortfall) or ``missing`` (``allocation``, stopping
    early only when nothing is left to evict, an error before ``overflow``); an empty pool starts a new
    phase (``marking``, RLT) or is the end of what can be evicted. Then the batch's paths are filled and,
    without marking (random-leaf), unmarked again in ascending ids.
    """
    n_nodes = kept.size
    on = scratch[:n_nodes]
    drawn = scratch[n_nodes : 2 * n_nodes]
    touched = scratch[2 * n_nodes :]
    pool_size = counters[_POOL : _POOL + 1]
    for start in range(0, ends.size, batch):
        stop = min(start + batch, ends.size)
        step = counters[_STEP]
        counters[_STEP] += 1
        n_on = 0
        for i in range(start, stop):
            h = 0
            v = ends[i]
            rounds_left = n_nodes  # a root path: at most (trie nodes - 1) nodes below the root
            while v != 0:
                if rounds_left == 0:
                    raise RuntimeError(_RUN_BATCHES_NODE_LIMIT)
                rounds_left -= 1
                h += kept[v]
                if seen[v] != step:
                    seen[v] = step
                    on[n_on] = v
                    n_on += 1
                v = parent[v]
            hits[i] = h
        on[:n_on].sort()
        missing = 0
        for i in range(n_on):
            v = on[i]
            marked[v] = 1
            _leave_pool(pool, slot, pool_size, v)
            if marking and listed[v] == 0:
                listed[v] = 1
                marked_list[counters[_MARKED]] = v
                counters[_MARKED] += 1
            missing += edge_len[v] - kept[v]
        overflow = counters[_SIZE] + missing - budget
        if overflow > 0:
            tokens = missing if allocation else overflow
            freed = 0
            # each round frees at least one token (a block takes at least one draw), starts a phase that unmarks
            # at least one edge, or ends: at most tokens + marked edges + 1 rounds
            rounds_left = tokens + counters[_MARKED] + 1
            while tokens > 0:
                if rounds_left == 0:
                    raise RuntimeError(_RUN_BATCHES_EVICT_LIMIT)
                rounds_left -= 1
                if pool_size[0] == 0:
                    if marking and _new_phase(
                        step, kept, children, marked, listed, marked_list, pool, slot, seen, counters
                    ):
                        continue
                    if freed >= overflow:
                        break
                    raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
                m = pool_size[0]
                block = tokens
                if tokens > min_block and tokens > 2 * m:  # else the block is ``tokens`` whatever c is (c >= 1)
                    smallest = kept[pool[0]]
                    for i in range(1, m):
                        smallest = min(smallest, kept[pool[i]])
                        if 2 * m * smallest <= min_block:
                            break
                    block = min(tokens, max(2 * m * smallest, min_block))
                taken, n_touched, emptied = 0, 0, -1
                while taken < block:  # a draw per round: at most ``block`` rounds
                    taken += 1
                    v = pool[0] if m == 1 else pool[bounded_draw(next_uint32, rng_state, m)]
                    if drawn[v] == 0:
                        touched[n_touched] = v
                        n_touched += 1
                    drawn[v] += 1
                    if drawn[v] == kept[v]:
                        emptied = v
                        break
                if m > 1:  # the rest of the block is drawn (the stream moves past it) but not applied
                    for _ in range(block - taken):
                        bounded_draw(next_uint32, rng_state, m)
                for i in range(n_touched):
                    v = touched[i]
                    kept[v] -= drawn[v]
                    drawn[v] = 0
                if emptied >= 0:
                    _emptied(emptied, parent, children, marked, pool, slot, counters)
                tokens -= taken
                freed += taken
                counters[_SIZE] -= taken
        for i in range(n_on):
            v = on[i]
            if kept[v] < edge_len[v]:
                if kept[v] == 0:
                    children[parent[v]] += 1
                counters[_SIZE] += edge_len[v] - kept[v]
                kept[v] = edge_len[v]
        if not marking:
            for i in range(n_on):
                v = on[i]
                marked[v] = 0
                if children[v] == 0:
                    _join_pool(pool, slot, pool_size, v)


class CompiledLeafSampler(KernelServed):
    """RLT or random-leaf as an object served batch by batch through :func:`run_batches`: the same hits, batch
    for batch, as the per-edge class ``policy`` from the same seed."""

    randomized = True
    _SIZE_CELL = _SIZE

    def __init__(self, policy: type, trie: PrefixTrie, budget: int, *, min_block: int = _MIN_BLOCK, **options) -> None:
        super().__init__(trie, budget, **options)
        self.name = policy.name
        self._marking = bool(policy.marking)
        self._min_block = int(min_block)
        self._rng = np.random.default_rng(options.get("seed"))  # kept alive: the kernel draws from its state
        self._bits = bit_source(self._rng)
        self._state = SamplerState(trie)
        self._arrays = self._state.arrays()
        self._scalars = self._state.counters
        self._ends = self._state.ends

    @property
    def phases(self) -> int:
        """RLT's phases so far (as RandomizedLeafToken.phases)."""
        return int(self._state.counters[_PHASES])

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        run_batches(
            ends, int(batch), hits, *self._arrays, self.budget, *self._bits, self._marking,
            self.evict_amount == "allocation", self._min_block,
        )  # fmt: skip

    def cached_prefix(self, j: int) -> int:
        state = self._state
        return int(cached_prefix_of(state.parent, state.kept, state.ends[j]))

    def kept(self) -> dict[int, int]:
        return kept_of_array(self._state.kept)
