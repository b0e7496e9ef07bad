"""Reference rlt-authors: the authors' RandomRadixCache rules on a radix tree whose nodes hold their tokens.

Written from docs/policies.md §RLT as the authors' engine runs it, independently of
:mod:`kvtheory.policies.rlt_authors` (which lays its nodes over the static trie's edges): here a node is a
list of tokens and its children are keyed by their first token, as in SGLang's ``TreeNode``. Locks are
reference counts on the nodes of each matched path, as ``inc_lock_ref`` sets them. The draw is the same
(one ``integers(n)`` of ``numpy.random.default_rng(seed)`` per evicted token, over the candidates in
``collect_leaves``' order), so the two agree seed for seed.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kvtheory.reference.core import token_lists


class _Node:
    def __init__(self, parent, tokens: list[int]) -> None:
        self.parent = parent
        self.tokens = tokens
        self.children: dict[int, _Node] = {}
        self.marked = False
        self.lock = 0


class ReferenceAuthorsRLT:
    """``serve(batch)``: match_prefix and lock each query, evict(k) once if the batch overflows B (k = the
    overflow, or the batch's uncached tokens with ``evict_amount="allocation"``), insert each query."""

    name = "rlt-authors"
    randomized = True

    def __init__(self, queries, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall") -> None:
        self.queries = token_lists(queries)
        self.budget = budget
        self.evict_amount = evict_amount
        self.rng = np.random.default_rng(seed)
        self.root = _Node(None, [])
        self.size = 0
        self.marked_count = 0
        self.phase_starts: Counter[str] = Counter()

    # -- tree operations ----------------------------------------------------------------------------
    def _split(self, node: _Node, at: int) -> _Node:
        """Cut ``node`` after its first ``at`` tokens; the new upper node is returned, the lower part stays
        ``node``."""
        upper = _Node(node.parent, node.tokens[:at])
        upper.lock = node.lock
        node.parent.children[node.tokens[0]] = upper
        node.tokens = node.tokens[at:]
        node.parent = upper
        upper.children[node.tokens[0]] = node
        return upper

    def _walk(self, query: list[int], inserting: bool) -> tuple[_Node, int]:
        """Follow ``query`` down the cached tree, splitting where it ends or leaves inside a node and
        marking as match_prefix (``inserting`` False) or insert does; return (last node, tokens matched)."""
        node, pos = self.root, 0
        while pos < len(query) and query[pos] in node.children:
            child = node.children[query[pos]]
            common = 0
            while (
                common < len(child.tokens) and pos + common < len(query) and child.tokens[common] == query[pos + common]
            ):
                common += 1
            pos += common
            if common < len(child.tokens):
                upper = self._split(child, common)
                if child.marked:
                    upper.marked = True
                else:
                    self._mark(upper)
                return upper, pos
            if inserting:
                self._mark(child)
            node = child
        return node, pos

    def _mark(self, node: _Node) -> None:
        if node.marked:
            return
        node.marked = True
        self.marked_count += len(node.tokens)
        if self.marked_count >= self.budget:
            self._clear_marks("P1")
            while node is not self.root:
                node.marked = True
                self.marked_count += len(node.tokens)
                node = node.parent

    def _clear_marks(self, rule: str) -> None:
        stack = [self.root]
        while stack:
            node = stack.pop()
            node.marked = False
            stack.extend(node.children.values())
        self.marked_count = 0
        self.phase_starts[rule] += 1

    # -- serving -------------------------------------------------------------------------------------
    def cached_prefix(self, j: int) -> int:
        query, node, pos = self.queries[j], self.root, 0
        while pos < len(query) and query[pos] in node.children:
            node = node.children[query[pos]]
            common = 0
            while (
                common < len(node.tokens) and pos + common < len(query) and node.tokens[common] == query[pos + common]
            ):
                common += 1
            pos += common
            if common < len(node.tokens):
                break
        return pos

    def serve(self, batch) -> list[int]:
        batch = list(batch)
        hits, ends = [], []
        for j in batch:
            node, matched = self._walk(self.queries[j], inserting=False)
            hits.append(matched)
            ends.append(node)
            while node is not self.root:
                node.lock += 1
                node = node.parent
        uncached = {
            tuple(self.queries[j][:n]) for j, h in zip(batch, hits) for n in range(h + 1, len(self.queries[j]) + 1)
        }
        missing = len(uncached)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            freed = self._evict(missing if self.evict_amount == "allocation" else overflow)
            if freed < overflow:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
        for j in batch:
            query = self.queries[j]
            node, matched = self._walk(query, inserting=True)
            if matched < len(query):
                leaf = _Node(node, query[matched:])
                node.children[query[matched]] = leaf
                self.size += len(leaf.tokens)
                self._mark(leaf)
        for node in ends:
            while node is not self.root:
                node.lock -= 1
                node = node.parent
        return hits

    def _candidates(self) -> list[_Node]:
        found, stack = [], [self.root]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node is not self.root and not node.marked and node.lock == 0:
                found.append(node)
        return found

    def _evict(self, k: int) -> int:
        if k + self.marked_count >= self.budget:
            self._clear_marks("R1")
        leaves = self._candidates()
        if not leaves or sum(len(n.tokens) for n in leaves) < k:
            self._clear_marks("R2")
            leaves = self._candidates()
        left = {node: len(node.tokens) for node in leaves}
        size, freed = len(leaves), 0
        while size and freed < k:
            i = int(self.rng.integers(size))
            leaf = leaves[i]
            leaves[i] = leaves[size - 1]
            size -= 1
            left[leaf] -= 1
            freed += 1
            if left[leaf] > 0:
                leaves[size] = leaf
                size += 1
                continue
            del left[leaf]
            parent = leaf.parent
            del parent.children[leaf.tokens[0]]
            if parent is not self.root and not parent.marked and parent.lock == 0 and not parent.children:
                left[parent] = len(parent.tokens)
                leaves[size] = parent
                size += 1
        for node, n in left.items():
            node.tokens = node.tokens[:n]
        self.size -= freed
        return freed
