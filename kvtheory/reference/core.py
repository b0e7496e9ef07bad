"""The shared core of the reference simulations: a dict of token nodes, one Python step per token.

This is written from docs/model.md alone, as a check on the fast policies (which work per radix edge):
a **token node** is a prefix (t1..ti) of a query, interned as a small integer id (id 0 is the empty
prefix, the root). The cache is a set of token nodes, kept prefix-closed; ``cached[v]`` says whether v
is cached and ``cached_children[v]`` counts its cached children, so v is a **leaf** of the cache when it
is cached and that count is 0. Every eviction removes exactly one leaf token; every admission adds one
token under a cached parent. Nothing here knows about radix edges.

A reference policy subclasses :class:`ReferencePolicy` and chooses the victim leaf token.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from numbers import Integral
from typing import ClassVar

from kvtheory.errors import InputError
from kvtheory.registry import Registry

ROOT = 0

#: the per-token reference of each online policy that has one, under the policy's name (a reference registers
#: itself with ``@register_reference``, as a policy does): FIF is separate (offline), and so is rlt-authors,
#: whose reference keeps SGLang's radix nodes rather than token nodes (``ReferenceAuthorsRLT``)
REFERENCE_POLICIES: Registry = Registry("reference")
register_reference = REFERENCE_POLICIES.register


def token_lists(queries) -> list[list[int]]:
    """Plain lists of ints from a Workload or any sequence of token sequences."""
    if hasattr(queries, "token_lists"):
        return queries.token_lists()
    return [[int(t) for t in q] for q in queries]


class TokenTree:
    """Every token node of a query universe, interned: ``ids[j][i]`` is the node (q_j[0..i]).

    ``parent[v]``, ``depth[v]`` (its length), ``children[v]`` (token -> child id) describe the static
    tree of all prefixes; ``cached``, ``cached_children`` and ``size`` the current cache.
    """

    def __init__(self, queries: Sequence[Sequence[int]]) -> None:
        self.parent = [-1]
        self.depth = [0]
        self.token = [None]
        self.children: list[dict[int, int]] = [{}]
        self.ids: list[list[int]] = []
        for q in queries:
            v, nodes = ROOT, []
            for t in q:
                child = self.children[v].get(t)
                if child is None:
                    child = len(self.parent)
                    self.parent.append(v)
                    self.depth.append(self.depth[v] + 1)
                    self.token.append(t)
                    self.children.append({})
                    self.children[v][t] = child
                v = child
                nodes.append(v)
            self.ids.append(nodes)
        n = len(self.parent)
        self.cached = [False] * n
        self.cached[ROOT] = True  # the empty prefix is always "there"; it is never counted or evicted
        self.cached_children = [0] * n
        self.size = 0

    def prefix(self, v: int) -> tuple[int, ...]:
        """The token sequence of node v."""
        out = []
        while v != ROOT:
            out.append(self.token[v])
            v = self.parent[v]
        return tuple(reversed(out))

    def is_leaf(self, v: int) -> bool:
        return v != ROOT and self.cached[v] and self.cached_children[v] == 0

    def matched(self, nodes: Sequence[int]) -> int:
        """Length of the longest cached prefix of a query given by its token nodes."""
        h = 0
        for v in nodes:
            if not self.cached[v]:
                break
            h += 1
        return h

    def add(self, v: int) -> None:
        """Cache token v (its parent must be cached)."""
        p = self.parent[v]
        assert not self.cached[v] and self.cached[p], "admission must keep the cache prefix-closed"
        self.cached[v] = True
        self.cached_children[p] += 1
        self.size += 1

    def remove(self, v: int) -> int | None:
        """Evict leaf v; return its parent when that parent has just become a leaf (else None)."""
        assert self.is_leaf(v), "only a cached leaf may be evicted"
        p = self.parent[v]
        self.cached[v] = False
        self.cached_children[p] -= 1
        self.size -= 1
        return p if self.is_leaf(p) else None

    def cached_nodes(self) -> set[int]:
        return {v for v in range(1, len(self.parent)) if self.cached[v]}


class LeafHeap:
    """Cached leaf tokens ordered by a key, smallest first, with lazy deletion.

    ``push(v)`` records v with its current key. ``pop(tree, protected)`` returns the cached leaf with
    the smallest current key among those not in ``protected``, provided every cached leaf has an entry
    whose stored key is <= its current key (entries whose key went stale are re-pushed with the current
    one). Policies whose keys only grow may therefore push a leaf once; others push on every change.
    """

    def __init__(self, key: Callable[[int], tuple]) -> None:
        self.key = key
        self.heap: list[tuple[tuple, int]] = []

    def push(self, v: int) -> None:
        heapq.heappush(self.heap, (self.key(v), v))

    def pop(self, tree: TokenTree, protected: Collection[int], aside: list) -> int:
        heap = self.heap
        while heap:
            key, v = heap[0]
            if not tree.is_leaf(v):
                heapq.heappop(heap)
                continue
            current = self.key(v)
            if current != key:
                heapq.heapreplace(heap, (current, v))
                continue
            if v in protected:
                aside.append(heapq.heappop(heap))
                continue
            heapq.heappop(heap)
            return v
        raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")

    def restore(self, aside: list) -> None:
        """Put back the entries ``pop`` set aside for protected tokens."""
        for entry in aside:
            heapq.heappush(self.heap, entry)
        aside.clear()


class LeafPool:
    """A set of token nodes with O(1) insertion, removal and uniform choice (for the random policies)."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.index: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, v: int) -> bool:
        return v in self.index

    def add(self, v: int) -> None:
        if v not in self.index:
            self.index[v] = len(self.items)
            self.items.append(v)

    def discard(self, v: int) -> None:
        i = self.index.pop(v, None)
        if i is not None:
            last = self.items.pop()
            if last != v:
                self.items[i] = last
                self.index[last] = i

    def choose(self, rng) -> int:
        """A member chosen uniformly at random."""
        return self.items[int(rng.integers(len(self.items)))]


