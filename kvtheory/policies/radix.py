"""A dynamic radix tree in the manner of SGLang's RadixCache, laid over the static trie's edges.

A dynamic node covers the token nodes at depths (d0, d1] on the root path of trie node ``bottom`` (the
shallowest trie node with depth >= d1). Its children are keyed by the trie node whose edge holds their
first token, so matching, splitting, inserting and evicting cost a step per edge, never per token.
Subclasses choose the eviction order (``stamp``, then creation id ``cid``) and whether a whole node or a
single token goes at a time.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import EvictionPolicy, union_misses


class Node:
    """A node of a radix tree of runs of tokens (this module's, and rlt-authors' with its mark)."""

    __slots__ = ("parent", "children", "d0", "d1", "bottom", "key", "stamp", "cid", "alive", "marked")

    def __init__(self, parent, d0: int, d1: int, bottom: int, key: int, stamp: int = -1, cid: int = -1) -> None:
        self.parent = parent
        self.children: dict[int, Node] = {}
        self.d0 = d0
        self.d1 = d1
        self.bottom = bottom
        self.key = key
        self.stamp = stamp
        self.cid = cid
        self.alive = True
        self.marked = False


def live_nodes(root) -> list:
    """Every node below ``root`` of a radix tree of runs of tokens (this module's or rlt-authors')."""
    nodes, stack = [], list(root.children.values())
    while stack:
        node = stack.pop()
        stack.extend(node.children.values())
        nodes.append(node)
    return nodes


def descend(trie: PrefixTrie, root, path: Sequence[int]) -> tuple:
    """Walk the longest cached prefix of ``path`` down the radix tree below ``root`` (this module's or
    rlt-authors'): (last whole node, its depth d1, the whole nodes walked, the node the prefix ends inside or
    None, the trie node where it ends there). Changes nothing."""
    depth, is_ancestor = trie.depth, trie.is_ancestor
    end = path[-1]
    length = depth[end]
    node, matched, i = root, 0, 0
    walked = []
    # each round walks a whole node (matched grows by one token or more) or ends the walk
    for _ in range(length + 1):
        if matched >= length:
            return node, matched, walked, None, -1
        i = bisect_right(path, matched, lo=i, key=depth.__getitem__)  # the edge holding depth matched + 1
        child = node.children.get(path[i])
        if child is None:
            return node, matched, walked, None, -1
        if not is_ancestor(child.bottom, end):
            # the deepest node of the path on child's own path (the path nodes above it come first)
            j = bisect_left(path, True, lo=i, key=lambda v: not is_ancestor(v, child.bottom)) - 1
            return node, matched, walked, child, path[j]
        walked.append(child)
        node, matched = child, child.d1
    raise AssertionError(f"the walk down a cached prefix of {length} tokens did not end within its bound")


class RadixTree(EvictionPolicy):
    """A cache held as a radix tree of runs of tokens (:class:`Node`) below ``_root``: the tree of
    :class:`RadixPolicy` and of :mod:`kvtheory.policies.rlt_authors`, which choose what goes."""

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self._root = Node(None, 0, 0, 0, -1)

    def cached_prefix(self, j: int) -> int:
        _, matched, _, inside, at = descend(self.trie, self._root, self.trie.path(j))
        return self.trie.depth[at] if inside is not None else matched

    def kept(self) -> dict[int, int]:
        """A node's tokens are the depths (d0, d1] on the root path of trie node ``bottom``, which it shares out
        among the trie edges they lie on."""
        depth, parent = self.trie.depth, self.trie.parent
        kept: dict[int, int] = {}
        for node in live_nodes(self._root):
            v = node.bottom
            while v and depth[v] > node.d0:
                overlap = min(depth[v], node.d1) - max(depth[parent[v]], node.d0)
                if overlap > 0:
                    kept[v] = kept.get(v, 0) + overlap
                v = parent[v]
        return kept

    def _put_above(self, child: Node, at: int, stamp: int = -1, cid: int = -1) -> Node:
        """Split ``child`` at trie node ``at`` (strictly inside it): a new node (``stamp``, ``cid``) covering
        child's tokens down to ``at`` takes child's place, with ``child`` left as its only child, keyed by the
        trie node whose edge holds child's first token now. Return the new node."""
        head = Node(child.parent, child.d0, self.trie.depth[at], at, child.key, stamp, cid)
        child.parent.children[child.key] = head
        tail_key = self.trie.edge_holding(child.bottom, head.d1 + 1)
        child.parent, child.key, child.d0 = head, tail_key, head.d1
        head.children[tail_key] = child
        return head

    def _new_leaf(self, path: Sequence[int], node: Node, matched: int, stamp: int = -1, cid: int = -1) -> Node:
        """Cache the rest of ``path`` (deeper than ``matched``) below ``node`` as a new leaf; return it."""
        depth = self.trie.depth
        end = path[-1]
        i = bisect_right(path, matched, key=depth.__getitem__)  # the edge holding depth matched + 1
        leaf = Node(node, matched, depth[end], end, path[i], stamp, cid)
        node.children[path[i]] = leaf
        self.size += leaf.d1 - leaf.d0
        return leaf


