"""The compiled (numba) core of guard and lnonmarker (:mod:`kvtheory.policies.guard`,
:mod:`kvtheory.policies.lnonmarker`, both on :mod:`kvtheory.policies.predicted_marking`) on any prefix trie.

It serves batches as the per-token classes do, the same hits and the same draws from the same seed: each query's
hits against the cache before the batch; the keys K(v) = min(p(v), K(c) over v's requested or cached child
edges c) of the batch's edges, children first, from the predictions of its step; lnonmarker's new phase when the
batch arrives with ``phase_tokens`` >= k; the batch's edges marked (none is a candidate, none an off-path leaf);
the last t of its missing tokens, in request order, as causes (t = the shortfall, or the whole allocation); the
paths filled; the keys stored.

Per trie node it keeps the candidates C (unmarked cached leaves) and the off-path leaves L (cached leaves off the
batch's paths), each as flags and a Fenwick tree for the uniform draws (one ``integers(0, m)`` over the m edges of
the pool in ascending order: :func:`~kvtheory.policies.compiled.edge_cache.bounded_draw`, none when m = 1, as numpy
draws none), and an indexed max-heap of L (guard) or C (lnonmarker) ranked by (unguarded, key, depth of the leaf
token, edge) (every edge is unguarded for lnonmarker). Per token it keeps the phase in which it was last evicted
(with lnonmarker's attached staleness) and the phase in which guard guarded it: a new phase forgets both by
counting on. lnonmarker's stale count of edge v is its count when first changed in the phase (``snap``), else
its count now.

A cause that draws takes one token. A run of causes that take the furthest leaf (guard: not evicted in this
phase; lnonmarker: clean) is served at once (:func:`_furthest_run`): one-token steps take, among the leaves of the
heap's top rank and key, the deepest token first (ties: the larger edge id), so the run cuts those leaves down to a
water level (:func:`~kvtheory.policies.compiled.predictive.water_level`), up to the first step after which the rule
may choose otherwise (a leaf emptied: its parent may join; guard: a leaf's next token guarded, or the run's next
cause evicted in this phase). The leaves a run leaves at the water level x rank in a known order (depth x by
descending edge id, then depth x - 1 likewise): they go, merged with what is left of it, into the bundle, an array
in rank order that counts as part of the heap (each run takes the top of the two); an edge leaves the bundle by
its mark in ``where``, and guard's new phase (its ranks change) puts the bundle back on the heap. A run costs
O(1) per leaf it takes from the bundle and O(log n) heap steps (n the trie's nodes) per other leaf, not per token.

Every loop runs over a range; walks up the trie stop at its node count, heap and tree walks at 64 levels, the
rounds of a run of causes at its length plus one (an internal error past each).
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit
from kvtheory.policies.compiled.edge_cache import bounded_draw
from kvtheory.policies.compiled.predictive import ToldKernel, _fenwick_add, _fenwick_select, batch_keys, water_level
from kvtheory.policies.compiled.radix import cached_prefix_of
from kvtheory.policies.native import bit_source

GUARD, LNONMARKER = 0, 1
# cells of the int64 ``counters`` array (``_FRONT``, ``_END``: the bundle's slots)
_HEAP, _CANDIDATES, _LEAVES, _PHASE, _SIZE, _STEP, _PHASE_TOKENS, _FRONT, _END = range(9)
_BUNDLED = -2  # ``where`` of an edge in the bundle (-1: in neither the heap nor the bundle)
_LEVELS = 64
_KERNEL = "internal error: kernel serve_batches of the compiled guard/lnonmarker core"
# whole messages as module constants (a string built inside a kernel makes numba raise a dynamic exception)
_PAST_PREDICTIONS = _KERNEL + " ran past the predictions"
_PATH_LIMIT = _KERNEL + " exceeded its step limit of (trie nodes) steps up a path"
_ROUND_LIMIT = _KERNEL + " exceeded its step limit of (causes + 1) rounds per run of causes"
_NOT_EVICTED = _KERNEL + " met a stale missing token not evicted in its phase"


@njit(cache=True, inline="always")
def _above(a, b, prio, key, floor, kept):
    """Whether edge a ranks above edge b in the heap: by (prio, key, depth of the leaf token, edge)."""
    if prio[a] != prio[b]:
        return prio[a] > prio[b]
    if key[a] != key[b]:
        return key[a] > key[b]
    if floor[a] + kept[a] != floor[b] + kept[b]:
        return floor[a] + kept[a] > floor[b] + kept[b]
    return a > b


@njit(cache=True)
def _sift(i, size, heap, where, prio, key, floor, kept):
    """Move heap slot i up, then down, to its place."""
    for _ in range(_LEVELS):
        up = (i - 1) // 2
        if i == 0 or not _above(heap[i], heap[up], prio, key, floor, kept):
            break
        heap[i], heap[up] = heap[up], heap[i]
        where[heap[i]], where[heap[up]] = i, up
        i = up
    for _ in range(_LEVELS):
        best = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < size and _above(heap[child], heap[best], prio, key, floor, kept):
                best = child
        if best == i:
            return
        heap[i], heap[best] = heap[best], heap[i]
        where[heap[i]], where[heap[best]] = i, best
        i = best


@njit(cache=True)
def _push(v, heap, where, prio, ranks, counters):
    i = counters[_HEAP]
    heap[i], where[v] = v, i
    counters[_HEAP] += 1
    _sift(i, i + 1, heap, where, prio, *ranks)


@njit(cache=True)
def _remove(v, heap, where, prio, ranks, counters):
    i = where[v]
    where[v] = -1
    if i < 0:  # off the heap (a bundled edge leaves the bundle)
        return
    last = counters[_HEAP] - 1
    counters[_HEAP] = last
    if i != last:
        moved = heap[last]
        heap[i], where[moved] = moved, i
        _sift(i, last, heap, where, prio, *ranks)


@njit(cache=True)
def _unbundle(pools, ranks):
    """Every edge left in the bundle back on the heap; the bundle empty."""
    heap, where, prio, counters, bundle = pools[4], pools[5], pools[6], pools[7], pools[8]
    for i in range(counters[_FRONT], counters[_END]):
        if where[bundle[i]] == _BUNDLED:
            _push(bundle[i], heap, where, prio, ranks, counters)
    counters[_FRONT] = counters[_END] = 0


@njit(cache=True)
def _rebundle(staged, count, rank_of, rule, offset, guard_phase, pools, ranks, merged):
    """The bundle made of its edges left and the ``count`` edges ``staged`` (in rank order, off the heap and the
    bundle), merged in rank order; a staged edge whose rank (guard: recomputed) is no longer ``rank_of`` goes
    on the heap instead."""
    heap, where, prio, counters, bundle = pools[4], pools[5], pools[6], pools[7], pools[8]
    key, floor, kept = ranks
    size = 0
    for i in range(count):
        u = staged[i]
        if rule == GUARD:
            prio[u] = _unguarded(u, kept, offset, guard_phase, counters[_PHASE])
        if prio[u] != rank_of:
            _push(u, heap, where, prio, ranks, counters)
        else:
            staged[size] = u
            size += 1
    i, j, total = counters[_FRONT], 0, 0
    for _ in range(counters[_END] - i + size):
        if i < counters[_END] and where[bundle[i]] != _BUNDLED:
            i += 1
        elif i < counters[_END] and (j == size or _above(bundle[i], staged[j], prio, key, floor, kept)):
            merged[total] = bundle[i]
            total += 1
            i += 1
        elif j < size:
            merged[total] = staged[j]
            where[staged[j]] = _BUNDLED
            total += 1
            j += 1
    bundle[:total] = merged[:total]
    counters[_FRONT], counters[_END] = 0, total


@njit(cache=True)
def _unguarded(v, kept, offset, guard_phase, phase):
    """1 if edge v's last cached token is not guarded in ``phase``, else 0."""
    return 0 if guard_phase[offset[v] + kept[v] - 1] == phase else 1


