"""The compiled (numba) core of bo-rlt-switch (:mod:`kvtheory.policies.bo_rlt_switch`) on any prefix trie.

It serves batches as the per-edge class does, the same hits and the same draws from the same seed. Per batch:
each query's hits against the cache before the batch; blind-oracle served on its own cache (below); RLT served on
its own through the sampler core's :func:`~kvtheory.policies.compiled.edge_cache.run_batches` (the per-edge class's
draws, from ``numpy.random.default_rng(seed)``); each one's misses added up (the batch's tokens, query by query,
less its hits); with ``missing`` uncached tokens overflowing B by ``overflow`` > 0, the lazy eviction below; the
paths filled; a switch after a batch where the followed one's misses exceed FACTOR times the other's.

Blind-oracle: the keys K(v) = min(p(v), K(c) over v's requested or cached child edges c) of the batch's edges,
children first, from the predictions of its step; the batch's edges leave the eviction order; the shortfall (or
the allocation, stopping when nothing is left) is evicted in decreasing (key, depth of the token, edge id)
order, the order :class:`~kvtheory.policies.furthest.FurthestKeyCache`'s water levels drain. Its cached edges
off the batch are in a *band* or, each once, in an indexed max-heap by (key, depth of its last token, edge). The
band is the edges of one key whose last tokens sit at one level, those of ids at least its *cut* one token lower
(a part level taken, largest ids first); it lasts from batch to batch. It gives up its level's tokens (the largest
ids below the cut first), then whole levels together, as many as the tokens left pay for, down to the highest
floor among its members (who then empty and leave) or the next top of its key in the heap (whose edges then
join it: one of an id at least the cut gives up its token at the level at once). Heap edges that rank above the
band (a larger key, or its key at a higher level: edges the batches bring in) are lowered first the same way, as
a group of the top (key, level), down to the band's level at most, and go back on the heap. An edge costs
O(log n) when it joins or leaves the heap, and the band O(members) per batch, not a step per token.

Lazy following (:meth:`~kvtheory.policies.bo_rlt_switch.BlindOracleRLTSwitch._evict_outside`): the tokens outside
the followed one's cache after the batch are, on each edge v, the positions held(v) + 1 .. kept(v), at depths
(floor(v) + held(v), floor(v) + kept(v)]. Evicting t of them deepest first (ties: the larger edge id) takes
every outside token deeper than d* and the rest at depth d* from the largest ids, d* the deepest depth with at
least t outside tokens at or below it (found by bisection): one step per outside edge. Finding the outside
edges scans the trie's nodes once per evicting batch, as the per-edge class scans the cached ones.

Every loop runs over a range or stops at a step limit derived from its input, past which it raises an error
naming this kernel.
"""

from __future__ import annotations

import numpy as np

from kvtheory.errors import InputError
from kvtheory.jit import njit
from kvtheory.policies.bo_rlt_switch import FACTOR
from kvtheory.policies.compiled.edge_cache import RLT, EdgeState, run_batches
from kvtheory.policies.compiled.predictive import ToldKernel, batch_keys
from kvtheory.policies.compiled.radix import cached_prefix_of
from kvtheory.policies.edge_cache import _MIN_BLOCK
from kvtheory.policies.native import bit_source

# cells of the int64 ``counters`` array
_SIZE, _BO_SIZE, _HEAP, _STEP, _FOLLOWING, _BO_MISSES, _RLT_MISSES, _SWITCHES = range(8)
# and of blind-oracle's band: its members, those still at its level (ids below the cut), its level and cut
_BW, _BELOW, _BLEVEL, _BCUT = range(8, 12)
_LEVELS = 64
_KERNEL = "internal error: kernel serve_batches of the compiled bo-rlt-switch core"
# whole messages as module constants: a string built inside a kernel makes numba raise a dynamic exception
_PAST_PREDICTIONS = _KERNEL + " ran past the predictions"
_PATH_LIMIT = _KERNEL + " exceeded its step limit of (trie nodes) steps up a path"
_HEAP_LIMIT = _KERNEL + " exceeded its step limit of 64 heap levels"
_DRAIN_LIMIT = _KERNEL + " exceeded its step limit of tokens + 1 rounds evicting blind-oracle's tokens"
_NOTHING_LEFT = "nothing left to evict: the batch footprint exceeds the budget"
_OUTSIDE_SHORT = "nothing left to evict: the followed policy's cache does not fit the batch"