class RadixPolicy(RadixTree):
    """Leaf eviction on a radix tree of runs of tokens, ordered by (stamp, cid), oldest first.

    ``refresh_on_hit``: every dynamic node on a served query's path gets the current time as its stamp
    (and a node split by a query gets it on both halves); otherwise a stamp is the insertion time. Time
    advances once per batch: the queries of one batch are accessed together.
    ``whole_node``: evict the whole leaf node (all its tokens), else only its last token.
    """

    refresh_on_hit: bool = True
    whole_node: bool = True
    core_class = "radix_core:CompiledRadix"

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self._clock = 0
        self._next_cid = 0
        self._heap: list = []

    # -- matching ---------------------------------------------------------------------------------
    def _match(self, path: Sequence[int], mutate: bool) -> tuple[Node, int, list[Node]]:
        """Walk the longest cached prefix of ``path`` (:func:`descend`); return (last node, matched depth, nodes
        walked).

        With ``mutate`` the walked nodes are refreshed (if the policy refreshes) and a node the query
        leaves in its middle is refreshed and split there, as SGLang's match_prefix does.
        """
        node, matched, walked, inside, at = descend(self.trie, self._root, path)
        if mutate and self.refresh_on_hit:
            for whole in walked:
                whole.stamp = self._clock
            if inside is not None:
                inside.stamp = self._clock
        if inside is None:
            return node, matched, walked
        if mutate:
            inside = self._split(inside, at)
            walked.append(inside)
        return inside, self.trie.depth[at], walked

    def _split(self, child: Node, at: int) -> Node:
        """Split ``child`` at trie node ``at`` (strictly inside it); the new head is returned.

        The tail keeps the original node's creation id (its age), the head gets a new one.
        """
        head = self._put_above(child, at, child.stamp, self._new_cid())
        if not child.children:
            self._push(child)
        return head

    def _new_cid(self) -> int:
        self._next_cid += 1
        return self._next_cid

    def _push(self, node: Node) -> None:
        heapq.heappush(self._heap, (node.stamp, node.cid, node))

    # -- the policy interface ---------------------------------------------------------------------
    def serve(self, batch: Sequence[int]) -> list[int]:
        trie = self.trie
        paths = [trie.path(j) for j in batch]
        hits: list[int] = []
        ends: list[Node] = []
        locked: set[int] = set()
        self._clock += 1
        for path in paths:
            node, matched, walked = self._match(path, mutate=True)
            hits.append(matched)
            ends.append(node)
            locked.update(map(id, walked))
        missing = union_misses(trie, paths, hits)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            self._evict(self.tokens_to_free(overflow, missing), locked, overflow)
        for path, node, matched in zip(paths, ends, hits):
            if len(paths) > 1:
                node, matched, _ = self._match(path, mutate=True)
            self._insert(path, node, matched)
        return hits

    def _insert(self, path: Sequence[int], node: Node, matched: int) -> None:
        if matched < self.trie.depth[path[-1]]:
            self._push(self._new_leaf(path, node, matched, self._clock, self._new_cid()))
        elif not node.children and node is not self._root:
            self._push(node)

    def _evict(self, tokens: int, locked: set[int], need: int) -> None:
        """Evict leaves in (stamp, cid) order, skipping the batch's paths, until ``tokens`` are freed; with
        nothing left to evict, stop if ``need`` tokens (the shortfall) are free, else raise.

        Each round pops an entry or frees the last tokens, and an entry is pushed only for a parent whose
        last child was evicted (at least one token freed): at most len(heap) + tokens + 1 rounds."""
        heap = self._heap
        aside = []
        freed = 0
        for _ in range(len(heap) + tokens + 1):
            if tokens <= 0:
                break
            if not heap:
                if freed >= need:
                    break
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            entry = heap[0]
            stamp, _, node = entry
            if not node.alive or node.children or node.stamp != stamp:
                heapq.heappop(heap)
                continue
            if id(node) in locked:
                heapq.heappop(heap)
                aside.append(entry)
                continue
            run = node.d1 - node.d0
            if self.whole_node or run <= tokens:
                heapq.heappop(heap)
                node.alive = False
                del node.parent.children[node.key]
                self.size -= run
                tokens -= run
                freed += run
                parent = node.parent
                if parent is not self._root and not parent.children:
                    self._push(parent)
            else:
                node.d1 -= tokens
                self.size -= tokens
                freed += tokens
                tokens = 0
                node.bottom = self.trie.edge_holding(node.bottom, node.d1)
        else:
            raise AssertionError(f"evicting {tokens} more tokens did not end within its bound on the rounds")
        for entry in aside:
            heapq.heappush(heap, entry)

    # -- exact analysis (kvtheory.game) --------------------------------------------------------------------
    def state_key(self) -> tuple:
        """The live radix nodes, each as (bottom, d0, d1, rank of (stamp, cid), rank of cid), sorted.

        Why this is the whole state: a node's tokens are the depths (d0, d1] on the root path of trie node
        ``bottom``, which fix the tree; evictions compare (stamp, cid) pairs only, and every later stamp and
        cid is larger than all live ones (the clock advances before a batch, cids only grow), a refreshed or
        split node taking the new stamp with its own cid. So only the order of the (stamp, cid) pairs and the
        order of the cids among live nodes decide the future, not their values."""
        nodes = live_nodes(self._root)
        by_stamp = {id(n): r for r, n in enumerate(sorted(nodes, key=lambda n: (n.stamp, n.cid)))}
        by_cid = {id(n): r for r, n in enumerate(sorted(nodes, key=lambda n: n.cid))}
        return tuple(sorted((n.bottom, n.d0, n.d1, by_stamp[id(n)], by_cid[id(n)]) for n in nodes))