@njit(cache=True)
def _add(v, flags, tree, counters, cell):
    if flags[v] == 0:
        flags[v] = 1
        counters[cell] += 1
        _fenwick_add(tree, v, 1)


@njit(cache=True)
def _drop(v, flags, tree, counters, cell):
    if flags[v] == 1:
        flags[v] = 0
        counters[cell] -= 1
        _fenwick_add(tree, v, -1)


@njit(cache=True)
def _add_candidate(v, rule, pools, ranks):
    candidate, ctree, leaf, ltree, heap, where, prio, counters, bundle = pools
    _add(v, candidate, ctree, counters, _CANDIDATES)
    if rule == LNONMARKER and where[v] == -1:
        prio[v] = 1
        _push(v, heap, where, prio, ranks, counters)


@njit(cache=True)
def _drop_candidate(v, rule, pools, ranks):
    candidate, ctree, leaf, ltree, heap, where, prio, counters, bundle = pools
    _drop(v, candidate, ctree, counters, _CANDIDATES)
    if rule == LNONMARKER:
        _remove(v, heap, where, prio, ranks, counters)


@njit(cache=True)
def _add_leaf(v, rule, pools, ranks, offset, guard_phase):
    candidate, ctree, leaf, ltree, heap, where, prio, counters, bundle = pools
    _add(v, leaf, ltree, counters, _LEAVES)
    if rule == GUARD and where[v] == -1:
        prio[v] = _unguarded(v, ranks[2], offset, guard_phase, counters[_PHASE])
        _push(v, heap, where, prio, ranks, counters)