@njit(cache=True)
def _above(i, j, hkey, hval):
    """Whether heap slot i ranks above slot j: the larger (key, depth * nodes + edge)."""
    return hkey[i] > hkey[j] or (hkey[i] == hkey[j] and hval[i] > hval[j])


@njit(cache=True)
def _swap(i, j, heap, hkey, hval, where):
    heap[i], heap[j] = heap[j], heap[i]
    hkey[i], hkey[j] = hkey[j], hkey[i]
    hval[i], hval[j] = hval[j], hval[i]
    where[heap[i]], where[heap[j]] = i, j


@njit(cache=True)
def _sift(i, size, heap, hkey, hval, where):
    """Move heap slot i up, then down, to its place."""
    for _ in range(_LEVELS + 1):
        up = (i - 1) // 2
        if i == 0 or not _above(i, up, hkey, hval):
            break
        _swap(i, up, heap, hkey, hval, where)
        i = up
    else:
        raise RuntimeError(_HEAP_LIMIT)
    for _ in range(_LEVELS + 1):
        best = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < size and _above(child, best, hkey, hval):
                best = child
        if best == i:
            return
        _swap(i, best, heap, hkey, hval, where)
        i = best
    raise RuntimeError(_HEAP_LIMIT)


@njit(cache=True)
def _push(v, key, value, heap, hkey, hval, where, counters):
    i = counters[_HEAP]
    counters[_HEAP] += 1
    heap[i], hkey[i], hval[i], where[v] = v, key, value, i
    _sift(i, i + 1, heap, hkey, hval, where)


@njit(cache=True)
def _remove(v, heap, hkey, hval, where, counters):
    """Edge v leaves the heap (if in it)."""
    i = where[v]
    if i < 0:
        return
    where[v] = -1
    last = counters[_HEAP] - 1
    counters[_HEAP] = last
    if i != last:
        moved = heap[last]
        heap[i], hkey[i], hval[i], where[moved] = moved, hkey[last], hval[last], i
        _sift(i, last, heap, hkey, hval, where)


@njit(cache=True)
def _band_add(v, band, slot, counters):
    """Edge v joins the band (at its level if v is below the cut, else one lower)."""
    slot[v] = counters[_BW]
    band[counters[_BW]] = v
    counters[_BW] += 1
    if v < counters[_BCUT]:
        counters[_BELOW] += 1


@njit(cache=True)
def _band_remove(v, band, slot, counters):
    """Edge v leaves the band (if in it): the last member takes its slot."""
    i = slot[v]
    if i < 0:
        return
    slot[v] = -1
    last = counters[_BW] - 1
    counters[_BW] = last
    if v < counters[_BCUT]:
        counters[_BELOW] -= 1
    if i != last:
        band[i] = band[last]
        slot[band[i]] = i


@njit(cache=True)
def _drop_emptied(kept, band, slot, counters):
    """The members that hold no token leave the band."""
    for i in range(counters[_BW] - 1, -1, -1):  # backwards: a swapped-in member was looked at already
        if kept[band[i]] == 0:
            _band_remove(band[i], band, slot, counters)


@njit(cache=True)
def _level_down(level, band, counters):
    """Every member of the band is now at ``level``: none is cut."""
    counters[_BLEVEL] = level
    counters[_BCUT] = band.size
    counters[_BELOW] = counters[_BW]


@njit(cache=True)
def _join(tokens, kept, oracle, counters):
    """The heap's edges at the band's (key, level) join it, largest id first; one whose id is at least the cut
    ranks above the members still at the level, so its token there goes at once (while ``tokens`` last).
    Returns the tokens left."""
    heap, hkey, hval, where, band, slot, band_key = oracle[3:10]
    nodes = kept.size
    for _ in range(counters[_HEAP]):
        if tokens == 0 or counters[_HEAP] == 0 or hkey[0] != band_key[0] or hval[0] // nodes != counters[_BLEVEL]:
            break
        v = heap[0]
        _remove(v, heap, hkey, hval, where, counters)
        if v >= counters[_BCUT]:
            kept[v] -= 1
            tokens -= 1
            if kept[v] == 0:
                continue
        _band_add(v, band, slot, counters)
    return tokens


