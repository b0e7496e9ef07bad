"""Invariants of the compiled radix, rlt-authors, leaf-sampler and LFU cores' own data structures, as their modules'
docstrings state them, read directly from a policy object's arrays (tests/policies/test_compiled_structure.py
checks them after every batch; tests/conftest.py checks every fresh object before its first query, which
a broken initial state could send into an endless loop).

- the dynamic radix tree (both cores): node 0 is the alive root; every other alive node covers the token
  nodes at depths (d0, d1], d0 < d1, below its alive parent's d1, on the root path of its ``bottom`` (the
  shallowest trie node of depth >= d1), its first token on edge ``key``; ``children`` counts its alive
  children, on distinct edges; ``mid`` is the child that begins strictly inside a trie edge, else -1;
  ``kept[v]`` is the number of edge v's tokens the alive nodes cover (prefix-closed, summing to the cache's
  size, at most B); ``first[v]`` the alive node holding edge v's head token, else -1; flags are 0 or 1;
- the radix core: every alive leaf has a heap entry with its current stamp, and the heap is a binary
  min-heap of (stamp, cid);
- the rlt-authors core: each node's children list (``tail``, ``prev``, ``next``) holds its alive children
  and ends in -1; the treap holds exactly the alive leaves, in ``collect_leaves``' order (the last inserted
  child first, each subtree whole), with parent links, heap-ordered priorities, weights 1 exactly for the
  unmarked ones (no batch locks anything between batches) and subtree sums; the candidates' token total;
  the marked nodes' list, with ``marked_count`` their tokens; free ids dead, and every dead id free;
- the edge-cache core (LFU-leaf, RLT, random-leaf): the trie's own arrays; ``kept`` per edge, prefix-closed,
  summing to the cache's size, at most B; ``children`` its cached children; no edge seen by a later batch;
  the samplers: the marks (RLT's stay, each edge listed once; random-leaf has none between batches); the pool,
  exactly the unmarked cached leaves, each at the slot ``slot`` names (-1 off the pool); at least one phase;
  LFU: a binary min-heap in which every cached leaf edge has an entry with its own count and last request, no
  last request ahead, and no mark or pool entry.
"""

from __future__ import annotations

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.compiled import authors as A
from kvtheory.policies.compiled import edge_cache as E
from kvtheory.policies.compiled import radix_layout as R
from kvtheory.policies.compiled.authors import CompiledAuthorsRLT
from kvtheory.policies.compiled.edge_cache import CompiledLeafSampler, CompiledLFU
from kvtheory.policies.radix_core import CompiledRadix


def _is_ancestor(trie: PrefixTrie, a: int, b: int) -> bool:
    """Whether trie node ``a`` is ``b`` or one of its ancestors."""
    while b != a and b != 0:
        b = trie.parent[b]
    return b == a


def _flag(values: np.ndarray, what: str) -> None:
    assert set(np.unique(values).tolist()) <= {0, 1}, f"{what} is not a 0/1 flag: {np.unique(values)}"


def _check_kept(trie: PrefixTrie, kept: np.ndarray, size: int, budget: int) -> None:
    """``kept[v]``, the tokens of edge v cached: within the edge, prefix-closed (an edge with a token cached
    hangs below a whole cached edge or the root), summing to the cache's ``size`` <= B."""
    parent, edge_len = trie.parent, trie.edge_len
    assert kept[0] == 0 and all(0 <= kept[v] <= edge_len[v] for v in range(1, trie.n_nodes)), "kept per edge"
    for v in range(1, trie.n_nodes):
        p = parent[v]
        assert kept[v] == 0 or p == 0 or kept[p] == edge_len[p], f"edge {v} is cached below a partial edge"
    assert size == kept.sum() <= budget, f"size {size}, tokens cached {kept.sum()}, budget {budget}"