@njit(cache=True)
def _drop_leaf(v, rule, pools, ranks):
    candidate, ctree, leaf, ltree, heap, where, prio, counters, bundle = pools
    _drop(v, leaf, ltree, counters, _LEAVES)
    if rule == GUARD:
        _remove(v, heap, where, prio, ranks, counters)


@njit(cache=True)
def _new_phase(rule, keep_paths, on_path, marked, children, edge_len, pools, ranks):
    """Clear every mark (off the batch's paths if ``keep_paths``): a new phase, its evictions, guards and
    snapshots forgotten (the per-token and per-edge phase stamps count on); False if there was none to clear."""
    heap, where, prio, counters = pools[4], pools[5], pools[6], pools[7]
    kept = ranks[2]
    cleared = False
    tokens = 0
    for v in range(marked.size):
        if not marked[v]:
            continue
        if keep_paths and on_path[v]:
            tokens += edge_len[v]
            continue
        marked[v] = 0
        cleared = True
        if kept[v] > 0 and children[v] == 0 and not on_path[v]:
            _add_candidate(v, rule, pools, ranks)
    if not cleared:
        return False
    counters[_PHASE] += 1
    counters[_PHASE_TOKENS] = tokens
    if rule == GUARD:  # nothing is guarded any more
        _unbundle(pools, ranks)
        size = counters[_HEAP]
        for i in range(size):
            if prio[heap[i]] == 0:
                prio[heap[i]] = 1
                _sift(i, size, heap, where, prio, *ranks)
    return True


@njit(cache=True)
def _barrier(u, causes, rule, offset, floor, kept, guard_phase, guarded_edge, phase):
    """The depth down to which leaf u may give up tokens in one run: its floor (the last token empties it) or,
    for guard, the depth of its deepest guarded token below its top (u's last token then guarded: its rank
    falls); scanned at most ``causes`` + 1 tokens down (below that the run's causes end first)."""
    if rule != GUARD or guarded_edge[u] != phase:
        return floor[u]
    top = offset[u] + kept[u] - 1
    for i in range(1, min(kept[u], causes + 2)):
        if guard_phase[top - i] == phase:
            return floor[u] + kept[u] - i
    return max(floor[u], floor[u] + kept[u] - causes - 2)


@njit(cache=True)
def _furthest_run(causes, rule, offset, pools, ranks, guard_phase, guarded_edge, group, ids):
    """Up to ``causes`` evictions of the furthest leaf token, each the top leaf's last token in (rank, key, depth,
    edge) order, taken at once: the top class (equal rank and key) of the heap and the bundle is popped, deepest
    first, into
    ``group`` until the first ``causes`` tokens in that order, cut just after the first that takes a leaf to its
    :func:`_barrier`, are all in it; the group is then cut down to a water level x (every token deeper than x
    goes, and those at depth x of the largest edge ids, as many as are left). Returns (group size, tokens taken,
    x, the smallest edge id of the group that loses its token at depth x, group members at or above x)."""
    heap, where, prio, counters, bundle = pools[4], pools[5], pools[6], pools[7], pools[8]
    key, floor, kept = ranks
    phase = counters[_PHASE]
    front, end = counters[_FRONT], counters[_END]
    rank_of = key_of = -1
    g = total = 0
    stop_depth = stop_edge = -1
    for _ in range(counters[_HEAP] + end - front):  # the top of the heap and the bundle together, in turn
        for _ in range(end - front):  # past the edges that left the bundle
            if where[bundle[front]] == _BUNDLED:
                break
            front += 1
        w = heap[0] if counters[_HEAP] > 0 else -1
        bundled = front < end and (w < 0 or _above(bundle[front], w, prio, key, floor, kept))
        if bundled:
            w = bundle[front]
        if w < 0 or (g > 0 and (prio[w] != rank_of or key[w] != key_of)):
            break
        rank_of, key_of = prio[w], key[w]
        depth = floor[w] + kept[w]
        if g > 0 and (total - g * depth >= causes or stop_depth > depth):
            break
        if bundled:
            where[w] = -1
            front += 1
        else:
            _remove(w, heap, where, prio, ranks, counters)
        group[g] = w
        g += 1
        total += depth
        barrier = _barrier(w, causes, rule, offset, floor, kept, guard_phase, guarded_edge, phase) + 1
        if barrier > stop_depth or (barrier == stop_depth and w > stop_edge):
            stop_depth, stop_edge = barrier, w
        if rank_of == 0:  # guard with every off-path leaf guarded: one token at a time, its guard dropped
            causes = 1
            break
    taken, level, cut, above = water_level(group, g, causes, stop_depth, stop_edge, floor, kept, ids)
    counters[_FRONT] = front
    return g, taken, level, cut, above, rank_of


