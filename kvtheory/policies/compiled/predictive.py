"""The compiled (numba) core of predictive-marker (:mod:`kvtheory.policies.predictive_marker`) on any prefix trie.

It serves batches as the per-edge class does, the same hits and the same draws from the same seed: each query's
hits against the cache before the batch; the keys K(v) = min(p(v), K(c) over v's requested or cached child
edges c) of the batch's edges, children first, from the predictions of its step (``told``); the batch's edges
marked (none is a candidate); the last t of its missing tokens, in request order, as causes (t = the shortfall,
or the whole allocation); the paths filled; the keys stored.

A cause at position p of edge v continues the chain of the token evicted there in this phase
(``chain_phase[offset[v] + p - 1]`` is the current phase; ``chain_len`` its chain's length) or starts one. A
chain of length L <= H_k evicts the last token of the candidate of the largest (key, depth of its leaf token,
edge): the top of an indexed max-heap of the candidates. A longer one draws
``integers(0, n)`` over the n candidates in ascending edge order (Lemire's rejection on the bit generator's
32-bit output, :func:`~kvtheory.policies.compiled.edge_cache.bounded_draw`) and finds the drawn one in a Fenwick
tree of the candidates. Each eviction costs O(log n), n the trie's nodes: no scan of the candidates, which
is what the per-edge engine pays when many of them share a key and their tokens go round-robin. A run of causes
that start chains (length 1 <= H_k) is served at once (:func:`_furthest_run`): its steps take the last tokens
of the candidates of the top key, deepest first, up to the first that empties one (its parent may join), so they
cut those candidates down to a water level (:func:`water_level`) at O(log n) per candidate, not per token.

Every loop runs over a range; walks up the trie stop at its node count, the rounds of a run of causes at its
length plus one (an internal error past each), heap and tree walks at their height (64 levels).
"""

from __future__ import annotations

import numpy as np

from kvtheory.errors import InputError
from kvtheory.jit import njit
from kvtheory.model.batches import batches
from kvtheory.model.predictions import Requests
from kvtheory.policies.base import KernelServed
from kvtheory.policies.compiled.edge_cache import bounded_draw
from kvtheory.policies.compiled.radix import cached_prefix_of
from kvtheory.policies.native import bit_source
from kvtheory.policies.predictive_marker import harmonic

# cells of the int64 ``counters`` array
_HEAP, _CANDIDATES, _PHASE, _SIZE, _STEP = 0, 1, 2, 3, 4
_LEVELS = 64
_KERNEL = "internal error: kernel serve_batches of the compiled predictive-marker core"
# whole messages as module constants: a string built inside a kernel makes numba raise a dynamic exception, which
# slows the kernel that holds it
_PAST_PREDICTIONS = _KERNEL + " ran past the predictions"
_PATH_LIMIT = _KERNEL + " exceeded its step limit of (trie nodes) steps up a path"
_ROUND_LIMIT = _KERNEL + " exceeded its step limit of (causes + 1) rounds per run of causes"


@njit(cache=True)
def _swap(i, j, heap, rank, value, where):
    heap[i], heap[j] = heap[j], heap[i]
    rank[i], rank[j] = rank[j], rank[i]
    value[i], value[j] = value[j], value[i]
    where[heap[i]], where[heap[j]] = i, j


@njit(cache=True)
def _sift_up(i, heap, rank, value, where):
    """Move heap entry i up to its place: entries rank by (``rank`` = key, ``value`` = depth * nodes + edge)."""
    for _ in range(_LEVELS):
        if i == 0:
            return
        up = (i - 1) // 2
        if rank[i] < rank[up] or (rank[i] == rank[up] and value[i] <= value[up]):
            return
        _swap(i, up, heap, rank, value, where)
        i = up


@njit(cache=True)
def _sift_down(i, size, heap, rank, value, where):
    """Move heap entry i down to its place."""
    for _ in range(_LEVELS):
        best = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < size and (
                rank[child] > rank[best] or (rank[child] == rank[best] and value[child] > value[best])
            ):
                best = child
        if best == i:
            return
        _swap(i, best, heap, rank, value, where)
        i = best


@njit(cache=True)
def _fenwick_add(tree, v, delta):
    i = v + 1
    for _ in range(_LEVELS):
        if i >= tree.size:
            return
        tree[i] += delta
        i += i & -i


