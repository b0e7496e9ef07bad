"""Compiled (numba) core of the radix family (L-LRU, token-LRU, FIFO-leaf) on any prefix trie.

It does what :class:`~kvtheory.policies.radix.RadixPolicy` does, step for step, with the dynamic radix
tree held in int64 arrays instead of Python objects, so the two give the same hits query for query
(tests/policies/test_compiled_cores.py compares them):

- A dynamic node is indexed by its creation id ``cid`` (1, 2, ...; the root is 0) and covers the token
  nodes at depths (d0, d1] on the root path of trie node ``bottom`` (the shallowest trie node with depth
  >= d1). Its fields are the rows of ``nodes``: parent, d0, d1, bottom, key (the trie node whose edge
  holds its first token), number of children, ``mid`` (its one child when d1 falls strictly inside
  a trie edge), the clock of the last batch that walked it (``lock``), whether it is alive, and stamp.
  The first :data:`TREE_ROWS` rows are the tree itself, and the functions that walk, split, grow and cut
  it (:func:`descend`, :func:`split_node`, :func:`attach_leaf`, :func:`remove_leaf`, :func:`cut_tail`)
  are shared with rlt-authors' kernel (:mod:`kvtheory.policies.compiled.authors`).
- Per trie node v (rows of ``state``): ``first[v]``, the dynamic node holding the head token of edge v
  (-1 if uncached); ``kept[v]``, the tokens of edge v cached (from the edge's head); ``seen[v]``, the
  clock of the batch that last counted v's missing tokens. A node's child under key v is ``first[v]``
  when the node ends at a trie node (d1 = depth[bottom]), else its ``mid`` child: no per-node dictionary.
- Eviction order is a lazy binary min-heap of (stamp, cid) pairs, an entry being stale when its node is
  dead, has children or has been re-stamped, exactly as the per-edge class's heap.

Paths are walked through the trie's parent array into one scratch buffer. Every batch of b queries
creates at most 3b nodes (a split in each of its two matches and a new leaf) and grows the heap by at
most 3b entries, so capacity is made once per batch and memory stays O(trie nodes + queries). The kernel:
:func:`radix_serve`; its object: :class:`kvtheory.policies.radix_core.CompiledRadix`; the arrays' layout:
:mod:`kvtheory.policies.compiled.radix_layout`.
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit
from kvtheory.policies.compiled.heap import grow_columns, heap_pop, heap_push, set_aside
from kvtheory.policies.compiled.radix_layout import (
    C_ALLOCATION,
    C_BUDGET,
    C_CLOCK,
    C_HEAP,
    C_LAST_CID,
    C_REFRESH,
    C_SIZE,
    C_WHOLE,
    N_ALIVE,
    N_BOTTOM,
    N_CHILDREN,
    N_D0,
    N_D1,
    N_KEY,
    N_LOCK,
    N_MID,
    N_PARENT,
    N_STAMP,
    S_FIRST,
    S_KEPT,
    S_SEEN,
    T_DEPTH,
    T_EDGE,
    T_PARENT,
    T_TIN,
    T_TOUT,
)

#: the step-limit errors of the kernels below (constants: numba raises them without building a string)
_PER_NODE = " of the compiled radix core exceeded its step limit of one step per trie node"
_PER_PATH = " of the compiled radix core exceeded its step limit of the path's length"
_PER_WALK = " of the compiled radix core exceeded its step limit of the path's length + 1 steps"
_PER_BUFFER = " of the compiled radix core exceeded its step limit of the path buffer's length"
_PER_EVICTION = " of the compiled radix core exceeded its step limit of heap entries + tokens + 1 rounds"
_CORES_PER_NODE = " of the compiled cores exceeded its step limit of one step per trie node"
_LOAD_PATH_LIMIT = "internal error: kernel load_path" + _PER_NODE
_UNCACHE_LIMIT = "internal error: kernel uncache" + _PER_NODE
_SPLIT_NODE_LIMIT = "internal error: kernel split_node" + _PER_NODE
_DESCEND_PATH_LIMIT = "internal error: kernel descend" + _PER_PATH
_DESCEND_LIMIT = "internal error: kernel descend" + _PER_WALK
_MATCH_LIMIT = "internal error: kernel _match" + _PER_WALK
_ATTACH_LEAF_LIMIT = "internal error: kernel attach_leaf" + _PER_NODE
_FIRST_KEY_LIMIT = "internal error: kernel first_key" + _PER_BUFFER
_CUT_TAIL_LIMIT = "internal error: kernel cut_tail" + _PER_NODE
_EVICT_LIMIT = "internal error: kernel _evict" + _PER_EVICTION
_CACHED_PREFIX_OF_LIMIT = "internal error: kernel cached_prefix_of" + _CORES_PER_NODE


@njit(cache=True)
def load_path(tr, end, path):
    """Write the trie nodes from the root's child down to ``end`` into ``path``; return their number."""
    n = 0
    v = end
    rounds_left = tr.shape[1]  # a root path: at most (trie nodes - 1) nodes below the root
    while v != 0:
        if rounds_left == 0:
            raise RuntimeError(_LOAD_PATH_LIMIT)
        rounds_left -= 1
        path[n] = v
        n += 1
        v = tr[T_PARENT, v]
    for i in range(n // 2):
        path[i], path[n - 1 - i] = path[n - 1 - i], path[i]
    return n


@njit(cache=True)
def _is_ancestor(tr, a, b):
    return tr[T_TIN, a] <= tr[T_TIN, b] and tr[T_TOUT, b] <= tr[T_TOUT, a]


@njit(cache=True)
def _child(tr, state, nodes, node, key):
    """The child of dynamic node ``node`` whose first token lies on trie edge ``key``, or -1."""
    if nodes[N_D1, node] == tr[T_DEPTH, nodes[N_BOTTOM, node]]:
        return state[S_FIRST, key]
    return nodes[N_MID, node]


@njit(cache=True)
def _push(nodes, hp, sc, c):
    heap_push(hp[0], hp[1], sc, nodes[N_STAMP, c], c)


@njit(cache=True)
def uncache(tr, state, bottom, lo):
    """Token nodes deeper than ``lo`` on the root path of ``bottom`` (all of one leaf's) leave the cache."""
    u = bottom
    rounds_left = tr.shape[1]  # up a root path: at most (trie nodes - 1) nodes below the root
    while u != 0 and tr[T_DEPTH, u] > lo:
        if rounds_left == 0:
            raise RuntimeError(_UNCACHE_LIMIT)
        rounds_left -= 1
        above = tr[T_DEPTH, tr[T_PARENT, u]]
        state[S_KEPT, u] = max(lo - above, 0)
        if above >= lo:
            state[S_FIRST, u] = -1
        u = tr[T_PARENT, u]


@njit(cache=True)
def split_node(tr, state, nodes, c, at, h):
    """Split node ``c`` at trie node ``at`` (strictly inside it): the new node ``h`` takes the part above
    ``at`` and c's place under its parent; ``c`` keeps its cid as the tail, h's only child."""
    p, d0, key = nodes[N_PARENT, c], nodes[N_D0, c], nodes[N_KEY, c]
    nodes[N_PARENT, h] = p
    nodes[N_D0, h] = d0
    nodes[N_D1, h] = tr[T_DEPTH, at]
    nodes[N_BOTTOM, h] = at
    nodes[N_KEY, h] = key
    nodes[N_CHILDREN, h] = 1
    nodes[N_MID, h] = -1
    nodes[N_LOCK, h] = 0
    nodes[N_ALIVE, h] = 1
    if d0 != tr[T_DEPTH, tr[T_PARENT, key]]:
        nodes[N_MID, p] = h
    u = at
    rounds_left = tr.shape[1]  # both walks go up a root path: at most (trie nodes - 1) steps each
    while u != 0 and tr[T_DEPTH, tr[T_PARENT, u]] >= d0:
        if rounds_left == 0:
            raise RuntimeError(_SPLIT_NODE_LIMIT)
        rounds_left -= 1
        state[S_FIRST, u] = h
        u = tr[T_PARENT, u]
    tail_key = nodes[N_BOTTOM, c]
    rounds_left = tr.shape[1]
    while tr[T_PARENT, tail_key] != at:
        if rounds_left == 0:
            raise RuntimeError(_SPLIT_NODE_LIMIT)
        rounds_left -= 1
        tail_key = tr[T_PARENT, tail_key]
    nodes[N_PARENT, c] = h
    nodes[N_KEY, c] = tail_key
    nodes[N_D0, c] = tr[T_DEPTH, at]


@njit(cache=True)
def _split(tr, state, nodes, hp, sc, c, at):
    """Split node ``c`` at trie node ``at`` (:func:`split_node`): the head gets a new cid and c's stamp.
    Return the head."""
    h = sc[C_LAST_CID] + 1
    sc[C_LAST_CID] = h
    split_node(tr, state, nodes, c, at, h)
    nodes[N_STAMP, h] = nodes[N_STAMP, c]
    if nodes[N_CHILDREN, c] == 0:
        _push(nodes, hp, sc, c)
    return h


@njit(cache=True)
def descend(tr, state, nodes, path, plen):
    """(last node matched whole, its depth, the node the cached prefix of the path in ``path[:plen]`` ends
    strictly inside or -1, the trie node where it ends there). Changes nothing."""
    end = path[plen - 1]
    length = tr[T_DEPTH, end]
    node, matched, i = 0, 0, 0
    rounds_left = length + 1  # every step goes at least one token deeper: at most ``length`` steps
    while matched < length:
        if rounds_left == 0:
            raise RuntimeError(_DESCEND_LIMIT)
        rounds_left -= 1
        for k in range(i, plen):  # the path's end lies deeper than ``matched``: found before ``plen``
            if tr[T_DEPTH, path[k]] > matched:
                i = k
                break
        else:
            raise RuntimeError(_DESCEND_PATH_LIMIT)
        child = _child(tr, state, nodes, node, path[i])
        if child < 0:
            break
        if not _is_ancestor(tr, nodes[N_BOTTOM, child], end):
            j = i
            for k in range(i + 1, plen):  # bounded by the path itself
                if not _is_ancestor(tr, path[k], nodes[N_BOTTOM, child]):
                    break
                j = k
            return node, matched, child, path[j]
        node, matched = child, nodes[N_D1, child]
    return node, matched, -1, -1


@njit(cache=True)
def _match(tr, state, nodes, hp, sc, path, plen):
    """(last node, matched depth) of the longest cached prefix of the path in ``path[:plen]``, as serving
    matches it: a node the query leaves in its middle is split there (after its refresh), and every node of
    the matched root path is stamped now if the policy refreshes, and locked for this batch."""
    clock = sc[C_CLOCK]
    node, matched, inside, at = descend(tr, state, nodes, path, plen)
    if inside >= 0:
        if sc[C_REFRESH]:
            nodes[N_STAMP, inside] = clock
        node, matched = _split(tr, state, nodes, hp, sc, inside, at), tr[T_DEPTH, at]
    x = node
    rounds_left = matched + 1  # up a root path of nodes of a token or more: at most ``matched`` steps
    while x != 0:
        if rounds_left == 0:
            raise RuntimeError(_MATCH_LIMIT)
        rounds_left -= 1
        if sc[C_REFRESH]:
            nodes[N_STAMP, x] = clock
        nodes[N_LOCK, x] = clock
        x = nodes[N_PARENT, x]
    return node, matched


@njit(cache=True)
def attach_leaf(tr, state, nodes, c, node, matched, end, key):
    """Make ``c`` a new leaf under ``node`` (matched depth ``matched``) holding the rest of the path to trie
    node ``end``, whose first token lies on edge ``key``; its token nodes become cached."""
    length = tr[T_DEPTH, end]
    nodes[N_PARENT, c] = node
    nodes[N_D0, c] = matched
    nodes[N_D1, c] = length
    nodes[N_BOTTOM, c] = end
    nodes[N_KEY, c] = key
    nodes[N_CHILDREN, c] = 0
    nodes[N_MID, c] = -1
    nodes[N_LOCK, c] = 0
    nodes[N_ALIVE, c] = 1
    nodes[N_CHILDREN, node] += 1
    if matched != tr[T_DEPTH, tr[T_PARENT, key]]:
        nodes[N_MID, node] = c
    u = end
    rounds_left = tr.shape[1]  # up a root path: at most (trie nodes - 1) nodes below the root
    while u != 0 and tr[T_DEPTH, u] > matched:
        if rounds_left == 0:
            raise RuntimeError(_ATTACH_LEAF_LIMIT)
        rounds_left -= 1
        state[S_KEPT, u] = tr[T_EDGE, u]
        if tr[T_DEPTH, tr[T_PARENT, u]] >= matched:
            state[S_FIRST, u] = c
        u = tr[T_PARENT, u]


@njit(cache=True)
def first_key(tr, path, matched):
    """The trie node of ``path`` whose edge holds the token at depth ``matched`` + 1."""
    for i in range(path.size):  # the path's end lies deeper than ``matched``: found within the buffer
        if tr[T_DEPTH, path[i]] > matched:
            return path[i]
    raise RuntimeError(_FIRST_KEY_LIMIT)


@njit(cache=True)
def _insert(tr, state, nodes, hp, sc, path, plen, node, matched):
    """Cache the rest of the path below ``node`` (matched depth ``matched``) as one new leaf, stamped now."""
    end = path[plen - 1]
    length = tr[T_DEPTH, end]
    if matched < length:
        c = sc[C_LAST_CID] + 1
        sc[C_LAST_CID] = c
        attach_leaf(tr, state, nodes, c, node, matched, end, first_key(tr, path, matched))
        nodes[N_STAMP, c] = sc[C_CLOCK]
        sc[C_SIZE] += length - matched
        _push(nodes, hp, sc, c)
    elif nodes[N_CHILDREN, node] == 0 and node != 0:
        _push(nodes, hp, sc, node)


@njit(cache=True)
def remove_leaf(tr, nodes, c):
    """Unlink the emptied leaf ``c`` from its parent (its tokens are uncached by :func:`uncache`)."""
    nodes[N_ALIVE, c] = 0
    p = nodes[N_PARENT, c]
    nodes[N_CHILDREN, p] -= 1
    if nodes[N_D0, c] != tr[T_DEPTH, tr[T_PARENT, nodes[N_KEY, c]]]:
        nodes[N_MID, p] = -1


@njit(cache=True)
def cut_tail(tr, state, nodes, c, d1):
    """Keep only the tokens of leaf ``c`` down to depth ``d1`` (> its d0)."""
    uncache(tr, state, nodes[N_BOTTOM, c], d1)
    nodes[N_D1, c] = d1
    bottom = nodes[N_BOTTOM, c]
    rounds_left = tr.shape[1]  # up a root path: at most (trie nodes - 1) steps
    while tr[T_DEPTH, tr[T_PARENT, bottom]] >= d1:
        if rounds_left == 0:
            raise RuntimeError(_CUT_TAIL_LIMIT)
        rounds_left -= 1
        bottom = tr[T_PARENT, bottom]
    nodes[N_BOTTOM, c] = bottom


@njit(cache=True)
def _evict(tr, state, nodes, hp, sc, aside, tokens, need):
    """Evict leaves in (stamp, cid) order, off the batch's walked nodes, until ``tokens`` are freed: whole
    nodes, or (token eviction) the tail of the first leaf that holds more than what is left to free. With
    nothing left to evict, stop if ``need`` tokens are free, else raise. Entries of locked nodes are kept
    in ``aside`` meanwhile (enlarged if needed); return it.

    Each round pops an entry, or ends: an entry is pushed only for a parent whose last child was evicted
    (at least one token freed), or for the cut leaf (no token left to free): at most heap entries + tokens
    + 1 rounds."""
    clock = sc[C_CLOCK]
    whole = sc[C_WHOLE]
    n_aside = 0
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
        s, c = hp[0, 0], hp[1, 0]
        heap_pop(hp[0], hp[1], sc)
        if nodes[N_ALIVE, c] == 0 or nodes[N_CHILDREN, c] > 0 or nodes[N_STAMP, c] != s:
            continue
        if nodes[N_LOCK, c] == clock:
            aside = set_aside(aside, n_aside, s, c)
            n_aside += 1
            continue
        run = nodes[N_D1, c] - nodes[N_D0, c]
        if whole or run <= tokens:
            uncache(tr, state, nodes[N_BOTTOM, c], nodes[N_D0, c])
            remove_leaf(tr, nodes, c)
            p = nodes[N_PARENT, c]
            if p != 0 and nodes[N_CHILDREN, p] == 0:
                _push(nodes, hp, sc, p)
            sc[C_SIZE] -= run
            tokens -= run
            freed += run
        else:
            cut_tail(tr, state, nodes, c, nodes[N_D1, c] - tokens)
            sc[C_SIZE] -= tokens
            freed += tokens
            tokens = 0
            heap_push(hp[0], hp[1], sc, s, c)
    for i in range(n_aside):
        heap_push(hp[0], hp[1], sc, aside[0, i], aside[1, i])
    return aside


@njit(cache=True)
def radix_serve(tr, state, nodes, hp, sc, path, ends, batch, hits):
    """Serve the queries ending at trie nodes ``ends`` in consecutive batches of ``batch`` (the last may be
    shorter), writing each query's hits into ``hits``; return the (possibly enlarged) node and heap arrays.

    Per batch, as RadixPolicy.serve: the clock ticks; each query is matched against the pre-batch cache
    (refresh, split, lock); if the batch's union of missing tokens overflows the budget by ``overflow`` >
    0, leaves are evicted to free ``overflow`` tokens (shortfall) or all ``missing`` ones (allocation, as
    far as anything is evictable); then each query is matched again (if the batch has more than one) and
    its rest inserted as a new leaf."""
    n = ends.size
    starts = np.empty(batch, dtype=np.int64)
    aside = np.empty((2, 16), dtype=np.int64)
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        size = stop - start
        nodes = grow_columns(nodes, sc[C_LAST_CID] + 3 * size + 1)
        hp = grow_columns(hp, sc[C_HEAP] + 3 * size + 1)
        sc[C_CLOCK] += 1
        clock = sc[C_CLOCK]
        missing = 0
        for q in range(start, stop):
            plen = load_path(tr, ends[q], path)
            node, matched = _match(tr, state, nodes, hp, sc, path, plen)
            hits[q] = matched
            starts[q - start] = node
            for i in range(plen):
                v = path[i]
                if state[S_SEEN, v] != clock:
                    state[S_SEEN, v] = clock
                    missing += tr[T_EDGE, v] - state[S_KEPT, v]
        overflow = sc[C_SIZE] + missing - sc[C_BUDGET]
        if overflow > 0:
            aside = _evict(tr, state, nodes, hp, sc, aside, missing if sc[C_ALLOCATION] else overflow, overflow)
        for q in range(start, stop):
            plen = load_path(tr, ends[q], path)
            if size > 1:
                node, matched = _match(tr, state, nodes, hp, sc, path, plen)
            else:
                node, matched = starts[0], hits[q]
            _insert(tr, state, nodes, hp, sc, path, plen, node, matched)
    return nodes, hp


@njit(cache=True)
def cached_prefix_of(parent, kept, end):
    """The tokens cached on the root path of trie node ``end`` (``kept[v]`` per edge v, ``parent`` the trie's
    parent array): the hits of a query ending there. Every compiled core's ``cached_prefix``."""
    total = 0
    v = end
    rounds_left = parent.size  # a root path: at most (trie nodes - 1) nodes below the root
    while v != 0:
        if rounds_left == 0:
            raise RuntimeError(_CACHED_PREFIX_OF_LIMIT)
        rounds_left -= 1
        total += kept[v]
        v = parent[v]
    return total