@njit(cache=True, inline="always")
def _shorten(u, depth, rule, floor, kept, snap, snap_phase, phase):
    """Leaf u cut down to ``depth``, lnonmarker's snapshot of it taken first."""
    if rule == LNONMARKER and snap_phase[u] != phase:
        snap_phase[u] = phase
        snap[u] = kept[u]
    kept[u] = depth - floor[u]


@njit(cache=True)
def _cut(u, depth, back, rule, on_path, parent, offset, children, marked, pools, ranks, guard_phase, snap, snap_phase):
    """Leaf u, off the heap, cut down to ``depth`` (the tokens below it recorded by the caller): lnonmarker's
    snapshot first; an emptied edge leaves the pools and its parent may join them, else u goes back on the heap
    if ``back``."""
    heap, where, prio, counters = pools[4], pools[5], pools[6], pools[7]
    key, floor, kept = ranks
    _shorten(u, depth, rule, floor, kept, snap, snap_phase, counters[_PHASE])
    if kept[u] == 0:
        _drop_candidate(u, rule, pools, ranks)
        _drop_leaf(u, rule, pools, ranks)
        up = parent[u]
        children[up] -= 1
        if up != 0 and children[up] == 0:
            if not on_path[up]:
                _add_leaf(up, rule, pools, ranks, offset, guard_phase)
            if not marked[up]:
                _add_candidate(up, rule, pools, ranks)
    elif back:
        if rule == GUARD:
            prio[u] = _unguarded(u, kept, offset, guard_phase, counters[_PHASE])
        _push(u, heap, where, prio, ranks, counters)


@njit(cache=True)
def _draw(tree, m, next_uint32, rng_state):
    """The candidate of a uniform ``integers(0, m)`` draw over a pool of m edges (no draw when m = 1)."""
    return _fenwick_select(tree, 0 if m == 1 else bounded_draw(next_uint32, rng_state, m))