@njit(cache=True)
def _lower(tokens, limit, floor, oracle, counters):
    """Evict up to ``tokens`` tokens from the heap's top (key, level) down, its edges lowered level by level
    together (the band's way, for edges that rank above the band), never below ``limit``; they go back on the heap.
    Returns the tokens left."""
    kept, heap, hkey, hval, where, group = oracle[0], oracle[3], oracle[4], oracle[5], oracle[6], oracle[10]
    nodes = kept.size
    key, level = hkey[0], hval[0] // nodes
    width = 0
    for _ in range(tokens + 1):  # each step takes a token or more, or ends
        if tokens == 0 or level <= limit:
            break
        for _ in range(counters[_HEAP]):  # the heap's edges at (key, level) join
            if counters[_HEAP] == 0 or hkey[0] != key or hval[0] // nodes != level:
                break
            group[width] = heap[0]
            width += 1
            _remove(heap[0], heap, hkey, hval, where, counters)
        if width == 0:
            break
        if tokens < width:  # a part level: the largest ids lose their token at it
            members = np.sort(group[:width])
            for i in range(tokens):
                kept[members[width - 1 - i]] -= 1
            tokens = 0
            break
        lowest = hval[0] // nodes if counters[_HEAP] > 0 and hkey[0] == key else limit
        for i in range(width):
            lowest = max(lowest, limit, floor[group[i]])
        steps = min(tokens // width, level - lowest)
        tokens -= steps * width
        level -= steps
        alive = 0
        for i in range(width):
            u = group[i]
            kept[u] -= steps
            if kept[u] > 0:
                group[alive] = u
                alive += 1
        width = alive
    for i in range(width):  # back on the heap at their new tops
        u = group[i]
        if kept[u] > 0:
            _push(u, key, (floor[u] + kept[u]) * nodes + u, heap, hkey, hval, where, counters)
    return tokens


@njit(cache=True)
def _drain(tokens, floor, oracle, counters):
    """Evict ``tokens`` of blind-oracle's cached tokens off the batch (the caller checked they are there) in
    decreasing (key, depth, edge) order through the band (module docstring)."""
    kept, hkey, hval, band, slot, band_key = oracle[0], oracle[4], oracle[5], oracle[7], oracle[8], oracle[9]
    nodes = kept.size
    for _ in range(tokens + 1):  # a round takes at least one token
        if tokens <= 0:
            return
        if counters[_BW] + counters[_HEAP] == 0:
            raise RuntimeError(_NOTHING_LEFT)
        if counters[_BW] > 0 and counters[_BELOW] == 0:  # the band's level is taken: it is one level lower
            _level_down(counters[_BLEVEL] - 1, band, counters)
        if counters[_BW] == 0:  # a band from the heap's top
            band_key[0] = hkey[0]
            _level_down(hval[0] // nodes, band, counters)
        elif counters[_HEAP] > 0 and (
            hkey[0] > band_key[0] or (hkey[0] == band_key[0] and hval[0] // nodes > counters[_BLEVEL])
        ):  # edges above the band go first: of its key, down to its level (where they join it)
            tokens = _lower(tokens, counters[_BLEVEL] if hkey[0] == band_key[0] else 0, floor, oracle, counters)
            continue
        tokens = _join(tokens, kept, oracle, counters)
        below, level, cut = counters[_BELOW], counters[_BLEVEL], counters[_BCUT]
        if tokens == 0 or below == 0:
            continue
        if tokens < below:  # a part level: the largest ids below the cut lose their token at it
            ids = np.empty(below, dtype=np.int64)
            count = 0
            for i in range(counters[_BW]):
                if band[i] < cut:
                    ids[count] = band[i]
                    count += 1
            ids.sort()
            counters[_BCUT] = ids[below - tokens]
            counters[_BELOW] -= tokens
            for i in range(below - tokens, below):
                kept[ids[i]] -= 1
            tokens = 0
            _drop_emptied(kept, band, slot, counters)
            continue
        for i in range(counters[_BW]):  # the rest of the level, then whole levels together
            if band[i] < cut:
                kept[band[i]] -= 1
        tokens -= below
        _level_down(level - 1, band, counters)
        _drop_emptied(kept, band, slot, counters)
        tokens = _join(tokens, kept, oracle, counters)
        width = counters[_BW]
        if width == 0 or tokens < width:
            continue
        level = counters[_BLEVEL]
        lowest = hval[0] // nodes if counters[_HEAP] > 0 and hkey[0] == band_key[0] else 0
        for i in range(width):
            lowest = max(lowest, floor[band[i]])
        steps = min(tokens // width, level - lowest)
        for i in range(width):
            kept[band[i]] -= steps
        tokens -= steps * width
        _level_down(level - steps, band, counters)
        _drop_emptied(kept, band, slot, counters)
    if tokens > 0:
        raise RuntimeError(_DRAIN_LIMIT)


@njit(cache=True)
def _serve_blind_oracle(edges, batch_edges, on_path, step, trie, told_by, oracle, budget, allocation, counters):
    """Blind-oracle's books on the batch of ``edges`` edges (``batch_edges``, flagged in ``on_path``), after its
    hits were counted (module docstring)."""
    parent, floor, edge_len, child_start, child_list = trie
    request_offsets, request_edges, predicted = told_by
    kept, key, told, heap, hkey, hval, where, band, slot = oracle[:9]
    nodes = kept.size
    tree = (floor, edge_len, child_start, child_list)
    batch_keys(step, request_offsets, request_edges, predicted, told, batch_edges, edges, tree, on_path, kept, key)
    held = missing = 0
    for i in range(edges):
        v = batch_edges[i]
        _remove(v, heap, hkey, hval, where, counters)
        _band_remove(v, band, slot, counters)
        held += kept[v]
        missing += edge_len[v] - kept[v]
    overflow = counters[_BO_SIZE] + missing - budget
    if overflow > 0:
        available = counters[_BO_SIZE] - held
        if available < overflow:
            raise RuntimeError(_NOTHING_LEFT)
        tokens = min(missing if allocation else overflow, available)
        _drain(tokens, floor, oracle, counters)
        counters[_BO_SIZE] -= tokens
    for i in range(edges):
        v = batch_edges[i]
        counters[_BO_SIZE] += edge_len[v] - kept[v]
        kept[v] = edge_len[v]
        key[v] = told[v]
        _push(v, told[v], (floor[v] + edge_len[v]) * nodes + v, heap, hkey, hval, where, counters)


@njit(cache=True)
def _evict_outside(tokens, overflow, kept, held, floor, outside):
    """Evict up to ``tokens`` of the cached tokens outside the followed cache ``held`` (per edge), deepest first,
    ties to the larger edge id; an error if fewer than ``overflow`` are outside. Returns how many went."""
    count = total = 0
    deepest = 0
    for v in range(1, kept.size):
        if kept[v] > held[v]:
            outside[count] = v
            count += 1
            total += kept[v] - held[v]
            deepest = max(deepest, floor[v] + kept[v])
    if total < overflow:
        raise RuntimeError(_OUTSIDE_SHORT)
    if tokens >= total:
        for i in range(count):
            kept[outside[i]] = held[outside[i]]
        return total
    low, high = 1, deepest  # c(low) = total >= tokens > 0 = c(deepest + 1): c(d) the outside tokens at depth >= d
    for _ in range(_LEVELS):
        if low >= high:
            break
        middle = (low + high + 1) // 2
        at_least = 0
        for i in range(count):
            v = outside[i]
            at_least += max(0, floor[v] + kept[v] - max(floor[v] + held[v], middle - 1))
        if at_least >= tokens:
            low = middle
        else:
            high = middle - 1
    cut = low
    rest = tokens
    for i in range(count):  # the tokens deeper than the cut
        v = outside[i]
        rest -= max(0, floor[v] + kept[v] - max(floor[v] + held[v], cut))
    for i in range(count - 1, -1, -1):  # then the rest at the cut, larger ids first
        v = outside[i]
        lo, hi = floor[v] + held[v], floor[v] + kept[v]
        top = min(hi, max(lo, cut))
        if rest > 0 and lo < cut <= hi:
            top = cut - 1
            rest -= 1
        kept[v] = top - floor[v]
    return tokens


@njit(cache=True)
def _gather(ends, start, stop, trie, kept, simulated, path, on_path, batch_edges, hits):
    """Queries ``start`` .. ``stop`` - 1 of ``ends``: each one's hits on the cache ``kept`` (written to ``hits``) and
    the batch's edges, each once (``batch_edges``, flagged in ``on_path``). Returns (edges, tokens missing from
    ``kept``, the batch's hits on the cache ``simulated``, the batch's tokens)."""
    parent, floor, edge_len = trie[0], trie[1], trie[2]
    edges = missing = simulated_hits = tokens = 0
    for q in range(start, stop):
        length = 0
        v = ends[q]
        for _ in range(parent.size):
            if v == 0:
                break
            path[length] = v
            length += 1
            v = parent[v]
        if v != 0:
            raise RuntimeError(_PATH_LIMIT)
        total = 0
        for i in range(length):
            u = path[i]
            total += kept[u]
            simulated_hits += simulated[u]
            if not on_path[u]:
                on_path[u] = 1
                batch_edges[edges] = u
                edges += 1
                missing += edge_len[u] - kept[u]
        hits[q] = total
        tokens += floor[ends[q]] + edge_len[ends[q]]
    return edges, missing, simulated_hits, tokens


@njit(cache=True)
def serve_batches(ends, batch, hits, trie, told_by, oracle, sampler, cache, counters, budget, allocation, bits):
    """Serve the queries ending at trie nodes ``ends`` in batches of ``batch`` (module docstring), writing their
    hits; step ``counters[_STEP] + 1`` is the first batch's."""
    floor, edge_len = trie[1], trie[2]
    kept, on_path, batch_edges, outside, path, rlt_hits = cache
    bo_kept = oracle[0]
    rlt_kept = sampler[2]
    next_uint32, rng_state, min_block = bits
    for start in range(0, ends.size, batch):
        stop = min(start + batch, ends.size)
        counters[_STEP] += 1
        step = counters[_STEP]
        if step >= told_by[0].size:
            raise RuntimeError(_PAST_PREDICTIONS)
        edges, missing, bo_hits, tokens = _gather(
            ends, start, stop, trie, kept, bo_kept, path, on_path, batch_edges, hits
        )
        _serve_blind_oracle(edges, batch_edges, on_path, step, trie, told_by, oracle, budget, allocation, counters)
        run_batches(
            ends[start:stop], stop - start, rlt_hits[: stop - start], *sampler, budget, next_uint32, rng_state, RLT,
            allocation, min_block,
        )  # fmt: skip
        counters[_BO_MISSES] += tokens - bo_hits
        counters[_RLT_MISSES] += tokens - rlt_hits[: stop - start].sum()
        overflow = counters[_SIZE] + missing - budget
        if overflow > 0:
            held = bo_kept if counters[_FOLLOWING] == 0 else rlt_kept
            wanted = missing if allocation else overflow
            counters[_SIZE] -= _evict_outside(wanted, overflow, kept, held, floor, outside)
        for i in range(edges):
            v = batch_edges[i]
            counters[_SIZE] += edge_len[v] - kept[v]
            kept[v] = edge_len[v]
            on_path[v] = 0
        followed = counters[_BO_MISSES + counters[_FOLLOWING]]
        other = counters[_RLT_MISSES - counters[_FOLLOWING]]
        if followed > FACTOR * other:
            counters[_FOLLOWING] = 1 - counters[_FOLLOWING]
            counters[_SWITCHES] += 1


@njit(cache=True)
def serve_blind_oracle(ends, batch, hits, trie, told_by, oracle, scratch, counters, budget, allocation):
    """blind-oracle alone (its own compiled core): each query's hits from blind-oracle's cache, then its books
    (:func:`_serve_blind_oracle`) on the batch's edges, batch by batch; step ``counters[_STEP] + 1`` is the first."""
    kept = oracle[0]
    on_path, batch_edges, path = scratch
    for start in range(0, ends.size, batch):
        stop = min(start + batch, ends.size)
        counters[_STEP] += 1
        step = counters[_STEP]
        if step >= told_by[0].size:
            raise RuntimeError(_PAST_PREDICTIONS)
        edges = _gather(ends, start, stop, trie, kept, kept, path, on_path, batch_edges, hits)[0]
        _serve_blind_oracle(edges, batch_edges, on_path, step, trie, told_by, oracle, budget, allocation, counters)
        for i in range(edges):
            on_path[batch_edges[i]] = 0


class _BlindOracleBooks(ToldKernel):
    """What the bo-rlt-switch and blind-oracle cores share: the trie's arrays, the predictions told batch by batch
    (``_told_by``), blind-oracle's books (``_oracle``) and the counters."""

    _KEPT_ROW = 0
    _step_cell = _STEP

    def __init__(self, policy: type, trie, budget: int, *, seed=None, evict_amount="shortfall", predictions=None):
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        self.name = policy.name
        self._predictions = policy.required(predictions)
        n = trie.n_nodes
        parent = np.asarray(trie.parent, dtype=np.int64)
        depth = np.asarray(trie.depth, dtype=np.int64)
        if int(depth.max(initial=0)) + 1 >= (1 << 62) // max(n, 1):
            raise InputError(f"policy {self.name!r}: queries too long for the compiled core's int64 heap values")
        self._parent = parent
        self._ends = np.asarray(trie.end, dtype=np.int64)
        child_count = np.bincount(parent[1:], minlength=n)
        child_list = np.concatenate([np.asarray(c, dtype=np.int64) for c in trie.children] + [np.zeros(0, np.int64)])
        self._trie = (
            parent, depth[parent.clip(0)], np.asarray(trie.edge_len, dtype=np.int64),
            np.concatenate(([0], np.cumsum(child_count))), child_list,
        )  # fmt: skip
        requests = predictions.requests
        self._told_by = (requests.offsets, requests.edges, np.asarray(predictions.predicted, dtype=np.float64))
        self._oracle = (
            np.zeros(n, dtype=np.int64), np.full(n, np.inf), np.zeros(n),  # kept, key, the batch's keys
            np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n, dtype=np.int64),  # heap: edges, keys, depth*n+edge
            np.full(n, -1, dtype=np.int64),  # each edge's heap slot
            np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), np.zeros(1),  # the band, slots, its key
            np.zeros(n, dtype=np.int64),  # the edges lowered above the band
        )  # fmt: skip
        self._scalars = self._counters = np.zeros(12, dtype=np.int64)


class CompiledSwitch(_BlindOracleBooks):
    """bo-rlt-switch (or a class of it bound to a predictor, ``policy``) served through :func:`serve_batches`: the
    same hits, batch for batch, and the same draws as the per-edge class from the same seed and ``predictions``."""

    randomized = True
    _SIZE_CELL = _SIZE

    def __init__(self, policy: type, trie, budget: int, *, seed=None, evict_amount="shortfall", predictions=None):
        super().__init__(policy, trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)
        n = trie.n_nodes
        self._sampler = EdgeState(trie).arrays()
        self._cache = (
            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.uint8),  # kept, on the batch's paths
            np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),  # the batch's edges, the outside edges
            np.zeros(n, dtype=np.int64),  # a path
            np.zeros(len(self._ends), dtype=np.int64),  # RLT's hits
        )  # fmt: skip
        self._state = [self._cache[0]]
        self._rng = np.random.default_rng(seed)  # RLT's; kept alive: the kernel draws from its state
        self._bits = (*bit_source(self._rng), _MIN_BLOCK)

    @property
    def following(self) -> str:
        """The policy followed now (as BlindOracleRLTSwitch.following)."""
        return ("blind-oracle", "rlt")[int(self._counters[_FOLLOWING])]

    @property
    def switches(self) -> int:
        return int(self._counters[_SWITCHES])

    @property
    def misses(self) -> dict[str, int]:
        """Each simulated policy's misses so far (as BlindOracleRLTSwitch.misses)."""
        return {"blind-oracle": int(self._counters[_BO_MISSES]), "rlt": int(self._counters[_RLT_MISSES])}

    def cached_prefix(self, j: int) -> int:
        return int(cached_prefix_of(self._parent, self._cache[0], self._ends[j]))

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        serve_batches(
            ends, int(batch), hits, self._trie, self._told_by, self._oracle, self._sampler, self._cache,
            self._counters, self.budget, self.evict_amount == "allocation", self._bits,
        )  # fmt: skip


class CompiledBlindOracle(_BlindOracleBooks):
    """blind-oracle (or a class of it bound to a predictor, ``policy``) served through :func:`serve_blind_oracle`,
    the blind-oracle part of :class:`CompiledSwitch` alone: the same hits, batch for batch, as the per-edge class
    (:class:`~kvtheory.policies.furthest.FurthestKeyCache`) told the same ``predictions``."""

    randomized = False
    _SIZE_CELL = _BO_SIZE

    def __init__(self, policy: type, trie, budget: int, *, seed=None, evict_amount="shortfall", predictions=None):
        super().__init__(policy, trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)
        n = trie.n_nodes
        self._state = [self._oracle[0]]
        self._scratch = (  # on the batch's paths, its edges, a path
            np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
        )  # fmt: skip

    def cached_prefix(self, j: int) -> int:
        return int(cached_prefix_of(self._parent, self._oracle[0], self._ends[j]))

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        serve_blind_oracle(
            ends, int(batch), hits, self._trie, self._told_by, self._oracle, self._scratch, self._counters,
            self.budget, self.evict_amount == "allocation",
        )  # fmt: skip
