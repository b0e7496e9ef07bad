"""rlt-authors: RLT as the authors' SGLang fork runs it (``RandomRadixCache`` with ``cy_evict``).

A radix-tree algorithm, not the per-static-edge one of :mod:`kvtheory.policies.rlt`: marks sit on the
dynamic nodes of an SGLang radix tree (runs of tokens, split where a query leaves or ends inside one),
laid over the static trie's edges as in :mod:`kvtheory.policies.radix`. A dynamic node covers the token
nodes at depths (d0, d1] of the root path of trie node ``bottom`` (the shallowest trie node with depth
>= d1); its children are keyed by the trie node whose edge holds their first token.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies import register_policy
from kvtheory.policies.base import union_misses
from kvtheory.policies.dispatch import CORE_MIN_DRAWN_TOKENS
from kvtheory.policies.radix import Node, RadixTree, descend, live_nodes


@register_policy
class AuthorsRLT(RadixTree):
    """RLT with the authors' marking and phase rules (docs/policies.md §RLT as the authors' engine runs it).

    A batch is served as their engine serves its requests: ``match_prefix`` for each query in batch order
    (hits h_i against the pre-batch cache), a lock on every matched path, one ``evict(k)`` for the batch
    when its ``missing`` uncached tokens overflow B (k = the overflow, or ``missing`` with
    ``evict_amount="allocation"``), then ``insert`` of each query in batch order and the locks released.

    Marking: ``insert`` marks every node of the inserted path (matched nodes, a split's new upper node,
    the new leaf); ``match_prefix`` marks only the upper node of a split it makes. Marking an unmarked node
    adds its token count to ``marked_count``; the upper node of a split of a marked node is marked without
    counting (its tokens are counted already). Phase rules, each counted in ``phase_starts``:

    - P1: when marking a node brings ``marked_count`` to >= B, clear every mark and mark that node's root
      path again (``marked_count`` = its depth);
    - R1: at the start of ``evict(k)``, if k + marked_count >= B, clear every mark (the batch's matched
      paths stay protected by their locks);
    - R2: if the unmarked, unlocked leaf nodes hold fewer than k tokens (or there are none), clear every
      mark and collect them again.

    Eviction: k times, draw one of the candidate leaf nodes uniformly (``numpy.random.default_rng(seed)``,
    one ``integers(n)`` per draw over their list, kept in ``cy_evict``'s order) and evict its last token; an
    emptied leaf is deleted and its parent joins the candidates if it is unmarked, unlocked and childless.
    The draw stops early only when no candidate is left.

    This class is the oracle of its compiled core (:mod:`kvtheory.policies.compiled.authors`), which the
    dispatcher runs (``compiled_core`` on the class itself: a subclass that changes the rule does not inherit it).
    """

    name = "rlt-authors"
    randomized = True
    compiled_core = True
    core_class = "compiled.authors:CompiledAuthorsRLT"

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self._rng = np.random.default_rng(options.get("seed"))
        self._marked: set[Node] = set()
        self.marked_count = 0
        self.phase_starts: Counter[str] = Counter()

    #: "auto" runs the compiled core from this many tokens in all (kvtheory.policies.dispatch): this class
    #: takes a Python step per evicted token
    compiled_min_tokens = CORE_MIN_DRAWN_TOKENS

    # -- walking the tree ---------------------------------------------------------------------------
    def _split_and_mark(self, child: Node, at: int) -> Node:
        """A split made by match_prefix or insert at trie node ``at`` (strictly inside ``child``): the lower
        part keeps the original node (its mark; SGLang's ``_split_node``); the new upper node is marked,
        counted only if ``child`` was not. Return the upper node."""
        head = self._put_above(child, at)
        if child.marked:
            head.marked = True
            self._marked.add(head)
        else:
            self._mark(head)
        return head

    # -- marks and phases ---------------------------------------------------------------------------
    def _mark(self, node: Node) -> None:
        """Mark ``node``, counting its tokens; rule P1 when the count reaches B."""
        if node.marked:
            return
        node.marked = True
        self._marked.add(node)
        self.marked_count += node.d1 - node.d0
        if self.marked_count >= self.budget:
            self._new_phase("P1")
            while node is not self._root:
                if not node.marked:
                    node.marked = True
                    self._marked.add(node)
                    self.marked_count += node.d1 - node.d0
                node = node.parent

    def _new_phase(self, rule: str) -> None:
        for node in self._marked:
            node.marked = False
        self._marked = set()
        self.marked_count = 0
        self.phase_starts[rule] += 1

    # -- the policy interface -----------------------------------------------------------------------
    def serve(self, batch: Sequence[int]) -> list[int]:
        paths = [self.trie.path(j) for j in batch]
        hits, ends = self._match_all(paths)
        missing = union_misses(self.trie, paths, hits)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            freed = self._evict(self.tokens_to_free(overflow, missing), self._locks(ends))
            if freed < overflow:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
        for path in paths:
            self._insert(path)
        return hits

    def eviction_distribution(self, batch: Sequence[int]) -> dict[int, float]:
        """{edge v: probability} that the first token evicted, were ``batch`` served now, is edge v's leaf token
        (the last token of a candidate leaf node, which lies on trie edge ``bottom``): uniform over the
        candidates ``evict(k)`` collects after the batch's match_prefix (its splits and marks) and rules R1 and
        R2, with k the batch's own amount to free, or 1 (the least) where the batch fits. Exact, not a sample;
        the state is left as it is (the match runs on a copy)."""
        probe = copy.deepcopy(self, {id(self.trie): self.trie, id(self._rng): None})
        paths = [self.trie.path(j) for j in batch]
        hits, ends = probe._match_all(paths)
        missing = union_misses(self.trie, paths, hits)
        overflow = probe.size + missing - probe.budget
        tokens = probe.tokens_to_free(overflow, missing) if overflow > 0 else 1
        candidates = probe._candidates(tokens, probe._locks(ends))
        return {node.bottom: 1.0 / len(candidates) for node in candidates}

    def _match_all(self, paths: Sequence[Sequence[int]]) -> tuple[list[int], list[Node]]:
        """match_prefix of each path in batch order: (its hits, the node its cached prefix ends at), splitting
        (and marking the upper node) where a prefix ends inside a node."""
        hits: list[int] = []
        ends: list[Node] = []
        for path in paths:
            node, matched, _, inside, at = descend(self.trie, self._root, path)
            if inside is not None:
                node, matched = self._split_and_mark(inside, at), self.trie.depth[at]
            hits.append(matched)
            ends.append(node)
        return hits, ends

    def _locks(self, ends: Sequence[Node]) -> set[Node]:
        """Every node on the root paths of ``ends``: the batch's matched paths, locked while it is served."""
        locked: set[Node] = set()
        for node in ends:
            while node is not self._root and node not in locked:
                locked.add(node)
                node = node.parent
        return locked

    def _insert(self, path: Sequence[int]) -> None:
        depth = self.trie.depth
        node, matched, walked, inside, at = descend(self.trie, self._root, path)
        for whole in walked:
            self._mark(whole)
        if inside is not None:
            node, matched = self._split_and_mark(inside, at), depth[at]
        if matched < depth[path[-1]]:
            self._mark(self._new_leaf(path, node, matched))

    def _evict(self, tokens: int, locked: set[Node]) -> int:
        """``evict(k)`` with k = ``tokens``: rules R1 and R2, then k uniform draws of a candidate leaf node,
        one token each; return the tokens freed (fewer than k only when no candidate is left)."""
        candidates = self._candidates(tokens, locked)
        remain = {n: n.d1 - n.d0 for n in candidates}
        count, freed = len(candidates), 0
        while count and freed < tokens:
            index = int(self._rng.integers(count))
            leaf = candidates[index]  # cy_evict's list: the last entry fills the slot, the drawn one goes last
            candidates[index] = candidates[count - 1]
            remain[leaf] -= 1
            freed += 1
            if remain[leaf]:
                candidates[count - 1] = leaf
                continue
            del remain[leaf]
            parent = leaf.parent
            del parent.children[leaf.key]
            if parent is not self._root and not parent.marked and parent not in locked and not parent.children:
                remain[parent] = parent.d1 - parent.d0
                candidates[count - 1] = parent
            else:
                count -= 1
        self.size -= freed
        for node, left in remain.items():
            if left < node.d1 - node.d0:
                self._cut_tail(node, left)
        return freed

    def _candidates(self, tokens: int, locked: set[Node]) -> list[Node]:
        """The leaf nodes ``evict(k)`` draws from, k = ``tokens``, after rules R1 and R2 (which may start a phase)."""
        if tokens + self.marked_count >= self.budget:
            self._new_phase("R1")
        candidates = self._collect(locked)
        if not candidates or sum(n.d1 - n.d0 for n in candidates) < tokens:
            self._new_phase("R2")
            candidates = self._collect(locked)
        return candidates

    def _collect(self, locked: set[Node]) -> list[Node]:
        """The candidates, in ``collect_leaves``' order (a depth-first walk with a stack of children):
        childless nodes but the root, unmarked and unlocked."""
        candidates = []
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node is not self._root and not node.marked and node not in locked:
                candidates.append(node)
        return candidates

    def _cut_tail(self, node: Node, left: int) -> None:
        """Keep the first ``left`` > 0 tokens of leaf ``node``."""
        node.d1 = node.d0 + left
        node.bottom = self.trie.edge_holding(node.bottom, node.d1)

    # -- exact analysis (kvtheory.game) --------------------------------------------------------------------
    def state_key(self) -> tuple:
        """(every radix node as (d0, d1, bottom, marked), sorted; ``marked_count``). The nodes fix the cache and
        the marks; ``marked_count`` is kept apart because a split's upper node is marked without being counted.
        The order of the candidate list only decides which draw picks which candidate, not the distribution
        of what is evicted, and ``phase_starts`` only counts: neither is part of the state."""
        nodes = ((node.d0, node.d1, node.bottom, node.marked) for node in live_nodes(self._root))
        return tuple(sorted(nodes)), self.marked_count