@njit(cache=True)
def _evict(
    rule, run_edge, run_first, run_last, runs, overflow, on_path, parent, offset, children, marked, edge_len, pools,
    ranks, evicted_phase, attached, guard_phase, guarded_edge, snap, snap_phase, group, ids, next_uint32, rng_state,
):  # fmt: skip
    """One eviction per cause (positions first..last of each of the ``runs`` cause edges, in order); returns the
    tokens freed, or -1 when no candidate is left, even after a new phase, before ``overflow`` tokens went."""
    ctree, ltree, heap, where, prio, counters = pools[1], pools[3], pools[4], pools[5], pools[6], pools[7]
    key, floor, kept = ranks
    freed = 0
    for r in range(runs):
        v, p, last = run_edge[r], run_first[r], run_last[r]
        hit, hit_phase = -1, -1  # guard: the next cause of the run evicted in phase ``hit_phase`` (last + 1: none)
        for _ in range(last - p + 2):  # every round takes a token or more
            if p > last:
                break
            if counters[_CANDIDATES] == 0:
                renewed = _new_phase(rule, True, on_path, marked, children, edge_len, pools, ranks)
                if not renewed or counters[_CANDIDATES] == 0:
                    return freed if freed >= overflow else -1
            phase = counters[_PHASE]
            cause = offset[v] + p - 1
            if rule == GUARD:
                drawn = evicted_phase[cause] == phase  # an error of the predictions: the cause is guarded
            else:
                stale = snap[v] if snap_phase[v] == phase else kept[v]
                drawn = p <= stale
                if drawn and evicted_phase[cause] != phase:
                    raise RuntimeError(_NOT_EVICTED)
            if drawn:
                if rule == GUARD:
                    guard_phase[cause] = phase
                    guarded_edge[v] = phase
                    pool, m = ctree, counters[_CANDIDATES]
                elif attached[cause]:  # evicted by a stale request: a candidate
                    pool, m = ctree, counters[_CANDIDATES]
                else:  # evicted by a clean request: any off-path leaf, marked or not
                    pool, m = ltree, counters[_LEAVES]
                u = _draw(pool, m, next_uint32, rng_state)
                token = offset[u] + kept[u] - 1
                evicted_phase[token] = phase
                attached[token] = 1
                back = where[u] != -1
                _remove(u, heap, where, prio, ranks, counters)
                _cut(
                    u, floor[u] + kept[u] - 1, back, rule, on_path, parent, offset, children, marked, pools, ranks,
                    guard_phase, snap, snap_phase,
                )  # fmt: skip
                taken = 1
            else:
                causes = last - p + 1
                if rule == GUARD:
                    if hit < p or hit_phase != phase:
                        hit, hit_phase = last + 1, phase
                        for q in range(p, last + 1):
                            if evicted_phase[offset[v] + q - 1] == phase:
                                hit = q
                                break
                    causes = hit - p
                g, taken, level, cut, above, rank_of = _furthest_run(
                    causes, rule, offset, pools, ranks, guard_phase, guarded_edge, group, ids
                )
                for i in range(g):
                    u = group[i]
                    depth = floor[u] + kept[u]
                    if i < above:
                        depth = level - 1 if u >= cut else level
                    lo, hi = offset[u] + depth - floor[u], offset[u] + kept[u]  # the tokens u gives up
                    evicted_phase[lo:hi] = phase
                    if rule == LNONMARKER:  # evicted by a clean request
                        attached[lo:hi] = 0
                    elif prio[u] == 0:  # guard's fallback: the guarded token goes, its guard with it
                        guard_phase[lo:hi] = 0
                    if i < above and depth > floor[u]:  # kept off the heap, for the bundle
                        _shorten(u, depth, rule, floor, kept, snap, snap_phase, phase)
                    else:
                        _cut(
                            u, depth, i >= above, rule, on_path, parent, offset, children, marked, pools, ranks,
                            guard_phase, snap, snap_phase,
                        )  # fmt: skip
                staged = 0  # the cut leaves left, in rank order: depth ``level`` (ids below ``cut``), then level - 1
                for i in range(2 * above):
                    u = ids[above - 1 - i % above]
                    if kept[u] > 0 and (u < cut) == (i < above):
                        group[staged] = u
                        staged += 1
                _rebundle(group, staged, rank_of, rule, offset, guard_phase, pools, ranks, ids)
            p += taken
            freed += taken
        if p <= last:
            raise RuntimeError(_ROUND_LIMIT)
    return freed


