"""The compiled (numba) core of the rules that keep the cache per radix edge: LFU-leaf, RLT and random-leaf.

It does what the per-edge classes do (:class:`~kvtheory.policies.lfu.LeafLFU`,
:class:`~kvtheory.policies.edge_cache.LeafTokenSampler`), step for step, so the two give the same hits query for
query and, for the samplers, the same draws from the same ``numpy.random.Generator`` (its bit generator's 32-bit
output through Lemire's rejection, as numpy's ``Generator.integers`` draws below 2**32)
(tests/policies/test_compiled_cores.py, test_sampler_core.py). One kernel, :func:`run_batches`, serves a batch
for every rule: hits against the cache before the batch, the batch's edges, the rule's eviction, the paths filled.
The cache is ``kept[v]`` tokens per radix edge v with ``children[v]`` cached children; the rule is data:

- LFU-leaf: a request count and the step of the last request per edge; the order of eviction is a lazy binary
  min-heap of (count, last request, -v), encoded as the int64 pair (count, last * (nodes + 1) + nodes - v), an
  entry being stale when its edge is empty, has cached children or has been requested since; whole runs of a
  leaf edge go per heap operation.
- RLT and random-leaf: the candidates (cached, childless, unmarked edges) sit in a pool in the per-edge class's
  order, and evictions are blocks of ``rng.integers(0, n, size=...)`` draws over the n candidates, cut just
  after the first draw that empties an edge; RLT's marks last until an empty pool starts a new phase.

Paths are walked through the trie's parent array; all state is int64 / uint8 numpy arrays indexed by trie node
(:class:`EdgeState`), and LFU's heap: O(edges + requests) memory. Its objects: :class:`CompiledLFU`,
:class:`CompiledLeafSampler`.
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit
from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import KernelServed, kept_of_array
from kvtheory.policies.compiled.heap import grow_columns, heap_pop, heap_push
from kvtheory.policies.compiled.radix import cached_prefix_of
from kvtheory.policies.edge_cache import _MIN_BLOCK
from kvtheory.policies.native import bit_source

#: the step-limit errors of the kernels below (constants: numba raises them without building a string)
_CORE = " of the compiled edge-cache core exceeded its step limit of "
_BOUNDED_DRAW_LIMIT = "internal error: kernel bounded_draw" + _CORE + "256 rejected draws"
_RUN_BATCHES_LIMIT = "internal error: kernel run_batches" + _CORE + "one step per trie node"
_SAMPLE_LIMIT = "internal error: kernel _sample_evict" + _CORE + "tokens + marked edges + 1 rounds"
_LFU_EVICT_LIMIT = "internal error: kernel _lfu_evict" + _CORE + "heap entries + tokens + 1 rounds"
_NOTHING_TO_EVICT = "nothing left to evict: the batch footprint exceeds the budget"
#: the rules :func:`run_batches` interprets
RANDOM_LEAF, RLT, LFU = 0, 1, 2
# indices into the int64 ``counters`` array of an edge cache's state (the heap's size first: heap_push and
# heap_pop read it in cell 0)
_HEAP, _SIZE, _POOL, _MARKED, _STEP, _PHASES = range(6)
#: the step limit of one bounded draw's rejection loop (see :func:`bounded_draw`)
DRAW_ROUNDS = 256


class EdgeState:
    """The arrays of one run over ``trie``: the trie (``parent``, ``edge_len``, ``ends``), the cache (``kept``,
    ``children``), marks (``marked``; RLT's list of marked edges ``marked_list``/``listed``), the candidate pool
    (``pool``, ``slot``), ``seen[v]`` (the last batch whose paths hold v), ``on`` (scratch space for the batch's
    edges), ``counters`` = [heap entries, cached tokens, pool size, marked-list length, batches served, phases],
    and LFU's ``count``, ``last`` and ``heap``."""

    def __init__(self, trie: PrefixTrie) -> None:
        n = trie.n_nodes
        self.parent = np.asarray(trie.parent, dtype=np.int64)
        self.edge_len = np.asarray(trie.edge_len, dtype=np.int64)
        self.ends = np.asarray(trie.end, dtype=np.int64)
        self.kept, self.children, self.marked_list, self.pool, self.on, self.count, self.last = np.zeros(
            (7, n), np.int64
        )
        self.marked, self.listed = np.zeros((2, n), dtype=np.uint8)
        self.slot, self.seen = np.full((2, n), -1, dtype=np.int64)
        self.counters = np.zeros(6, dtype=np.int64)
        self.counters[_PHASES] = 1
        self.heap = np.zeros((2, 64), dtype=np.int64)

    def arrays(self) -> tuple:
        """The arguments of :func:`run_batches` after the queries, in its order."""
        return (
            self.parent, self.edge_len, self.kept, self.children, self.marked, self.listed, self.marked_list,
            self.pool, self.slot, self.seen, self.on, self.counters, self.count, self.last, self.heap,
        )  # fmt: skip


@njit(cache=True, inline="always")
def _join_pool(pool, slot, pool_size, v):
    """v joins the candidate pool at its end (if not in it)."""
    if slot[v] < 0:
        pool[pool_size[0]] = v
        slot[v] = pool_size[0]
        pool_size[0] += 1


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")  # called per eviction: no call overhead
def _sample_evict(
    tokens, overflow, step, parent, kept, children, marked, listed, marked_list, pool, slot, seen, counters,
    next_uint32, rng_state, marking, min_block,
):  # fmt: skip
    """The samplers' eviction of ``tokens`` leaf tokens, stopping early only when nothing is left to evict (an
    error before ``overflow``): blocks of uniform draws over the pool, each block cut just after the first draw
    that empties an edge (the rest of it drawn but not applied), an empty pool starting a new phase (``marking``,
    RLT) or ending what can be evicted."""
    pool_size = counters[_POOL : _POOL + 1]
    freed = 0
    # each round frees at least one token (a block takes at least one draw), starts a phase that unmarks at least
    # one edge, or ends: at most tokens + marked edges + 1 rounds
    rounds_left = tokens + counters[_MARKED] + 1
    while tokens > 0:
        if rounds_left == 0:
            raise RuntimeError(_SAMPLE_LIMIT)
        rounds_left -= 1
        if pool_size[0] == 0:
            if marking and _new_phase(step, kept, children, marked, listed, marked_list, pool, slot, seen, counters):
                continue
            if freed >= overflow:
                break
            raise RuntimeError(_NOTHING_TO_EVICT)
        m = pool_size[0]
        block = tokens
        if tokens > min_block and tokens > 2 * m:  # else the block is ``tokens`` whatever c is (c >= 1)
            smallest = kept[pool[0]]
            for i in range(1, m):
                smallest = min(smallest, kept[pool[i]])
                if 2 * m * smallest <= min_block:
                    break
            block = min(tokens, max(2 * m * smallest, min_block))
        taken, emptied = 0, -1
        while taken < block:  # a draw per round, applied at once: at most ``block`` rounds
            taken += 1
            v = pool[0] if m == 1 else pool[bounded_draw(next_uint32, rng_state, m)]
            kept[v] -= 1
            if kept[v] == 0:
                emptied = v
                break
        if m > 1:  # the rest of the block is drawn (the stream moves past it) but not applied
            for _ in range(block - taken):
                bounded_draw(next_uint32, rng_state, m)
        if emptied >= 0:  # it leaves the pool, and its parent may become a candidate
            _leave_pool(pool, slot, pool_size, emptied)
            p = parent[emptied]
            children[p] -= 1
            if p != 0 and children[p] == 0 and marked[p] == 0:
                _join_pool(pool, slot, pool_size, p)
        tokens -= taken
        freed += taken
        counters[_SIZE] -= taken


@njit(cache=True)
def _lfu_push(count, last, heap, counters, v):
    n = count.size
    heap_push(heap[0], heap[1], counters, count[v], last[v] * (n + 1) + n - v)


@njit(cache=True, inline="always")  # called per eviction: no call overhead
def _lfu_evict(tokens, need, step, parent, kept, children, seen, counters, count, last, heap):
    """LFU-leaf's eviction: take tokens from the tail of the top valid leaf edge until ``tokens`` are freed; with
    nothing left to evict, stop if ``need`` tokens are free, else raise. The batch's edges already have this step
    as their last request, so none of their entries is valid, and a parent on the batch's paths is pushed after
    the batch, not here.

    Each round pops an entry or frees the last tokens, and an entry is pushed only for a parent whose last
    child was emptied (at least one token freed): at most heap entries + tokens + 1 rounds."""
    n = kept.size
    freed = 0
    rounds_left = counters[_HEAP] + tokens + 1
    while tokens > 0:
        if rounds_left == 0:
            raise RuntimeError(_LFU_EVICT_LIMIT)
        rounds_left -= 1
        if counters[_HEAP] == 0:
            if freed >= need:
                break
            raise RuntimeError(_NOTHING_TO_EVICT)
        a, b = heap[0, 0], heap[1, 0]
        v = n - b % (n + 1)
        if kept[v] == 0 or children[v] > 0 or a != count[v] or b // (n + 1) != last[v]:
            heap_pop(heap[0], heap[1], counters)
            continue
        run = min(tokens, kept[v])
        kept[v] -= run
        counters[_SIZE] -= run
        tokens -= run
        freed += run
        if kept[v] == 0:
            heap_pop(heap[0], heap[1], counters)
            p = parent[v]
            children[p] -= 1
            if p != 0 and children[p] == 0 and seen[p] != step:
                _lfu_push(count, last, heap, counters, p)


@njit(cache=True)
def run_batches(
    ends, batch, hits, parent, edge_len, kept, children, marked, listed, marked_list, pool, slot, seen, on,
    counters, count, last, heap, budget, next_uint32, rng_state, rule, allocation, min_block,
):  # fmt: skip
    """Serve the queries ending at trie nodes ``ends`` in consecutive batches of ``batch`` (the last may be
    shorter) under ``rule`` (:data:`LFU`, :data:`RLT` or :data:`RANDOM_LEAF`), writing each query's hits into
    ``hits``; return LFU's (possibly enlarged) heap.

    Per batch, as the per-edge classes serve: hits against the cache before the batch; LFU counts a request of
    every path edge per query, this step its last; the samplers mark the batch's edges (ascending ids), which
    leave the pool; with ``missing`` uncached tokens overflowing the budget by ``overflow`` > 0, the rule evicts
    ``overflow`` tokens (shortfall) or ``missing`` (``allocation``, stopping early only when nothing is left to
    evict, an error before ``overflow``). Then the batch's paths are filled; LFU pushes the batch's childless
    edges with their new keys, and random-leaf unmarks the batch's edges again in ascending ids."""
    n_nodes = kept.size
    pool_size = counters[_POOL : _POOL + 1]
    lfu, marking = rule == LFU, rule == RLT
    for start in range(0, ends.size, batch):
        stop = min(start + batch, ends.size)
        step = counters[_STEP]
        counters[_STEP] += 1
        n_on, missing = 0, 0
        for i in range(start, stop):
            h = 0
            v = ends[i]
            rounds_left = n_nodes  # a root path: at most (trie nodes - 1) nodes below the root
            while v != 0:
                if rounds_left == 0:
                    raise RuntimeError(_RUN_BATCHES_LIMIT)
                rounds_left -= 1
                h += kept[v]
                if lfu:
                    count[v] += 1
                    last[v] = step
                if seen[v] != step:
                    seen[v] = step
                    on[n_on] = v
                    n_on += 1
                    missing += edge_len[v] - kept[v]
                v = parent[v]
            hits[i] = h
        if not lfu:
            if n_on > 1:
                on[:n_on].sort()
            for i in range(n_on):
                v = on[i]
                marked[v] = 1
                _leave_pool(pool, slot, pool_size, v)
                if marking and listed[v] == 0:
                    listed[v] = 1
                    marked_list[counters[_MARKED]] = v
                    counters[_MARKED] += 1
        overflow = counters[_SIZE] + missing - budget
        if overflow > 0:
            tokens = missing if allocation else overflow
            if lfu:
                _lfu_evict(tokens, overflow, step, parent, kept, children, seen, counters, count, last, heap)
            else:
                _sample_evict(
                    tokens, overflow, step, parent, kept, children, marked, listed, marked_list, pool, slot, seen,
                    counters, next_uint32, rng_state, marking, min_block,
                )  # fmt: skip
        for i in range(n_on):
            v = on[i]
            if kept[v] < edge_len[v]:
                if kept[v] == 0:
                    children[parent[v]] += 1
                counters[_SIZE] += edge_len[v] - kept[v]
                kept[v] = edge_len[v]
        if lfu:
            heap = grow_columns(heap, counters[_HEAP] + n_on + 1)
            for i in range(n_on):
                if children[on[i]] == 0:
                    _lfu_push(count, last, heap, counters, on[i])
        elif not marking:
            for i in range(n_on):
                v = on[i]
                marked[v] = 0
                if children[v] == 0:
                    _join_pool(pool, slot, pool_size, v)
    return heap


class _CompiledEdgeCache(KernelServed):
    """A per-edge rule's cache served batch by batch through :func:`run_batches`: the same hits, batch for batch,
    as the per-edge class ``rule`` from the same seed."""

    _SIZE_CELL = _SIZE

    def __init__(self, rule: type, trie: PrefixTrie, budget: int, *, min_block: int = _MIN_BLOCK, **options) -> None:
        super().__init__(trie, budget, **options)
        self.name = rule.name
        self._rule = self._kernel_rule(rule)
        self._max_steps = (1 << 62) // (trie.n_nodes + 1) - 1  # LFU's int64 heap keys
        self._min_block = int(min_block)
        self._rng = np.random.default_rng(options.get("seed"))  # kept alive: the kernel draws from its state
        self._bits = bit_source(self._rng)
        self._state = EdgeState(trie)
        self._scalars = self._state.counters
        self._ends = self._state.ends

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        state = self._state
        if self._rule == LFU and state.counters[_STEP] + -(-ends.size // batch) > self._max_steps:
            raise ValueError("too many steps for the LFU core's int64 heap keys")
        state.heap = run_batches(
            ends, int(batch), hits, *state.arrays(), self.budget, *self._bits, self._rule,
            self.evict_amount == "allocation", self._min_block,
        )  # fmt: skip

    def cached_prefix(self, j: int) -> int:
        state = self._state
        return int(cached_prefix_of(state.parent, state.kept, state.ends[j]))

    def kept(self) -> dict[int, int]:
        return kept_of_array(self._state.kept)

    @staticmethod
    def _kernel_rule(rule: type) -> int:
        """The code :func:`run_batches` interprets for the per-edge class ``rule``."""
        raise NotImplementedError


class CompiledLFU(_CompiledEdgeCache):
    """LFU-leaf's cache served through :func:`run_batches`: the same hits, batch for batch, as
    :class:`~kvtheory.policies.lfu.LeafLFU`."""

    @staticmethod
    def _kernel_rule(rule: type) -> int:
        return LFU


class CompiledLeafSampler(_CompiledEdgeCache):
    """RLT or random-leaf (``rule.marking``) served through :func:`run_batches`: the same hits and draws, batch
    for batch, as the per-edge class ``rule`` from the same seed."""

    randomized = True

    @staticmethod
    def _kernel_rule(rule: type) -> int:
        return RLT if rule.marking else RANDOM_LEAF

    @property
    def phases(self) -> int:
        """RLT's phases so far (as RandomizedLeafToken.phases)."""
        return int(self._state.counters[_PHASES])