@njit(cache=True)
def _fenwick_select(tree, rank):
    """The candidate of 0-based ``rank`` in ascending edge order."""
    step = 1
    for _ in range(_LEVELS):
        if 2 * step >= tree.size:
            break
        step *= 2
    position = 0
    for _ in range(_LEVELS):
        if step == 0:
            break
        if position + step < tree.size and tree[position + step] <= rank:
            position += step
            rank -= tree[position]
        step //= 2
    return position


@njit(cache=True)
def _join(v, pool, key, depth_of_leaf):
    """Edge v, whose leaf token is at ``depth_of_leaf``, becomes a candidate. ``pool`` = (candidate flags,
    Fenwick tree, heap of edges, their keys, their depth * nodes + edge, each edge's heap slot, counters)."""
    candidate, tree, heap, rank, value, where, counters = pool
    candidate[v] = 1
    counters[_CANDIDATES] += 1
    _fenwick_add(tree, v, 1)
    _push(v, key[v], depth_of_leaf * candidate.size + v, heap, rank, value, where, counters)


@njit(cache=True)
def _push(v, v_rank, v_value, heap, rank, value, where, counters):
    """Candidate v onto the heap, ranked by (``v_rank``, ``v_value``)."""
    i = counters[_HEAP]
    heap[i], rank[i], value[i], where[v] = v, v_rank, v_value, i
    counters[_HEAP] += 1
    _sift_up(i, heap, rank, value, where)


@njit(cache=True)
def _unheap(i, heap, rank, value, where, counters):
    """The candidate in heap slot i off the heap (it stays a candidate)."""
    where[heap[i]] = -1
    last = counters[_HEAP] - 1
    counters[_HEAP] = last
    if i != last:
        moved = heap[last]
        heap[i], rank[i], value[i], where[moved] = moved, rank[last], value[last], i
        _sift_up(i, heap, rank, value, where)
        _sift_down(where[moved], last, heap, rank, value, where)


@njit(cache=True)
def _leave(v, pool):
    """Edge v stops being a candidate (if it is one), on the heap or off it."""
    candidate, tree, heap, rank, value, where, counters = pool
    if candidate[v] == 0:
        return
    candidate[v] = 0
    counters[_CANDIDATES] -= 1
    _fenwick_add(tree, v, -1)
    if where[v] >= 0:
        _unheap(where[v], heap, rank, value, where, counters)


@njit(cache=True)
def _new_phase(on_path, marked, children, pool, key, floor, kept):
    """Clear every mark off the batch's paths (a new phase); False if there was none to clear."""
    cleared = False
    for v in range(marked.size):
        if marked[v] and not on_path[v]:
            marked[v] = 0
            cleared = True
            if kept[v] > 0 and children[v] == 0:
                _join(v, pool, key, floor[v] + kept[v])
    if cleared:
        pool[-1][_PHASE] += 1
    return cleared


