"""FIF's compiled (numba) core on any prefix trie.

FIF (:mod:`kvtheory.optimum.fif`) evicts the cached tokens off the current batch's paths in one total
order, largest first: (group key, depth, trie node id), where the group key encodes (next request step
T, multiplicity m) exactly as :class:`~kvtheory.optimum.fif.FurthestInFuture` does (later T first, then
smaller m). The first group in that order has only tokens of its own group below its tokens, so this
order only ever takes leaf tokens, and it is the order in which FurthestInFuture's water levels drain.

The kernel keeps ``kept[v]`` tokens per radix edge v (edge v holds the tokens at depths (floor(v),
floor(v) + kept[v]], floor(v) = depth(parent(v))) and one lazy max-heap of (key, top, v) entries, one valid
entry per cached edge off the batch. To evict r tokens it pops the top entry and every entry at the same
(key, top): the *band*, edges whose top token sits at that level. The band is lowered level by level
together, down to the next lower top of its group (whose edges then join it) or the highest floor among
its members (who then empty), in one step per such event, however many levels; the last partial level
goes to the band's largest ids. Members left with tokens go back on the heap.

Memory: O(edges + path occurrences): every batch's distinct path nodes with their multiplicity and the key
of their next request (the per-node request lists of FurthestInFuture, as CSR arrays), int64 throughout. The
heap is lazy (an edge's entry goes stale when its key or top changes) and is compacted to its valid entries, at
most one per cached edge, whenever it holds 1,024 more than twice what the last compaction kept (:func:`_compact`).
The kernel reproduces FurthestInFuture hit for hit and token for token (tests/optimum/test_compiled_fif.py).
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit
from kvtheory.policies.compiled.heap import heap_pop, heap_push


@njit(cache=True)
def _occurrences(parent, ends, batch, width):
    """The distinct path nodes of every batch as CSR arrays (``start[t]:start[t + 1]`` into ``node``, with
    ``mult``, the batch's queries through the node), and ``follow``: the group key of the node's next
    request after this one (never: key(steps, 0)), key(t, m) = t * width + (width - 1 - m)."""
    n = ends.size
    n_nodes = parent.size
    steps = (n + batch - 1) // batch
    seen = np.full(n_nodes, -1, dtype=np.int64)
    total = 0
    for t in range(steps):
        for j in range(t * batch, min(t * batch + batch, n)):
            v = ends[j]
            rounds_left = n_nodes  # a root path: at most (trie nodes - 1) nodes below the root
            while v != 0 and seen[v] != t:
                if rounds_left == 0:
                    raise RuntimeError(
                        "internal error: kernel _occurrences of the compiled FIF core exceeded its step "
                        "limit of one step per trie node"
                    )
                rounds_left -= 1
                seen[v] = t
                total += 1
                v = parent[v]
    start = np.zeros(steps + 1, dtype=np.int64)
    node = np.empty(total, dtype=np.int64)
    mult = np.zeros(total, dtype=np.int64)
    where = np.zeros(n_nodes, dtype=np.int64)
    seen[:] = -1
    count = 0
    for t in range(steps):
        start[t] = count
        for j in range(t * batch, min(t * batch + batch, n)):
            v = ends[j]
            rounds_left = n_nodes  # a root path: at most (trie nodes - 1) nodes below the root
            while v != 0:
                if rounds_left == 0:
                    raise RuntimeError(
                        "internal error: kernel _occurrences of the compiled FIF core exceeded its step "
                        "limit of one step per trie node"
                    )
                rounds_left -= 1
                if seen[v] != t:
                    seen[v] = t
                    where[v] = count
                    node[count] = v
                    count += 1
                mult[where[v]] += 1
                v = parent[v]
    start[steps] = count
    never = steps * width + (width - 1)
    follow = np.empty(total, dtype=np.int64)
    last = np.full(n_nodes, never, dtype=np.int64)
    for t in range(steps - 1, -1, -1):
        for i in range(start[t], start[t + 1]):
            v = node[i]
            follow[i] = last[v]
            last[v] = t * width + (width - 1 - mult[i])
    return start, node, follow


@njit(cache=True)
def _peek(ha, hb, size, group, kept, floor, n_nodes):
    """Drop stale entries off the heap's top; return the top valid (key, top, v), or (-1, -1, -1)."""
    for _ in range(size[0]):  # every step pops an entry: the heap is empty after size[0] of them
        key, rank = -ha[0], -hb[0]
        v = rank % n_nodes
        top = rank // n_nodes
        if group[v] == key and kept[v] > 0 and floor[v] + kept[v] == top:
            return key, top, v
        heap_pop(ha, hb, size)
    return -1, -1, -1


@njit(cache=True)
def _compact(ha, hb, size, group, kept, floor, n_nodes):
    """Drop every stale entry of the heap (an edge's entry is valid only at its group key and current top, one
    per cached edge), rebuilt from the valid ones: the heap then holds O(cached edges) entries."""
    live_a = np.empty(size[0], dtype=np.int64)
    live_b = np.empty(size[0], dtype=np.int64)
    live = 0
    for i in range(size[0]):
        rank = -hb[i]
        v = rank % n_nodes
        if group[v] == -ha[i] and kept[v] > 0 and floor[v] + kept[v] == rank // n_nodes:
            live_a[live] = ha[i]
            live_b[live] = hb[i]
            live += 1
    size[0] = 0
    for i in range(live):
        heap_push(ha, hb, size, live_a[i], live_b[i])


@njit(cache=True)
def _evict(tokens, ha, hb, size, group, kept, floor, band, n_nodes):
    """Evict ``tokens`` tokens in FIF's order (largest (key, depth, v) first); return the heap arrays (grown
    if needed). Raises if the cache runs out first.

    Per round: the top group's tokens at the top level go one by one, largest id first (heap order). If
    that clears the level, the edges that held it (the band) go down together, level by level, joined by
    the group's edges whose top they reach and left by those that empty, as many whole levels as the
    tokens left pay for; a last part level is the next round's. Then the band goes back on the heap.

    Step limits: a round frees at least its top token, so at most ``tokens`` + 1 rounds (the last one
    ends or raises); within a round, the top level's tokens go one per step (at most ``tokens``), each
    step down the levels frees at least one token or ends (at most ``tokens`` + 1), and joining the band
    pops an entry per step (at most the heap's entries + 1). The band stops joining once it is as wide as the
    tokens left: no whole level can then go, and the next round takes the level's tokens one by one, in heap
    order, from its members (pushed back) and the edges not yet joined alike, so work per round stays
    O(tokens) heap operations however wide the level.
    """
    rounds_left = tokens + 1
    while tokens > 0:
        if rounds_left == 0:
            raise RuntimeError(
                "internal error: kernel _evict of the compiled FIF core exceeded its step limit of tokens + 1 rounds"
            )
        rounds_left -= 1
        key, level, v = _peek(ha, hb, size, group, kept, floor, n_nodes)
        if v < 0:
            raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
        width = 0
        for _ in range(tokens):  # each step takes one token: the loop's own bound
            key2, top2, v2 = _peek(ha, hb, size, group, kept, floor, n_nodes)
            if v2 < 0 or key2 != key or top2 != level:
                break
            heap_pop(ha, hb, size)
            kept[v2] -= 1
            tokens -= 1
            band[width] = v2
            width += 1
        for _ in range(tokens + 1):  # the level is cleared: every band member is at level - 1
            if tokens <= 0:
                break
            level -= 1
            alive = 0
            highest_floor = 0
            for i in range(width):
                u = band[i]
                if kept[u] > 0:
                    band[alive] = u
                    alive += 1
                    highest_floor = max(highest_floor, floor[u])
                else:
                    group[u] = -1
            width = alive
            for _ in range(size[0] + 1):  # every step pops an entry, or ends
                key2, top2, v2 = _peek(ha, hb, size, group, kept, floor, n_nodes)
                if v2 < 0 or key2 != key or top2 != level or width >= tokens:
                    break
                heap_pop(ha, hb, size)
                band[width] = v2
                width += 1
                highest_floor = max(highest_floor, floor[v2])
            else:
                raise RuntimeError(
                    "internal error: kernel _evict of the compiled FIF core exceeded its step limit of "
                    "heap entries + 1 steps (band)"
                )
            if width == 0:
                break
            lowest = max(top2 if v2 >= 0 and key2 == key else 0, highest_floor)
            steps = min(tokens // width, level - lowest)
            if steps == 0:
                break
            for i in range(width):
                kept[band[i]] -= steps
            tokens -= steps * width
            level -= steps - 1  # the loop's head takes the last step down
            if tokens == 0:
                break
        else:
            raise RuntimeError(
                "internal error: kernel _evict of the compiled FIF core exceeded its step limit of "
                "tokens + 1 steps (levels)"
            )
        for i in range(width):  # the band's members go back, at their new tops
            u = band[i]
            if kept[u] > 0:
                if size[0] == ha.size:
                    ha = np.concatenate((ha, np.empty(ha.size, dtype=np.int64)))
                    hb = np.concatenate((hb, np.empty(hb.size, dtype=np.int64)))
                heap_push(ha, hb, size, -key, -((floor[u] + kept[u]) * n_nodes + u))
            else:
                group[u] = -1
    return ha, hb


@njit(cache=True)
def fif_run(parent, depth, ends, budget, batch, width):
    """Serve queries 0..n-1 in batches of ``batch`` under FIF; return each query's hits and the final kept
    tokens per trie node."""
    n = ends.size
    n_nodes = parent.size
    start, node, follow = _occurrences(parent, ends, batch, width)
    floor = np.zeros(n_nodes, dtype=np.int64)
    for v in range(1, n_nodes):
        floor[v] = depth[parent[v]]
    hits = np.zeros(n, dtype=np.int64)
    kept = np.zeros(n_nodes, dtype=np.int64)
    group = np.full(n_nodes, -1, dtype=np.int64)  # the group key v is cached in, -1 if none or on the batch
    band = np.empty(n_nodes, dtype=np.int64)
    capacity = 2 * n_nodes + 16
    ha = np.empty(capacity, dtype=np.int64)
    hb = np.empty(capacity, dtype=np.int64)
    size = np.zeros(1, dtype=np.int64)
    cached_tokens = 0
    compact_at = 1024  # the heap's size that calls for dropping its stale entries (_compact)
    for t in range(start.size - 1):
        for j in range(t * batch, min(t * batch + batch, n)):
            h = 0
            v = ends[j]
            rounds_left = n_nodes  # a root path: at most (trie nodes - 1) nodes below the root
            while v != 0:
                if rounds_left == 0:
                    raise RuntimeError(
                        "internal error: kernel fif_run of the compiled FIF core exceeded its step limit of "
                        "one step per trie node"
                    )
                rounds_left -= 1
                h += kept[v]
                v = parent[v]
            hits[j] = h
        missing = 0
        for i in range(start[t], start[t + 1]):
            v = node[i]
            group[v] = -1
            missing += depth[v] - floor[v] - kept[v]
        overflow = cached_tokens + missing - budget
        if overflow > 0:
            ha, hb = _evict(overflow, ha, hb, size, group, kept, floor, band, n_nodes)
            cached_tokens -= overflow
        for i in range(start[t], start[t + 1]):
            v = node[i]
            cached_tokens += depth[v] - floor[v] - kept[v]
            kept[v] = depth[v] - floor[v]
            group[v] = follow[i]
            if size[0] == ha.size:
                ha = np.concatenate((ha, np.empty(ha.size, dtype=np.int64)))
                hb = np.concatenate((hb, np.empty(hb.size, dtype=np.int64)))
            heap_push(ha, hb, size, -group[v], -(depth[v] * n_nodes + v))
        if size[0] >= compact_at:
            _compact(ha, hb, size, group, kept, floor, n_nodes)
            compact_at = 2 * size[0] + 1024
    return hits, kept
