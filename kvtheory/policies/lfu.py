"""LFU-leaf: evict from the cached leaf requested least often."""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies import register_policy
from kvtheory.policies.rules import LeafView, PriorityRule


@register_policy
class LeafLFU(PriorityRule):
    """LFU-leaf: one token at a time, the last token of the cached leaf whose token nodes were requested
    the fewest times so far (counting every request since the start, cached or not); ties go to the
    least recently requested, then to the larger trie node id: the rule :meth:`priority`, on the books of
    :class:`~kvtheory.policies.rules.PriorityRule`. Its engine keeps the leaves in a lazy heap by that key:
    all tokens of a radix edge share their count, and a parent's count is at least its child's, so whole
    runs go per heap operation.
    """

    name = "lfu"
    compiled_core = True
    core_class = "compiled.edge_cache:CompiledLFU"

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self._heap: list[tuple[int, int, int]] = []

    def priority(self, leaf: LeafView) -> tuple[int, int, int]:
        return leaf.requests, leaf.last_access, -leaf.edge

    def _push(self, v: int) -> None:
        heapq.heappush(self._heap, (self._requests[v], self._last_access[v], -v))

    def _after_batch(self, paths: Sequence[Sequence[int]], on_paths: Collection[int]) -> None:
        """The batch's edges without cached children go on the heap with their new key."""
        for v in on_paths:
            if self._cached_children[v] == 0:
                self._push(v)

    def _evict(self, tokens: int, need: int, on_paths: Collection[int]) -> None:
        """Take tokens from the tail of the top leaf edge until ``tokens`` are freed; with nothing left to evict,
        stop if ``need`` tokens (the shortfall) are free, else raise. An entry is valid while its key is the
        edge's; the batch's edges have a new last request (this step), so none of theirs is, and a parent on the
        batch's paths is pushed after the batch (:meth:`_after_batch`), not here.

        Each round pops an entry or frees the last tokens, and an entry is pushed only for a parent whose
        last child was emptied (at least one token freed): at most len(heap) + tokens + 1 rounds. A subclass
        that ranks by a priority of its own is served by PriorityRule's engine instead."""
        if type(self).priority is not LeafLFU.priority:
            return super()._evict(tokens, need, on_paths)
        heap, kept, parent, children = self._heap, self._kept, self.trie.parent, self._cached_children
        requests, last_access = self._requests, self._last_access
        freed = 0
        for _ in range(len(heap) + tokens + 1):
            if tokens <= 0:
                return
            if not heap:
                if freed >= need:
                    return
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            count, last, neg_v = heap[0]
            v = -neg_v
            if kept[v] == 0 or children[v] or count != requests[v] or last != last_access[v]:
                heapq.heappop(heap)
                continue
            run = min(tokens, int(kept[v]))
            kept[v] -= run
            self.size -= run
            tokens -= run
            freed += run
            if kept[v] == 0:
                heapq.heappop(heap)
                p = parent[v]
                children[p] -= 1
                if p and children[p] == 0 and p not in on_paths:
                    self._push(p)
        raise AssertionError(f"evicting {tokens} more tokens did not end within its bound on the rounds")

    # -- exact analysis (kvtheory.game) --------------------------------------------------------------------
    def state_key(self) -> tuple:
        """(the cached tokens per edge, every edge's request count, the dense rank of every edge's last request
        step): evictions compare (count, last step, -edge) only and every later step is larger than all, so the
        order of the last steps decides the future, not their values."""
        last = self._last_access
        ranks = {step: r for r, step in enumerate(sorted(set(last)))}
        return tuple(self.kept().items()), tuple(self._requests), tuple(ranks[step] for step in last)