@njit(cache=True)
def water_level(group, g, causes, stop_depth, stop_edge, floor, kept, ids):
    """The cut of a run of one-token steps over the ``g`` leaves ``group`` (in (depth of the leaf token, edge)
    order, deepest first), each step taking the last token of the leaf first in that order: up to ``causes``
    steps, up to and including the step that takes the token at depth ``stop_depth`` of leaf ``stop_edge``. The
    tokens go by depth, deepest first, and at one depth by edge, largest first, so the group is cut down to a
    water level x: every token deeper than x goes, and those at depth x of the largest edge ids, as many as are
    left. Returns (tokens taken, x, the smallest edge id that loses its token at depth x, the number of leaves at
    or above x), with ``ids`` holding those leaves' ids in ascending order."""
    stop = 0  # the position of the stop in the order
    for i in range(g):
        depth = floor[group[i]] + kept[group[i]]
        stop += max(depth - stop_depth, 0) + (1 if depth >= stop_depth and group[i] >= stop_edge else 0)
    taken = min(causes, stop)
    prefix = level = 0
    above = g
    for j in range(1, g + 1):  # the smallest x with T(x) = (tokens of the group deeper than x) <= taken
        prefix += floor[group[j - 1]] + kept[group[j - 1]]
        low = floor[group[j]] + kept[group[j]] if j < g else 0
        if prefix - j * low > taken or j == g:
            level = max((prefix - taken + j - 1) // j, low + 1)
            above = j
            prefix -= j * level
            break
    left = taken - prefix  # tokens at depth ``level`` that go: the largest edge ids among the first ``above``
    ids[:above] = group[:above]
    ids[:above].sort()
    return taken, level, ids[above - left] if left > 0 else floor.size, above


@njit(cache=True)
def _furthest_run(causes, floor, kept, heap, rank, value, where, counters, group, ids):
    """Up to ``causes`` evictions of the top candidate's last token, taken at once: the candidates of the heap's
    top key are popped, deepest first, into ``group`` until every step up to the first that empties a candidate
    (its parent may join), or the first ``causes``, takes a token of the group; then cut down as
    :func:`water_level` says. Returns (group size, tokens taken, x, cut, leaves at or above x)."""
    key_of = rank[0]
    g = total = 0
    stop_depth = stop_edge = -1
    for _ in range(counters[_HEAP]):
        w = heap[0]
        if rank[0] != key_of:
            break
        depth = floor[w] + kept[w]
        if g > 0 and (total - g * depth >= causes or stop_depth > depth):
            break
        _unheap(0, heap, rank, value, where, counters)
        group[g] = w
        g += 1
        total += depth
        if floor[w] + 1 > stop_depth or (floor[w] + 1 == stop_depth and w > stop_edge):
            stop_depth, stop_edge = floor[w] + 1, w
    taken, level, cut, above = water_level(group, g, causes, stop_depth, stop_edge, floor, kept, ids)
    return g, taken, level, cut, above


@njit(cache=True)
def _emptied(u, pool, parent, children, marked, key, floor, kept):
    """Candidate u lost its last token: it leaves, and its parent may join."""
    _leave(u, pool)
    up = parent[u]
    children[up] -= 1
    if up != 0 and children[up] == 0 and marked[up] == 0:
        _join(up, pool, key, floor[up] + kept[up])


@njit(cache=True)
def _evict(
    run_edge, run_first, run_last, runs, overflow, on_path, parent, floor, offset, kept, children, marked, key,
    pool, chain_len, chain_phase, threshold, group, ids, next_uint32, rng_state,
):  # fmt: skip
    """One eviction per cause (positions first..last of each of the ``runs`` cause edges, in order); returns the
    tokens freed, or -1 when no candidate is left, even after a new phase, before ``overflow`` tokens went. Causes
    not evicted in this phase start chains of length 1 <= H_k: a run of them is served at once
    (:func:`_furthest_run`)."""
    tree, heap, rank, value, where, counters = pool[1], pool[2], pool[3], pool[4], pool[5], pool[6]
    nodes = parent.size
    freed = 0
    for r in range(runs):
        v, p, last = run_edge[r], run_first[r], run_last[r]
        hit, hit_phase = -1, -1  # the next cause of the run evicted in phase ``hit_phase`` (last + 1: none)
        for _ in range(last - p + 2):  # every round takes a token or more
            if p > last:
                break
            if counters[_CANDIDATES] == 0:
                renewed = _new_phase(on_path, marked, children, pool, key, floor, kept)
                if not renewed or counters[_CANDIDATES] == 0:
                    return freed if freed >= overflow else -1
            phase = counters[_PHASE]
            if hit < p or hit_phase != phase:
                hit, hit_phase = last + 1, phase
                for q in range(p, last + 1):
                    if chain_phase[offset[v] + q - 1] == phase:
                        hit = q
                        break
            if hit > p:
                g, taken, level, cut, above = _furthest_run(
                    hit - p, floor, kept, heap, rank, value, where, counters, group, ids
                )
                for i in range(g):
                    u = group[i]
                    depth = floor[u] + kept[u]
                    if i < above:
                        depth = level - 1 if u >= cut else level
                    lo, hi = offset[u] + depth - floor[u], offset[u] + kept[u]  # the tokens u gives up
                    chain_len[lo:hi] = 1
                    chain_phase[lo:hi] = phase
                    kept[u] = depth - floor[u]
                    if kept[u] == 0:
                        _emptied(u, pool, parent, children, marked, key, floor, kept)
                    else:
                        _push(u, key[u], depth * nodes + u, heap, rank, value, where, counters)
            else:
                taken = 1
                token = offset[v] + p - 1
                length = chain_len[token] + 1  # evicted in this phase: its chain goes on
                chain_phase[token] = 0
                if length <= threshold:
                    u = heap[0]
                else:
                    m = counters[_CANDIDATES]
                    u = _fenwick_select(tree, 0 if m == 1 else bounded_draw(next_uint32, rng_state, m))
                evicted = offset[u] + kept[u] - 1
                chain_len[evicted] = length
                chain_phase[evicted] = phase
                kept[u] -= 1
                if kept[u] == 0:
                    _emptied(u, pool, parent, children, marked, key, floor, kept)
                else:
                    i = where[u]
                    value[i] -= nodes  # one token shallower
                    _sift_down(i, counters[_HEAP], heap, rank, value, where)
            p += taken
            freed += taken
        if p <= last:
            raise RuntimeError(_ROUND_LIMIT)
    return freed


@njit(cache=True)
def batch_keys(step, request_offsets, request_edges, predicted, told, batch_edges, edges, tree, on_path, kept, key):
    """``told[v]`` = K(v) = min(p(v), K(c) over v's child edges c requested now or cached) for the batch's ``edges``
    edges ``batch_edges`` (flagged in ``on_path``), children first, from the predictions p of step ``step``; ``key``
    holds the cached edges' keys and ``tree`` is (floor, edge_len, child_start, child_list). Shared by the
    predictive-marker, guard/lnonmarker and bo-rlt-switch cores."""
    floor, edge_len, child_start, child_list = tree
    for r in range(request_offsets[step - 1], request_offsets[step]):
        told[request_edges[r]] = predicted[r]
    depth = np.empty(edges, dtype=np.int64)
    for i in range(edges):
        depth[i] = floor[batch_edges[i]] + edge_len[batch_edges[i]]
    for i in np.argsort(-depth):  # children first: K(v) = min(p(v), K(c) over requested or cached c)
        v = batch_edges[i]
        value = told[v]
        for c in child_list[child_start[v] : child_start[v + 1]]:
            if on_path[c]:
                value = min(value, told[c])
            elif kept[c] > 0:
                value = min(value, key[c])
        told[v] = value


@njit(cache=True)
def serve_batches(
    ends, batch, hits, parent, floor, edge_len, offset, child_start, child_list, request_offsets, request_edges,
    predicted, kept, children, marked, key, candidate, tree, heap, rank, value, where, counters, chain_len,
    chain_phase, on_path, batch_edges, told, path, run_edge, run_first, run_last, group, ids, budget, allocation,
    threshold, next_uint32, rng_state,
):  # fmt: skip
    """Serve the queries ending at trie nodes ``ends`` in batches of ``batch`` (module docstring), writing their
    hits; step ``counters[_STEP] + 1`` is the first batch's."""
    n = parent.size
    pool = (candidate, tree, heap, rank, value, where, counters)
    for start in range(0, ends.size, batch):
        stop = min(start + batch, ends.size)
        counters[_STEP] += 1
        step = counters[_STEP]
        if step >= request_offsets.size:
            raise RuntimeError(_PAST_PREDICTIONS)
        edges = runs = missing = 0
        for q in range(start, stop):
            length = 0
            v = ends[q]
            for _ in range(n):
                if v == 0:
                    break
                path[length] = v
                length += 1
                v = parent[v]
            if v != 0:
                raise RuntimeError(_PATH_LIMIT)
            total = 0
            for i in range(length):
                total += kept[path[i]]
            hits[q] = total
            for i in range(length - 1, -1, -1):  # root to leaf: the order the batch requests its tokens
                u = path[i]
                if on_path[u]:
                    continue
                on_path[u] = 1
                batch_edges[edges] = u
                edges += 1
                if kept[u] < edge_len[u]:
                    run_edge[runs], run_first[runs], run_last[runs] = u, kept[u] + 1, edge_len[u]
                    runs += 1
                    missing += edge_len[u] - kept[u]
        tree = (floor, edge_len, child_start, child_list)
        batch_keys(step, request_offsets, request_edges, predicted, told, batch_edges, edges, tree, on_path, kept, key)
        for i in range(edges):
            marked[batch_edges[i]] = 1
            _leave(batch_edges[i], pool)
        overflow = counters[_SIZE] + missing - budget
        if overflow > 0:
            skip = 0 if allocation else missing - overflow  # the causes are the last tokens requested
            first = 0
            for _ in range(runs):
                if skip < run_last[first] - run_first[first] + 1:
                    break
                skip -= run_last[first] - run_first[first] + 1
                first += 1
            run_first[first] += skip
            freed = _evict(
                run_edge[first:], run_first[first:], run_last[first:], runs - first, overflow, on_path, parent,
                floor, offset, kept, children, marked, key, pool, chain_len, chain_phase, threshold, group, ids,
                next_uint32, rng_state,
            )  # fmt: skip
            if freed < 0:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            counters[_SIZE] -= freed
        for i in range(edges):
            v = batch_edges[i]
            if kept[v] < edge_len[v]:
                if kept[v] == 0:
                    children[parent[v]] += 1
                counters[_SIZE] += edge_len[v] - kept[v]
                kept[v] = edge_len[v]
            key[v] = told[v]
            on_path[v] = 0


class ToldKernel(KernelServed):
    """A compiled core of a policy that follows predictions (predictive-marker's here, guard's, lnonmarker's and
    bo-rlt-switch's): it serves only the schedule its predictions were made for, and ``self._counters[_step_cell]``
    counts the batches served."""

    _step_cell = _STEP

    def serve_all(self, batch: int) -> np.ndarray:
        """Every query's hits, in batches of ``batch``, for the schedule the predictions were made for."""
        requests = Requests.of(self.trie, batches(len(self._ends), batch))
        made = self._predictions.requests
        if not (np.array_equal(requests.edges, made.edges) and np.array_equal(requests.offsets, made.offsets)):
            raise InputError(f"policy {self.name!r}: the batches are not the ones the predictions were made for")
        return super().serve_all(batch)

    def serve(self, batch) -> list[int]:
        on_paths = {v for j in batch for v in self.trie.path(j)}
        self._predictions.told(int(self._counters[self._step_cell]) + 1, on_paths, self.name)
        return super().serve(batch)


class CompiledPredictiveMarker(ToldKernel):
    """predictive-marker (or a class of it bound to a predictor, ``policy``) served through
    :func:`serve_batches`: the same hits, batch for batch, and the same draws as the per-edge class from the same
    seed and ``predictions``."""

    randomized = True
    _KEPT_ROW = 0
    _SIZE_CELL = _SIZE

    def __init__(self, policy: type, trie, budget: int, *, seed=None, evict_amount="shortfall", predictions=None):
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        self.name = policy.name
        self._predictions = policy.required(predictions)
        n = trie.n_nodes
        parent = np.asarray(trie.parent, dtype=np.int64)
        edge_len = np.asarray(trie.edge_len, dtype=np.int64)
        self._parent = parent
        self._ends = np.asarray(trie.end, dtype=np.int64)
        child_count = np.bincount(parent[1:], minlength=n)
        child_list = np.concatenate([np.asarray(c, dtype=np.int64) for c in trie.children] + [np.zeros(0, np.int64)])
        requests = predictions.requests
        self._trie_arrays = (
            parent, np.asarray(trie.depth, dtype=np.int64)[parent.clip(0)], edge_len,
            np.concatenate(([0], np.cumsum(edge_len)[:-1])), np.concatenate(([0], np.cumsum(child_count))),
            child_list, requests.offsets, requests.edges, np.asarray(predictions.predicted, dtype=np.float64),
        )  # fmt: skip
        tokens = int(edge_len.sum())
        self._counters = np.zeros(5, dtype=np.int64)
        self._counters[_PHASE] = 1
        self._state = [
            np.zeros(n, dtype=np.int64),  # kept
            np.zeros(n, dtype=np.int64),  # cached children
            np.zeros(n, dtype=np.uint8),  # marked
            np.full(n, np.inf),  # key
            np.zeros(n, dtype=np.uint8),  # candidate
            np.zeros(n + 1, dtype=np.int64),  # Fenwick tree of the candidates
            np.zeros(n, dtype=np.int64),  # heap of the candidates
            np.zeros(n),  # their keys
            np.zeros(n, dtype=np.int64),  # their depth * nodes + edge
            np.full(n, -1, dtype=np.int64),  # where each candidate is in the heap
            self._counters,
            np.zeros(tokens, dtype=np.int32),  # chain length of each token evicted in its phase
            np.zeros(tokens, dtype=np.int32),  # and that phase
        ]
        self._scratch = (
            np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
        )  # fmt: skip
        self._scalars = self._counters
        self._rng = np.random.default_rng(seed)  # kept alive: the kernel draws from its state
        self._bits = bit_source(self._rng)
        longest = max((trie.depth[end] for end in trie.end), default=1)
        self.threshold = harmonic(max(1, budget - longest + 1))

    @property
    def phases(self) -> int:
        """Phases so far (as PredictiveMarker.phases)."""
        return int(self._counters[_PHASE])

    def cached_prefix(self, j: int) -> int:
        return int(cached_prefix_of(self._parent, self._state[0], self._ends[j]))

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        serve_batches(
            ends, int(batch), hits, *self._trie_arrays, *self._state, *self._scratch, self.budget,
            self.evict_amount == "allocation", self.threshold, *self._bits,
        )  # fmt: skip
