"""Compiled (numba) core of rlt-authors (RLT as the authors' SGLang fork runs it) on any prefix trie.

It does what :class:`~kvtheory.policies.rlt_authors.AuthorsRLT` does, step for step and draw for draw
from the same ``numpy.random.Generator`` (one ``integers(n)`` per evicted token, drawn as numpy does:
:func:`~kvtheory.policies.compiled.edge_cache.bounded_draw`), so the two give the same hits, cache, marks and
phase counts (tests/policies/test_authors_core.py compares them):

- The dynamic radix tree is the radix kernel's (:mod:`kvtheory.policies.compiled.radix`: int64 rows of
  ``nodes`` indexed by creation id, the per-trie-node ``state`` of first node and tokens kept, and its
  shared walk, split, attach, removal and tail-cut functions), with each node's children also in a list
  in insertion order (``tail`` child, ``prev`` / ``next`` siblings; a split's upper node takes the lower
  one's place), the order in which ``collect_leaves`` visits them.
- Marks, ``marked_count``, the list of marked nodes and rules P1, R1 and R2 as the per-edge class has
  them; a batch's locks are the radix kernel's lock clock on each matched root path.
- The candidates. ``collect_leaves``' depth-first walk (a stack of children) lists the leaves in a fixed
  order: down each node's children from the last inserted, each subtree whole. Instead of walking the
  tree at every ``evict(k)``, every leaf is kept in that order in a treap (a binary search tree by
  sequence position, heap-ordered by a hash of the node id, which a node taking a leaf's place inherits
  from that leaf) whose entries weigh 1 when the leaf is a candidate (unmarked, unlocked) and 0
  otherwise, with subtree sums, so the i-th candidate is found in O(log n). A new leaf goes just before
  the first leaf of its parent's subtree (or in its parent's place, if that was a leaf); a deleted leaf
  leaves, or its parent takes its place when it becomes a leaf.
- ``evict(k)``: the draws mutate ``cy_evict``'s list (the last entry fills the drawn slot, the drawn leaf
  or its parent goes last), kept as an overlay of changed slots over the treap's candidate sequence, which
  stays as it was collected until the draws end; then the emptied leaves are uncached and leave the
  treap, and the leaves that lost tokens are cut, in the order they were first drawn (each after all of
  its descendants).

Memory: O(trie nodes + queries) int64 arrays: a query creates at most three nodes (a split in each of its
two walks and a new leaf), and a deleted node's id is reused, so the arrays grow with the nodes alive at
once. The kernel: :func:`authors_serve`; its object: :class:`CompiledAuthorsRLT`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kvtheory.jit import njit
from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import KernelServed
from kvtheory.policies.compiled.edge_cache import bounded_draw
from kvtheory.policies.compiled.radix import (
    attach_leaf,
    cached_prefix_of,
    cut_tail,
    descend,
    first_key,
    grow_columns,
    load_path,
    remove_leaf,
    split_node,
    uncache,
)
from kvtheory.policies.compiled.radix_layout import (
    N_ALIVE,
    N_BOTTOM,
    N_CHILDREN,
    N_D0,
    N_D1,
    N_LOCK,
    N_MID,
    N_PARENT,
    S_FIRST,
    S_KEPT,
    S_SEEN,
    T_DEPTH,
    T_EDGE,
    T_PARENT,
    TREE_ROWS,
    trie_arrays,
)
from kvtheory.policies.native import bit_source

#: the step-limit errors of the kernels below (constants: numba raises them without building a string)
_PER_NODE = " of the compiled rlt-authors core exceeded its step limit of one step per node"
_ADD_UP_LIMIT = "internal error: kernel _add_up" + _PER_NODE
_INSERT_BEFORE_LIMIT = "internal error: kernel _insert_before" + _PER_NODE
_DELETE_LIMIT = "internal error: kernel _delete" + _PER_NODE
_MARK_LIMIT = "internal error: kernel _mark" + _PER_NODE
_MARK_PATH_LIMIT = "internal error: kernel _mark_path" + _PER_NODE
_ADD_LEAF_LIMIT = "internal error: kernel _add_leaf" + _PER_NODE
_CANDIDATE_LIMIT = "internal error: kernel _candidate" + _PER_NODE
_EVICT_LIMIT = "internal error: kernel _evict" + _PER_NODE
_AUTHORS_SERVE_LIMIT = "internal error: kernel authors_serve" + _PER_NODE

# rows of ``nodes`` after the shared tree's: mark, children list, treap (left, right, up, in it, own weight,
# subtree sum, priority), tokens counted in the candidates' total, last eviction that drew it, tokens left
_ROWS = range(TREE_ROWS, TREE_ROWS + 14)
N_MARKED, N_TAIL, N_PREV, N_NEXT, N_TL, N_TR, N_TUP, N_IN, N_W, N_SUM, N_PRIO, N_COUNTED, N_DRAWN, N_LEFT = _ROWS
# rows of ``lists`` (sized as ``nodes``): marked nodes, nodes drawn by one eviction, its list's overlay,
# ids of deleted nodes free for reuse, one root path
L_MARKED, L_DRAWN, L_SLOT, L_SLOT_SET, L_FREE, L_CHAIN = range(6)
# cells of the scalar array
C_LAST_CID, C_SIZE, C_BUDGET, C_CLOCK, C_ALLOCATION, C_MARKED_COUNT, C_N_MARKED = range(7)
C_P1, C_R1, C_R2, C_TREAP, C_CAND_TOKENS, C_EVICTION, C_N_FREE = range(7, 14)
N_SCALARS = 14


# -- the treap of leaves in collect order ---------------------------------------------------------------
@njit(cache=True)
def _sum(nodes, x):
    return nodes[N_SUM, x] if x >= 0 else 0


@njit(cache=True)
def _pull(nodes, x):
    nodes[N_SUM, x] = nodes[N_W, x] + _sum(nodes, nodes[N_TL, x]) + _sum(nodes, nodes[N_TR, x])


@njit(cache=True)
def _add_up(nodes, x, delta):
    """Add ``delta`` to the subtree sums of treap node ``x`` and of its ancestors."""
    rounds_left = nodes.shape[1]  # up the treap: at most one step per node
    while x >= 0:
        if rounds_left == 0:
            raise RuntimeError(_ADD_UP_LIMIT)
        rounds_left -= 1
        nodes[N_SUM, x] += delta
        x = nodes[N_TUP, x]


@njit(cache=True)
def _relink(nodes, sc, old, new, up):
    """``new`` takes ``old``'s place under treap node ``up`` (-1: as the treap's root)."""
    if up < 0:
        sc[C_TREAP] = new
    elif nodes[N_TL, up] == old:
        nodes[N_TL, up] = new
    else:
        nodes[N_TR, up] = new
    if new >= 0:
        nodes[N_TUP, new] = up


@njit(cache=True)
def _rotate_up(nodes, sc, x):
    """Rotate treap node ``x`` above its parent, keeping the sequence order."""
    p = nodes[N_TUP, x]
    _relink(nodes, sc, p, x, nodes[N_TUP, p])
    if nodes[N_TL, p] == x:
        inner = nodes[N_TR, x]
        nodes[N_TL, p] = inner
        nodes[N_TR, x] = p
    else:
        inner = nodes[N_TL, x]
        nodes[N_TR, p] = inner
        nodes[N_TL, x] = p
    if inner >= 0:
        nodes[N_TUP, inner] = p
    nodes[N_TUP, p] = x
    _pull(nodes, p)
    _pull(nodes, x)


@njit(cache=True)
def _priority(x):
    """A fixed pseudo-random treap priority of node id ``x`` (splitmix64's finalizer): it draws nothing
    from the policy's generator."""
    z = np.uint64(x) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.int64((z ^ (z >> np.uint64(31))) >> np.uint64(1))


@njit(cache=True)
def _insert_before(nodes, sc, e, h):
    """Leaf ``e`` (weight 0) enters the sequence just before leaf ``h`` (-1: the sequence is empty)."""
    nodes[N_TL, e] = -1
    nodes[N_TR, e] = -1
    nodes[N_IN, e] = 1
    nodes[N_W, e] = 0
    nodes[N_SUM, e] = 0
    nodes[N_PRIO, e] = _priority(e)
    if h < 0:
        _relink(nodes, sc, -1, e, -1)
        return
    if nodes[N_TL, h] < 0:
        nodes[N_TL, h] = e
        nodes[N_TUP, e] = h
    else:
        u = nodes[N_TL, h]
        rounds_left = nodes.shape[1]  # down the treap: at most one step per node
        while nodes[N_TR, u] >= 0:
            if rounds_left == 0:
                raise RuntimeError(_INSERT_BEFORE_LIMIT)
            rounds_left -= 1
            u = nodes[N_TR, u]
        nodes[N_TR, u] = e
        nodes[N_TUP, e] = u
    rounds_left = nodes.shape[1]  # each rotation lifts e one level: at most one per node
    while nodes[N_TUP, e] >= 0 and nodes[N_PRIO, e] > nodes[N_PRIO, nodes[N_TUP, e]]:
        if rounds_left == 0:
            raise RuntimeError(_INSERT_BEFORE_LIMIT)
        rounds_left -= 1
        _rotate_up(nodes, sc, e)


@njit(cache=True)
def _replace(nodes, sc, x, y):
    """Node ``y`` takes leaf ``x``'s place in the sequence (weight 0; x's weight is 0 already)."""
    for row in (N_TL, N_TR, N_PRIO, N_SUM):
        nodes[row, y] = nodes[row, x]
    nodes[N_W, y] = 0
    nodes[N_IN, y] = 1
    nodes[N_IN, x] = 0
    _relink(nodes, sc, x, y, nodes[N_TUP, x])
    for child in (nodes[N_TL, y], nodes[N_TR, y]):
        if child >= 0:
            nodes[N_TUP, child] = y


@njit(cache=True)
def _delete(nodes, sc, x):
    """Leaf ``x`` leaves the sequence, its weight with it."""
    rounds_left = nodes.shape[1]  # each rotation sinks x one level: at most one per node
    while nodes[N_TL, x] >= 0 or nodes[N_TR, x] >= 0:
        if rounds_left == 0:
            raise RuntimeError(_DELETE_LIMIT)
        rounds_left -= 1
        left, right = nodes[N_TL, x], nodes[N_TR, x]
        if right < 0 or (left >= 0 and nodes[N_PRIO, left] > nodes[N_PRIO, right]):
            _rotate_up(nodes, sc, left)
        else:
            _rotate_up(nodes, sc, right)
    up = nodes[N_TUP, x]
    _relink(nodes, sc, x, -1, up)
    _add_up(nodes, up, -nodes[N_W, x])
    nodes[N_IN, x] = 0
    nodes[N_W, x] = 0


@njit(cache=True)
def _candidate(nodes, sc, i):
    """The i-th candidate (0-based) in collect order; -1 if the descent outlasts its step limit, one treap
    level per step and at most one step per node (a corrupt treap: :func:`_slot` raises, outside this
    descent, which runs twice per drawn token)."""
    x = sc[C_TREAP]
    rounds_left = nodes.shape[1]
    while rounds_left > 0:
        rounds_left -= 1
        left = _sum(nodes, nodes[N_TL, x])
        if i < left:
            x = nodes[N_TL, x]
            continue
        i -= left
        if nodes[N_W, x]:
            if i == 0:
                return x
            i -= 1
        x = nodes[N_TR, x]
    return -1


@njit(cache=True, inline="always")  # called per query: no call overhead
def _refresh(nodes, sc, x):
    """Give node ``x`` its weight (1 if it is a candidate: a leaf in the sequence, alive, unmarked and not
    locked by the batch being served) and count its tokens in the candidates' total accordingly."""
    candidate = (
        nodes[N_IN, x] == 1
        and nodes[N_ALIVE, x] == 1
        and nodes[N_CHILDREN, x] == 0
        and nodes[N_MARKED, x] == 0
        and nodes[N_LOCK, x] != sc[C_CLOCK]
    )
    counted = nodes[N_D1, x] - nodes[N_D0, x] if candidate else 0
    sc[C_CAND_TOKENS] += counted - nodes[N_COUNTED, x]
    nodes[N_COUNTED, x] = counted
    if nodes[N_W, x] != candidate:
        _add_up(nodes, x, candidate - nodes[N_W, x])
        nodes[N_W, x] = candidate


# -- the children lists ------------------------------------------------------------------------------
@njit(cache=True)
def _append_child(nodes, p, c):
    last = nodes[N_TAIL, p]
    nodes[N_PREV, c] = last
    nodes[N_NEXT, c] = -1
    if last >= 0:
        nodes[N_NEXT, last] = c
    nodes[N_TAIL, p] = c


@njit(cache=True)
def _unlink_child(nodes, p, c):
    before, after = nodes[N_PREV, c], nodes[N_NEXT, c]
    if before >= 0:
        nodes[N_NEXT, before] = after
    if after >= 0:
        nodes[N_PREV, after] = before
    else:
        nodes[N_TAIL, p] = before


@njit(cache=True)
def _new_node(nodes, lists, sc):
    """A node id (a deleted node's if one is free, else a new one) with empty marks, children list and
    treap fields."""
    if sc[C_N_FREE] > 0:
        sc[C_N_FREE] -= 1
        c = lists[L_FREE, sc[C_N_FREE]]
    else:
        c = sc[C_LAST_CID] + 1
        sc[C_LAST_CID] = c
    for row in (N_TAIL, N_PREV, N_NEXT, N_TL, N_TR, N_TUP):
        nodes[row, c] = -1
    for row in (N_MARKED, N_IN, N_W, N_SUM, N_COUNTED, N_DRAWN):
        nodes[row, c] = 0
    return c


# -- marks and phases --------------------------------------------------------------------------------
@njit(cache=True)
def _set_mark(nodes, lists, sc, x, counted):
    nodes[N_MARKED, x] = 1
    lists[L_MARKED, sc[C_N_MARKED]] = x
    sc[C_N_MARKED] += 1
    if counted:
        sc[C_MARKED_COUNT] += nodes[N_D1, x] - nodes[N_D0, x]
    _refresh(nodes, sc, x)


@njit(cache=True)
def _new_phase(nodes, lists, sc, rule):
    """Clear every mark; count a start of phase rule ``rule`` (C_P1, C_R1 or C_R2)."""
    for i in range(sc[C_N_MARKED]):
        x = lists[L_MARKED, i]
        nodes[N_MARKED, x] = 0
        _refresh(nodes, sc, x)
    sc[C_N_MARKED] = 0
    sc[C_MARKED_COUNT] = 0
    sc[rule] += 1


@njit(cache=True, inline="always")  # called per query: no call overhead
def _mark(nodes, lists, sc, x):
    """Mark ``x``, counting its tokens; rule P1 when the count reaches B (its root path marked again)."""
    if nodes[N_MARKED, x]:
        return
    _set_mark(nodes, lists, sc, x, True)
    if sc[C_MARKED_COUNT] >= sc[C_BUDGET]:
        _new_phase(nodes, lists, sc, C_P1)
        rounds_left = nodes.shape[1]  # up a root path: at most one step per node
        while x != 0:
            if rounds_left == 0:
                raise RuntimeError(_MARK_LIMIT)
            rounds_left -= 1
            if not nodes[N_MARKED, x]:
                _set_mark(nodes, lists, sc, x, True)
            x = nodes[N_PARENT, x]


# -- the tree operations -------------------------------------------------------------------------------
@njit(cache=True)
def _split_and_mark(tr, state, nodes, lists, sc, c, at):
    """Split ``c`` at trie node ``at``; the new upper node takes c's place in its parent's children list and
    is marked, counted only if ``c`` is unmarked. Return it."""
    h = _new_node(nodes, lists, sc)
    p = nodes[N_PARENT, c]
    split_node(tr, state, nodes, c, at, h)
    before, after = nodes[N_PREV, c], nodes[N_NEXT, c]
    nodes[N_PREV, h] = before
    nodes[N_NEXT, h] = after
    if before >= 0:
        nodes[N_NEXT, before] = h
    if after >= 0:
        nodes[N_PREV, after] = h
    else:
        nodes[N_TAIL, p] = h
    nodes[N_PREV, c] = -1
    nodes[N_NEXT, c] = -1
    nodes[N_TAIL, h] = c
    _refresh(nodes, sc, c)  # its tokens are fewer
    if nodes[N_MARKED, c]:
        _set_mark(nodes, lists, sc, h, False)
    else:
        _mark(nodes, lists, sc, h)
    return h


@njit(cache=True, inline="always")  # called per query: no call overhead
def _mark_path(nodes, lists, sc, node):
    """Mark the nodes of ``node``'s root path from the top down, as insert marks the nodes it matches whole."""
    n = 0
    limit = nodes.shape[1]  # up a root path: at most one step per node
    while node != 0 and n < limit:
        lists[L_CHAIN, n] = node
        n += 1
        node = nodes[N_PARENT, node]
    if node != 0:
        raise RuntimeError(_MARK_PATH_LIMIT)
    for i in range(n - 1, -1, -1):
        _mark(nodes, lists, sc, lists[L_CHAIN, i])


@njit(cache=True, inline="always")  # called per query: no call overhead
def _add_leaf(tr, state, nodes, lists, sc, path, plen, node, matched):
    """Cache the rest of the path below ``node`` (matched depth ``matched``) as a new marked leaf."""
    end = path[plen - 1]
    if matched < tr[T_DEPTH, end]:
        leaf = _new_node(nodes, lists, sc)
        first = node  # the first leaf of node's subtree in collect order: down the last children
        rounds_left = nodes.shape[1]  # at most one step per node
        while nodes[N_CHILDREN, first] > 0:
            if rounds_left == 0:
                raise RuntimeError(_ADD_LEAF_LIMIT)
            rounds_left -= 1
            first = nodes[N_TAIL, first]
        attach_leaf(tr, state, nodes, leaf, node, matched, end, first_key(tr, path, matched))
        _append_child(nodes, node, leaf)
        if first == 0:
            _insert_before(nodes, sc, leaf, -1)
        elif first == node:
            _refresh(nodes, sc, node)  # no longer a leaf: weight 0
            _replace(nodes, sc, node, leaf)
        else:
            _insert_before(nodes, sc, leaf, first)
        sc[C_SIZE] += tr[T_DEPTH, end] - matched
        _mark(nodes, lists, sc, leaf)


@njit(cache=True)
def _slot(lists, sc, nodes, i):
    """Entry i of the eviction's candidate list: its overlay, else the i-th candidate as collected."""
    if lists[L_SLOT_SET, i] == sc[C_EVICTION]:
        return lists[L_SLOT, i]
    x = _candidate(nodes, sc, i)
    if x < 0:
        raise RuntimeError(_CANDIDATE_LIMIT)
    return x


@njit(cache=True)
def _set_slot(lists, sc, i, x):
    lists[L_SLOT, i] = x
    lists[L_SLOT_SET, i] = sc[C_EVICTION]


@njit(cache=True)
def _evict(tr, state, nodes, lists, sc, tokens, next_uint32, rng_state):
    """``evict(k)`` with k = ``tokens``: rules R1 and R2, then k uniform draws over the candidate list, one
    token each (see the module docstring); return the tokens freed. Each draw frees one token: at most
    ``tokens`` draws."""
    if tokens + sc[C_MARKED_COUNT] >= sc[C_BUDGET]:
        _new_phase(nodes, lists, sc, C_R1)
    count = _sum(nodes, sc[C_TREAP])
    if count == 0 or sc[C_CAND_TOKENS] < tokens:
        _new_phase(nodes, lists, sc, C_R2)
        count = _sum(nodes, sc[C_TREAP])
    sc[C_EVICTION] += 1
    eviction = sc[C_EVICTION]
    clock = sc[C_CLOCK]
    freed, n_drawn = 0, 0
    while count > 0 and freed < tokens:  # each draw frees a token: at most ``tokens`` draws
        index = 0 if count == 1 else bounded_draw(next_uint32, rng_state, count)
        leaf = _slot(lists, sc, nodes, index)
        _set_slot(lists, sc, index, _slot(lists, sc, nodes, count - 1))
        if nodes[N_DRAWN, leaf] != eviction:
            nodes[N_DRAWN, leaf] = eviction
            nodes[N_LEFT, leaf] = nodes[N_D1, leaf] - nodes[N_D0, leaf]
            lists[L_DRAWN, n_drawn] = leaf
            n_drawn += 1
        nodes[N_LEFT, leaf] -= 1
        freed += 1
        if nodes[N_LEFT, leaf] > 0:
            _set_slot(lists, sc, count - 1, leaf)
            continue
        p = nodes[N_PARENT, leaf]
        remove_leaf(tr, nodes, leaf)
        _unlink_child(nodes, p, leaf)
        if p != 0 and nodes[N_MARKED, p] == 0 and nodes[N_LOCK, p] != clock and nodes[N_CHILDREN, p] == 0:
            _set_slot(lists, sc, count - 1, p)
        else:
            count -= 1
    sc[C_SIZE] -= freed
    for i in range(n_drawn):  # first-drawn order: each node after its descendants
        x = lists[L_DRAWN, i]
        if nodes[N_ALIVE, x]:
            cut_tail(tr, state, nodes, x, nodes[N_D0, x] + nodes[N_LEFT, x])
            _refresh(nodes, sc, x)
            continue
        uncache(tr, state, nodes[N_BOTTOM, x], nodes[N_D0, x])
        sc[C_CAND_TOKENS] -= nodes[N_COUNTED, x]
        nodes[N_COUNTED, x] = 0
        if nodes[N_IN, x]:
            a = nodes[N_PARENT, x]
            rounds_left = nodes.shape[1]  # up a root path (the root is alive): at most one step per node
            while not nodes[N_ALIVE, a]:
                if rounds_left == 0:
                    raise RuntimeError(_EVICT_LIMIT)
                rounds_left -= 1
                a = nodes[N_PARENT, a]
            if a != 0 and nodes[N_CHILDREN, a] == 0 and not nodes[N_IN, a]:
                _refresh(nodes, sc, x)  # weight 0
                _replace(nodes, sc, x, a)  # a's subtree, all gone, held x
                _refresh(nodes, sc, a)
            else:
                _delete(nodes, sc, x)
    for i in range(n_drawn):  # the deleted nodes' ids are free once nothing walks through them
        x = lists[L_DRAWN, i]
        if not nodes[N_ALIVE, x]:
            lists[L_FREE, sc[C_N_FREE]] = x
            sc[C_N_FREE] += 1
    return freed


@njit(cache=True)
def _grow_nodes(nodes, needed):
    """``nodes`` itself if it has ``needed`` columns, else a copy with at least twice as many; node-major in
    memory (each node's fields side by side, as the treap walks touch several fields of each node)."""
    if nodes.shape[1] >= needed:
        return nodes
    wider = np.zeros((max(needed, 2 * nodes.shape[1]), nodes.shape[0]), dtype=np.int64).T
    wider[:, : nodes.shape[1]] = nodes
    return wider


@njit(cache=True)
def authors_serve(tr, state, nodes, lists, sc, path, ends, batch, hits, next_uint32, rng_state):
    """Serve the queries ending at trie nodes ``ends`` in consecutive batches of ``batch`` (the last may be
    shorter), writing each query's hits into ``hits``; return the (possibly enlarged) ``nodes`` and ``lists``.

    Per batch, as AuthorsRLT.serve: each query is matched against the pre-batch cache (a split where its
    prefix ends inside a node, the upper node marked) and its matched root path locked; if the batch's
    ``missing`` uncached tokens overflow B by ``overflow`` > 0, one ``evict(k)``, k = ``overflow`` or
    ``missing`` (allocation), an error if it frees fewer than ``overflow``; then each query is inserted and
    the locks are released (the clock moves past them)."""
    n = ends.size
    starts = np.empty(batch, dtype=np.int64)
    for start in range(0, n, batch):
        stop = min(start + batch, n)
        nodes = _grow_nodes(nodes, sc[C_LAST_CID] + 3 * (stop - start) + 1)
        lists = grow_columns(lists, nodes.shape[1])
        sc[C_CLOCK] += 1
        clock = sc[C_CLOCK]
        missing = 0
        for q in range(start, stop):
            plen = load_path(tr, ends[q], path)
            node, matched, inside, at = descend(tr, state, nodes, path, plen)
            if inside >= 0:
                node = _split_and_mark(tr, state, nodes, lists, sc, inside, at)
                matched = tr[T_DEPTH, at]
            hits[q] = matched
            starts[q - start] = node
            x = node
            rounds_left = nodes.shape[1]  # up a root path: at most one step per node
            while x != 0 and nodes[N_LOCK, x] != clock:
                if rounds_left == 0:
                    raise RuntimeError(_AUTHORS_SERVE_LIMIT)
                rounds_left -= 1
                nodes[N_LOCK, x] = clock
                x = nodes[N_PARENT, x]
            for i in range(plen):
                v = path[i]
                if state[S_SEEN, v] != clock:
                    state[S_SEEN, v] = clock
                    missing += tr[T_EDGE, v] - state[S_KEPT, v]
        overflow = sc[C_SIZE] + missing - sc[C_BUDGET]
        if overflow > 0:
            for i in range(stop - start):  # the locked leaves leave the candidates
                _refresh(nodes, sc, starts[i])
            tokens = missing if sc[C_ALLOCATION] else overflow
            if _evict(tr, state, nodes, lists, sc, tokens, next_uint32, rng_state) < overflow:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
        for q in range(start, stop):  # insert: mark the nodes matched whole, split and mark where it ends inside
            if stop - start > 1:
                plen = load_path(tr, ends[q], path)
                node, matched, inside, at = descend(tr, state, nodes, path, plen)
            else:  # insert walks the nodes match_prefix ended at (locked, so intact): path and node are known
                node, matched, inside, at = starts[0], hits[q], -1, -1
            _mark_path(nodes, lists, sc, node)
            if inside >= 0:
                node, matched = _split_and_mark(tr, state, nodes, lists, sc, inside, at), tr[T_DEPTH, at]
            _add_leaf(tr, state, nodes, lists, sc, path, plen, node, matched)
        sc[C_CLOCK] += 1
        for i in range(stop - start):
            _refresh(nodes, sc, starts[i])
    return nodes, lists


class CompiledAuthorsRLT(KernelServed):
    """rlt-authors' cache served batch by batch through :func:`authors_serve`: the same hits, cache, marks
    and phase counts, batch for batch, as :class:`~kvtheory.policies.rlt_authors.AuthorsRLT` from the
    same seed."""

    _KEPT_ROW, _SIZE_CELL = S_KEPT, C_SIZE

    name = "rlt-authors"
    randomized = True

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        n = trie.n_nodes
        self._rng = np.random.default_rng(options.get("seed"))  # kept alive: the kernel draws from its state
        self._bits = bit_source(self._rng)
        self._trie = trie_arrays(trie)
        self._state = np.zeros((3, n), dtype=np.int64)
        self._state[S_FIRST] = -1
        self._nodes = np.zeros((64, TREE_ROWS + len(_ROWS)), dtype=np.int64).T  # node-major: see _grow_nodes
        self._nodes[N_ALIVE, 0] = 1
        for row in (N_MID, N_TAIL, N_TUP):
            self._nodes[row, 0] = -1
        self._lists = np.zeros((6, 64), dtype=np.int64)
        self._scalars = np.zeros(N_SCALARS, dtype=np.int64)
        self._scalars[C_BUDGET] = budget
        self._scalars[C_ALLOCATION] = self.evict_amount == "allocation"
        self._scalars[C_TREAP] = -1
        self._path = np.zeros(n, dtype=np.int64)
        self._ends = np.asarray(trie.end, dtype=np.int64)

    @classmethod
    def for_rule(cls, rule: type, trie: PrefixTrie, budget: int, **options) -> CompiledAuthorsRLT:
        """The core of rlt-authors alone: ``rule`` is AuthorsRLT."""
        return cls(trie, budget, **options)

    @property
    def marked_count(self) -> int:
        return int(self._scalars[C_MARKED_COUNT])

    @property
    def phase_starts(self) -> Counter[str]:
        """Starts of a phase per rule (as AuthorsRLT.phase_starts)."""
        sc = self._scalars
        return Counter({rule: int(sc[cell]) for rule, cell in (("P1", C_P1), ("R1", C_R1), ("R2", C_R2)) if sc[cell]})

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        self._nodes, self._lists = authors_serve(
            self._trie, self._state, self._nodes, self._lists, self._scalars, self._path, ends, batch, hits,
            *self._bits,
        )  # fmt: skip

    def cached_prefix(self, j: int) -> int:
        return int(cached_prefix_of(self._trie[T_PARENT], self._state[S_KEPT], self._ends[j]))