@njit(cache=True)
def serve_batches(
    ends, batch, hits, parent, floor, edge_len, offset, child_start, child_list, request_offsets, request_edges,
    predicted, kept, children, marked, key, candidate, ctree, leaf, ltree, heap, where, prio, counters, bundle,
    evicted_phase, attached, guard_phase, guarded_edge, snap, snap_phase, on_path, batch_edges, told, path, run_edge,
    run_first, run_last, group, ids, rule, budget, allocation, k, next_uint32, rng_state,
):  # fmt: skip
    """Serve the queries ending at trie nodes ``ends`` in batches of ``batch`` (module docstring), writing their
    hits; step ``counters[_STEP] + 1`` is the first batch's; ``rule`` is :data:`GUARD` or :data:`LNONMARKER`."""
    n = parent.size
    pools = (candidate, ctree, leaf, ltree, heap, where, prio, counters, bundle)
    ranks = (key, floor, kept)
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
        if rule == LNONMARKER and counters[_PHASE_TOKENS] >= k:  # k distinct tokens requested: a new phase
            _new_phase(rule, False, on_path, marked, children, edge_len, pools, ranks)
        for i in range(edges):
            v = batch_edges[i]
            if not marked[v]:
                marked[v] = 1
                counters[_PHASE_TOKENS] += edge_len[v]
            _drop_candidate(v, rule, pools, ranks)
            _drop_leaf(v, rule, pools, ranks)
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
                rule, run_edge[first:], run_first[first:], run_last[first:], runs - first, overflow, on_path, parent,
                offset, children, marked, edge_len, pools, ranks, evicted_phase, attached, guard_phase, guarded_edge,
                snap, snap_phase, group, ids, next_uint32, rng_state,
            )  # fmt: skip
            if freed < 0:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            counters[_SIZE] -= freed
        phase = counters[_PHASE]
        for i in range(edges):
            v = batch_edges[i]
            if kept[v] < edge_len[v]:
                if rule == LNONMARKER and snap_phase[v] != phase:
                    snap_phase[v] = phase
                    snap[v] = kept[v]
                if kept[v] == 0:
                    children[parent[v]] += 1
                counters[_SIZE] += edge_len[v] - kept[v]
                kept[v] = edge_len[v]
            key[v] = told[v]
        for i in range(edges):
            v = batch_edges[i]
            on_path[v] = 0
            if children[v] == 0:
                _add_leaf(v, rule, pools, ranks, offset, guard_phase)


class CompiledPredictedMarking(ToldKernel):
    """guard or lnonmarker (``_RULE``; the class ``policy``, maybe bound to a predictor) served through
    :func:`serve_batches`: the same hits, batch for batch, and the same draws as the per-token class from the
    same seed and ``predictions``."""

    randomized = True
    _RULE = GUARD
    _KEPT_ROW = 0
    _SIZE_CELL = _SIZE
    _step_cell = _STEP

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
        self._counters = np.zeros(9, dtype=np.int64)
        self._counters[_PHASE] = 1
        self._state = [
            np.zeros(n, dtype=np.int64),  # kept
            np.zeros(n, dtype=np.int64),  # cached children
            np.zeros(n, dtype=np.uint8),  # marked
            np.full(n, np.inf),  # key
            np.zeros(n, dtype=np.uint8),  # candidate
            np.zeros(n + 1, dtype=np.int64),  # Fenwick tree of the candidates
            np.zeros(n, dtype=np.uint8),  # off-path leaf
            np.zeros(n + 1, dtype=np.int64),  # Fenwick tree of the off-path leaves
            np.zeros(n, dtype=np.int64),  # heap of the off-path leaves (guard) or candidates (lnonmarker)
            np.full(n, -1, dtype=np.int64),  # where each edge is in the heap
            np.zeros(n, dtype=np.uint8),  # its first rank: unguarded
            self._counters,
            np.zeros(n, dtype=np.int64),  # the bundle: leaves of the heap's ranks kept apart, in rank order
            np.zeros(tokens, dtype=np.int32),  # the phase each token was last evicted in
            np.zeros(tokens, dtype=np.uint8),  # whether the request that evicted it was stale (lnonmarker)
            np.zeros(tokens, dtype=np.int32),  # the phase it was guarded in (guard)
            np.zeros(n, dtype=np.int64),  # the last phase each edge had a token guarded in (guard)
            np.zeros(n, dtype=np.int64),  # each edge's count when first changed in its phase (lnonmarker)
            np.zeros(n, dtype=np.int64),  # and that phase
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
        self.k = max(1, budget - longest + 1)

    @property
    def phases(self) -> int:
        """Phases so far (as PredictedMarking.phases)."""
        return int(self._counters[_PHASE])

    @property
    def phase_tokens(self) -> int:
        """The tokens requested in this phase (as PredictedMarking.phase_tokens)."""
        return int(self._counters[_PHASE_TOKENS])

    def cached_prefix(self, j: int) -> int:
        return int(cached_prefix_of(self._parent, self._state[0], self._ends[j]))

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        serve_batches(
            ends, int(batch), hits, *self._trie_arrays, *self._state, *self._scratch, self._RULE, self.budget,
            self.evict_amount == "allocation", self.k, *self._bits,
        )  # fmt: skip


class CompiledGuard(CompiledPredictedMarking):
    """guard's compiled core."""

    _RULE = GUARD


class CompiledLNonMarker(CompiledPredictedMarking):
    """lnonmarker's compiled core."""

    _RULE = LNONMARKER