class ReferencePolicy(ABC):
    """One worker's cache simulated token by token (docs/model.md §Serving).

    Mirrors :class:`kvtheory.policies.base.EvictionPolicy`: ``serve(batch)`` takes query indices (into
    the ``queries`` given at construction) and returns each query's hits against the cache as it was
    before the batch; afterwards every token node of the batch is cached and at most ``budget`` are.
    ``cached_prefix(j)`` peeks; ``cached()`` gives the cache as a set of token tuples and ``kept(trie)``
    as {trie node: tokens of its edge cached}, the fast policies' form.
    """

    name: ClassVar[str]
    randomized: ClassVar[bool] = False

    def __init__(self, queries, budget: int, *, seed: int | None = None) -> None:
        if budget <= 0:
            raise ValueError(f"budget must be positive, got {budget}")
        self.queries = token_lists(queries)
        self.budget = budget
        self.tree = TokenTree(self.queries)
        self._trie = None

    @property
    def size(self) -> int:
        return self.tree.size

    def cached_prefix(self, j: int) -> int:
        return self.tree.matched(self.tree.ids[j])

    def cached(self) -> set[tuple[int, ...]]:
        return {self.tree.prefix(v) for v in self.tree.cached_nodes()}

    def kept(self, trie=None) -> dict[int, int]:
        """The cache per radix edge of ``trie`` (by default the PrefixTrie of the queries)."""
        if trie is None:
            if self._trie is None:
                from kvtheory.model.trie import PrefixTrie

                self._trie = PrefixTrie(self.queries)
            trie = self._trie
        kept: dict[int, int] = {}
        seen: set[int] = set()
        for j, nodes in enumerate(self.tree.ids):
            for u in trie.path(j):
                if u in seen:
                    continue
                seen.add(u)
                lo, hi = trie.depth[trie.parent[u]], trie.depth[u]
                count = sum(1 for v in nodes[lo:hi] if self.tree.cached[v])
                if count:
                    kept[u] = count
        return kept

    def serve(self, batch: Sequence[int]) -> list[int]:
        batch = list(batch)
        tree = self.tree
        paths = [tree.ids[j] for j in batch]
        hits = [tree.matched(nodes) for nodes in paths]
        protected = {v for nodes in paths for v in nodes}
        missing = sum(1 for v in protected if not tree.cached[v])
        if len(protected) > self.budget:
            raise InputError(f"the batch needs {len(protected)} token nodes at once, more than B = {self.budget}")
        self._serve(batch, paths, protected, missing)
        assert tree.size <= self.budget
        assert all(tree.cached[v] for v in protected)
        return hits

    @abstractmethod
    def _serve(self, batch: list[int], paths: list[list[int]], protected: set[int], missing: int) -> None:
        """Make room for ``missing`` new tokens, never evicting ``protected``, then cache the batch."""

    def _fill(self, paths: Sequence[Sequence[int]]) -> list[int]:
        """Cache every token of the paths, root first; return the tokens added, in order."""
        added = []
        for nodes in paths:
            for v in nodes:
                if not self.tree.cached[v]:
                    self.tree.add(v)
                    added.append(v)
        return added


class EdgeNumbering:
    """The radix edge of kvtheory's PrefixTrie that holds each token node, for tie orders that the model
    states in terms of trie node ids (FIF and LFU): ``edge[v]``."""

    def __init__(self, tree: TokenTree, queries: Sequence[Sequence[int]]) -> None:
        from kvtheory.model.trie import PrefixTrie

        trie = PrefixTrie(queries)
        edge = [0] * len(tree.parent)
        for j, nodes in enumerate(tree.ids):
            for u in trie.path(j):
                for v in nodes[trie.depth[trie.parent[u]] : trie.depth[u]]:
                    edge[v] = u
        self.edge = edge


def check_instance(queries: list[list[int]], budget: int, batch: int) -> None:
    """Raise InputError unless every batch's distinct token nodes fit in ``budget`` (docs/model.md §Batches)."""
    if isinstance(budget, bool) or not isinstance(budget, Integral) or budget <= 0:
        raise InputError(f"budget must be a positive number of tokens, got {budget}")
    if isinstance(batch, bool) or not isinstance(batch, Integral) or batch <= 0:
        raise InputError(f"batch size must be a positive integer, got {batch}")
    if not queries or any(len(q) == 0 for q in queries):
        raise InputError("a workload needs at least one query and every query at least one token")
    for start in range(0, len(queries), batch):
        group = queries[start : start + batch]
        nodes = {tuple(q[:i]) for q in group for i in range(1, len(q) + 1)}
        if len(nodes) > budget:
            raise InputError(f"query {start}: batch needs {len(nodes)} token nodes, more than B = {budget}")