def _check_edges(trie: PrefixTrie, kept: np.ndarray, children: np.ndarray, size: int, budget: int) -> None:
    """:func:`_check_kept`, and ``children[v]``: the number of v's child edges with a token cached."""
    _check_kept(trie, kept, size, budget)
    counted = np.zeros(trie.n_nodes, dtype=np.int64)
    np.add.at(counted, trie.parent[1:], kept[1:] > 0)
    assert children.tolist() == counted.tolist(), "cached children per edge"


def _check_heap(keys: np.ndarray, size: int) -> list[tuple[int, int]]:
    """The first ``size`` (a, b) pairs of ``keys``, checked to be a binary min-heap."""
    entries = list(zip(keys[0, :size].tolist(), keys[1, :size].tolist()))
    assert all(entries[(i - 1) // 2] <= entries[i] for i in range(1, size)), "the heap is not a min-heap"
    return entries


def check_tree(trie: PrefixTrie, state: np.ndarray, nodes: np.ndarray, last: int, size: int, budget: int) -> list[int]:
    """Assert the dynamic radix tree's invariants (ids 0..``last``); return the alive node ids."""
    depth, parent = trie.depth, trie.parent
    _flag(nodes[R.N_ALIVE, : last + 1], "alive")
    alive = [x for x in range(last + 1) if nodes[R.N_ALIVE, x]]
    assert alive[:1] == [0], "the root (node 0) is not alive"
    assert (nodes[R.N_D1, 0], nodes[R.N_BOTTOM, 0]) == (0, 0), "the root does not end at the trie's root"
    children: dict[int, list[int]] = {x: [] for x in alive}
    kept = np.zeros(trie.n_nodes, dtype=np.int64)
    first = np.full(trie.n_nodes, -1, dtype=np.int64)
    for x in alive[1:]:
        p, d0, d1 = (int(nodes[row, x]) for row in (R.N_PARENT, R.N_D0, R.N_D1))
        bottom, key = int(nodes[R.N_BOTTOM, x]), int(nodes[R.N_KEY, x])
        assert p in children, f"node {x}'s parent {p} is not alive"
        children[p].append(x)
        assert nodes[R.N_D1, p] == d0 < d1, f"node {x} covers ({d0}, {d1}] below a parent ending at {nodes[R.N_D1, p]}"
        assert depth[parent[bottom]] < d1 <= depth[bottom], f"node {x}'s bottom {bottom} is not where depth {d1} is"
        assert _is_ancestor(trie, key, bottom) and depth[parent[key]] <= d0 < depth[key], f"node {x}'s key {key}"
        if p != 0:
            assert _is_ancestor(trie, int(nodes[R.N_BOTTOM, p]), key), f"node {x} is not on its parent's path"
        u = bottom
        while u != 0 and depth[u] > d0:
            kept[u] += min(depth[u], d1) - max(depth[parent[u]], d0)
            if d0 <= depth[parent[u]]:
                assert first[u] == -1, f"two nodes hold the head token of edge {u}"
                first[u] = x
            u = parent[u]
    for x, below in children.items():
        assert nodes[R.N_CHILDREN, x] == len(below), f"node {x} counts {nodes[R.N_CHILDREN, x]} children"
        keys = [int(nodes[R.N_KEY, c]) for c in below]
        assert len(set(keys)) == len(keys), f"node {x} has two children on one edge"
        inside = [c for c in below if nodes[R.N_D0, c] != depth[parent[nodes[R.N_KEY, c]]]]
        assert len(inside) <= 1 and nodes[R.N_MID, x] == (inside[0] if inside else -1), f"node {x}'s mid child"
    assert state[R.S_KEPT, 1:].tolist() == kept[1:].tolist(), "kept tokens per edge"
    _check_kept(trie, kept, size, budget)
    assert state[R.S_FIRST, 1:].tolist() == first[1:].tolist(), "head token's node per edge"
    return alive


def check_radix(policy: CompiledRadix, trie: PrefixTrie, budget: int) -> None:
    nodes, sc, heap = policy._nodes, policy._scalars, policy._heap
    alive = check_tree(trie, policy._state, nodes, int(sc[R.C_LAST_CID]), int(sc[R.C_SIZE]), budget)
    entries = _check_heap(heap, int(sc[R.C_HEAP]))
    for x in alive[1:]:
        if nodes[R.N_CHILDREN, x] == 0:
            assert (nodes[R.N_STAMP, x], x) in entries, f"leaf {x} has no heap entry with its stamp"
    assert nodes[R.N_LOCK, alive].max() <= sc[R.C_CLOCK] and nodes[R.N_STAMP, alive].max() <= sc[R.C_CLOCK]


def _collect_order(children: dict[int, list[int]]) -> list[int]:
    """The alive leaves as ``collect_leaves`` lists them: a stack of children, pushed in insertion order."""
    order, stack = [], [0]
    while stack:
        x = stack.pop()
        if children[x]:
            stack.extend(children[x])
        elif x != 0:
            order.append(x)
    return order


def _children_list(nodes: np.ndarray, p: int, bound: int) -> list[int]:
    """Node ``p``'s children list from the first inserted, read backwards from its tail (at most ``bound``)."""
    listed, x = [], int(nodes[A.N_TAIL, p])
    while x != -1:
        assert 0 <= x and len(listed) < bound, f"node {p}'s children list does not end in -1"
        listed.append(x)
        after, x = x, int(nodes[A.N_PREV, x])
        assert x < 0 or nodes[A.N_NEXT, x] == after, f"node {p}'s children list: next of {x} is not {after}"
    assert not listed or nodes[A.N_NEXT, listed[0]] == -1, f"node {p}'s last child has a next"
    return listed[::-1]


def _treap_in_order(nodes: np.ndarray, root: int, bound: int) -> list[int]:
    """The treap's nodes in order; each node's parent link, heap order of priorities and subtree sum checked."""
    order: list[int] = []

    def visit(x: int, up: int) -> int:
        assert len(order) < bound, "the treap does not end"
        assert nodes[A.N_TUP, x] == up, f"treap node {x}'s parent link is {nodes[A.N_TUP, x]}, not {up}"
        assert up < 0 or nodes[A.N_PRIO, up] >= nodes[A.N_PRIO, x], f"treap node {x} outranks its parent"
        total = int(nodes[A.N_W, x])
        left, right = int(nodes[A.N_TL, x]), int(nodes[A.N_TR, x])
        assert min(left, right) >= -1, f"treap node {x}'s children links"
        if left >= 0:
            total += visit(left, x)
        order.append(x)
        if right >= 0:
            total += visit(right, x)
        assert nodes[A.N_SUM, x] == total, f"treap node {x}'s subtree sum"
        return total

    assert root >= -1, f"the treap's root is {root}"
    if root >= 0:
        visit(root, -1)
    return order


def check_authors(policy: CompiledAuthorsRLT, trie: PrefixTrie, budget: int) -> None:
    nodes, sc, lists = policy._nodes, policy._scalars, policy._lists
    last = int(sc[A.C_LAST_CID])
    alive = check_tree(trie, policy._state, nodes, last, int(sc[A.C_SIZE]), budget)
    for row, what in ((A.N_MARKED, "marked"), (A.N_IN, "in the treap"), (A.N_W, "weight")):
        _flag(nodes[row, : last + 1], what)
    children = {x: _children_list(nodes, x, len(alive)) for x in alive}
    for x, listed in children.items():
        assert sorted(listed) == sorted(c for c in alive[1:] if nodes[A.N_PARENT, c] == x), f"node {x}'s list"
    leaves = _collect_order(children)
    assert _treap_in_order(nodes, int(sc[A.C_TREAP]), len(alive)) == leaves, "treap order is not collect order"
    assert [x for x in range(last + 1) if nodes[A.N_IN, x]] == sorted(leaves)
    candidates = {x for x in leaves if not nodes[A.N_MARKED, x]}
    tokens = {x: int(nodes[A.N_D1, x] - nodes[A.N_D0, x]) for x in alive}
    for x in range(last + 1):
        assert nodes[A.N_W, x] == (x in candidates), f"node {x}'s weight"
        assert nodes[A.N_COUNTED, x] == (tokens[x] if x in candidates else 0), f"node {x}'s counted tokens"
    assert sc[A.C_CAND_TOKENS] == sum(tokens[x] for x in candidates)
    marked = lists[A.L_MARKED, : sc[A.C_N_MARKED]].tolist()
    assert len(set(marked)) == len(marked) and set(marked) == {x for x in range(last + 1) if nodes[A.N_MARKED, x]}
    assert 0 not in marked and set(marked) <= set(alive), "a mark on the root or on a dead node"
    assert sc[A.C_MARKED_COUNT] == policy.marked_count == sum(tokens[x] for x in marked) <= budget
    free = lists[A.L_FREE, : sc[A.C_N_FREE]].tolist()
    assert sorted(free) == [x for x in range(1, last + 1) if not nodes[A.N_ALIVE, x]], "free ids"


def check_edge_cache(policy: CompiledLeafSampler | CompiledLFU, trie: PrefixTrie, budget: int) -> None:
    st = policy._state
    assert [st.parent.tolist(), st.edge_len.tolist(), st.ends.tolist()] == [trie.parent, trie.edge_len, trie.end]
    kept, children, n = st.kept, st.children, trie.n_nodes
    _check_edges(trie, kept, children, int(st.counters[E._SIZE]), budget)
    assert st.seen.max() < st.counters[E._STEP], "no edge seen by a batch not served yet"
    if isinstance(policy, CompiledLFU):
        entries = _check_heap(st.heap, int(st.counters[E._HEAP]))
        for v in range(1, n):
            if kept[v] > 0 and children[v] == 0:
                key = (st.count[v], st.last[v] * (n + 1) + n - v)
                assert key in entries, f"leaf edge {v} has no heap entry with its count and last request"
        assert st.last.max() <= max(st.counters[E._STEP] - 1, 0), "a last request ahead of the batches served"
        assert not st.marked.any() and st.counters[E._POOL] == st.counters[E._MARKED] == 0, "LFU marks nothing"
        return
    for flags, what in ((st.marked, "marked"), (st.listed, "listed")):
        _flag(flags, what)
    listed = st.marked_list[: st.counters[E._MARKED]].tolist()
    assert len(set(listed)) == len(listed) and set(listed) == set(np.flatnonzero(st.listed).tolist())
    # RLT keeps its marks between batches, each edge listed once; random-leaf unmarks the batch after it
    assert st.marked.tolist() == (st.listed.tolist() if policy._rule == E.RLT else [0] * n), "marks"
    size = int(st.counters[E._POOL])
    pool = st.pool[:size].tolist()
    candidates = [v for v in range(1, n) if kept[v] > 0 and children[v] == 0 and not st.marked[v]]
    assert sorted(pool) == candidates, "the pool is not the unmarked cached leaves"
    assert st.slot.tolist() == [pool.index(v) if v in pool else -1 for v in range(n)], "pool slots"
    assert st.counters[E._PHASES] >= 1, "phases"


STRUCTURED = (CompiledRadix, CompiledAuthorsRLT, CompiledLeafSampler, CompiledLFU)


def check_structure(policy: CompiledRadix | CompiledAuthorsRLT | CompiledLeafSampler | CompiledLFU) -> None:
    """Assert every invariant of the module docstring on ``policy``'s arrays (its own trie and budget)."""
    check = {
        CompiledRadix: check_radix,
        CompiledAuthorsRLT: check_authors,
        CompiledLeafSampler: check_edge_cache,
        CompiledLFU: check_edge_cache,
    }
    check[type(policy)](policy, policy.trie, policy.budget)
