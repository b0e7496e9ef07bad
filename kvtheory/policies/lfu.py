"""LFU-leaf: evict from the cached leaf requested least often."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies import register_policy
from kvtheory.policies.base import EvictionPolicy, flat_trie_arrays
from kvtheory.policies.edge_cache import EdgeCache


@register_policy
class LeafLFU(EdgeCache):
    """LFU-leaf: one token at a time, the last token of the cached leaf whose token nodes were requested
    the fewest times so far (counting every request since the start, cached or not); ties go to the
    least recently requested, then to the larger trie node id. All tokens of a radix edge share their
    count, and a parent's count is at least its child's, so whole runs go per heap operation.
    """

    name = "lfu"

    @classmethod
    def compiled_object(
        cls, trie: PrefixTrie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall"
    ) -> EvictionPolicy | None:
        """The compiled core served batch by batch (:class:`~kvtheory.policies.compiled.lfu.CompiledLFU`) for
        LeafLFU itself (not a subclass, which may change the rule); None otherwise."""
        if cls is not LeafLFU:
            return None
        from kvtheory.policies.compiled.lfu import CompiledLFU

        return CompiledLFU(cls, trie, budget, seed=seed, evict_amount=evict_amount)

    @classmethod
    def run_compiled(
        cls, trie: PrefixTrie, budget: int, batch: int, seed: int | None = None, evict_amount: str = "shortfall"
    ):
        """Every query's hits from a compiled core for LeafLFU itself: the flat core
        (:mod:`kvtheory.policies.compiled.flat`) on a flat trie with shortfall eviction, else the general one
        (:mod:`kvtheory.policies.compiled.lfu`); None for a subclass."""
        if cls is not LeafLFU:
            return None
        if evict_amount == "shortfall" and flat_trie_arrays(trie) is not None:
            from kvtheory.policies.compiled.flat import run_flat_lfu

            return run_flat_lfu(trie, budget, batch)
        from kvtheory.policies.compiled.lfu import run_lfu

        return run_lfu(cls, trie, budget, batch, evict_amount)

    def __init__(
        self, trie: PrefixTrie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall"
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        self._count = [0] * trie.n_nodes
        self._last = [0] * trie.n_nodes
        self._heap: list[tuple[int, int, int]] = []
        self._step = 0

    def _push(self, v: int) -> None:
        heapq.heappush(self._heap, (self._count[v], self._last[v], -v))

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie = self.trie
        self._step += 1
        paths = [trie.path(j) for j in batch]
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        kept, edge_len = self._kept, trie.edge_len
        missing = sum(edge_len[v] - int(kept[v]) for v in on_paths)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            self._evict(self.tokens_to_free(overflow, missing), on_paths, overflow)
        self._fill(paths)
        for path in paths:
            for v in path:
                self._count[v] += 1
                self._last[v] = self._step
        for v in on_paths:
            if self._cached_children[v] == 0:
                self._push(v)
        return hits

    def _evict(self, tokens: int, on_paths: set[int], need: int) -> None:
        """Take tokens from the tail of the top leaf edge off the batch's paths until ``tokens`` are freed;
        with nothing left to evict, stop if ``need`` tokens (the shortfall) are free, else raise.

        Each round pops an entry or frees the last tokens, and an entry is pushed only for a parent whose
        last child was emptied (at least one token freed): at most len(heap) + tokens + 1 rounds."""
        heap, kept, parent, children = self._heap, self._kept, self.trie.parent, self._cached_children
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
            count, last, neg_v = entry
            v = -neg_v
            if kept[v] == 0 or children[v] or count != self._count[v] or last != self._last[v]:
                heapq.heappop(heap)
                continue
            if v in on_paths:
                heapq.heappop(heap)
                aside.append(entry)
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
                if p and children[p] == 0:
                    self._push(p)
        else:
            raise AssertionError(f"evicting {tokens} more tokens did not end within its bound on the rounds")
        for entry in aside:
            heapq.heappush(heap, entry)

    # -- exact analysis (kvtheory.game) --------------------------------------------------------------------
    def state_key(self) -> tuple:
        """(the cached tokens per edge, every edge's request count, the dense rank of every edge's last request
        step): evictions compare (count, last step, -edge) only and every later step is larger than all, so the
        order of the last steps decides the future, not their values."""
        kept = self._kept
        ranks = {step: r for r, step in enumerate(sorted(set(self._last)))}
        return (
            tuple((int(v), int(kept[v])) for v in np.flatnonzero(kept)),
            tuple(self._count),
            tuple(ranks[step] for step in self._last),
        )
