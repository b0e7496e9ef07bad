"""predictive-marker evicting one token per step, as the policy was first written (kept as the independent
per-token reference of the per-edge engine, :mod:`kvtheory.policies.predictive_marker`, which must take the same
decisions and the same draws): each cause's chain is looked up by its (edge, position), and each eviction
chooses among all candidates, by the largest (key, depth, edge) or by one ``integers`` draw over them sorted."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvtheory.policies.blind_oracle import tree_keys
from kvtheory.policies.edge_cache import EdgeCache
from kvtheory.policies.predicted import FollowsPredictions
from kvtheory.policies.predictive_marker import harmonic


class ReferencePredictiveMarker(FollowsPredictions, EdgeCache):
    """predictive-marker a token at a time: a Python step and a choice over every candidate per evicted token."""

    name = "predictive-marker"
    randomized = True

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        n = trie.n_nodes
        self._predictions = self.required(predictions)
        self._rng = np.random.default_rng(seed)
        self._step = 0
        self._key = [float("inf")] * n
        self._marked = bytearray(n)
        self._marked_edges: set[int] = set()
        self._candidates: set[int] = set()
        self._chain_of: dict[tuple[int, int], int] = {}  # (edge, position on it) evicted this phase -> its chain
        self._chain_length: list[int] = []
        longest = max((trie.depth[end] for end in trie.end), default=1)
        self.threshold = harmonic(max(1, budget - longest + 1))
        self.phases = 1

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie, kept, edge_len = self.trie, self._kept, self.trie.edge_len
        self._step += 1
        paths = [trie.path(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        told = self._predictions.told(self._step, on_paths, self.name)
        keys = tree_keys(trie, told, lambda c: self._key[c] if kept[c] else None)
        hits = [self.cached_prefix(j) for j in batch]
        requests, seen = [], set()
        for path in paths:
            for v in path:
                if v not in seen:
                    seen.add(v)
                    requests.extend((v, p) for p in range(int(kept[v]) + 1, edge_len[v] + 1))
        for v in on_paths:
            self._mark(v)
        overflow = self.size + len(requests) - self.budget
        if overflow > 0:
            tokens = self.tokens_to_free(overflow, len(requests))
            self._evict(requests[len(requests) - tokens :], overflow, on_paths)
        self._fill(paths)
        for v in on_paths:
            self._key[v] = keys[v]
        return hits

    def _mark(self, v: int) -> None:
        if not self._marked[v]:
            self._marked[v] = 1
            self._marked_edges.add(v)
        self._candidates.discard(v)

    def _new_phase(self, on_paths: set[int]) -> bool:
        """Clear every mark off the batch's paths; False if there was none to clear (no new candidates)."""
        cleared = self._marked_edges - on_paths
        if not cleared:
            return False
        self.phases += 1
        self._marked_edges -= cleared
        self._chain_of.clear()
        self._chain_length.clear()
        for v in cleared:
            self._marked[v] = 0
            if self._kept[v] > 0 and self._cached_children[v] == 0:
                self._candidates.add(v)
        return True

    def _choose(self, chain: int) -> int:
        """The candidate leaf edge whose last token goes, for a chain of the length it has now."""
        if self._chain_length[chain] <= self.threshold:
            trie, kept = self.trie, self._kept
            return max(self._candidates, key=lambda u: (self._key[u], trie.depth[trie.parent[u]] + int(kept[u]), u))
        ordered = sorted(self._candidates)
        return ordered[int(self._rng.integers(len(ordered)))]

    def _evict(self, causes: list[tuple[int, int]], overflow: int, on_paths: set[int]) -> None:
        """One eviction per cause, charged to its chain; with no candidate even after a new phase, stop if
        ``overflow`` tokens went, else raise. One round per cause: at most len(causes) rounds."""
        kept, parent, children = self._kept, self.trie.parent, self._cached_children
        freed = 0
        for cause in causes:
            if not self._candidates and not (self._new_phase(on_paths) and self._candidates):
                if freed >= overflow:
                    return
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            chain = self._chain_of.pop(cause, None)
            if chain is None:
                chain = len(self._chain_length)
                self._chain_length.append(1)
            else:
                self._chain_length[chain] += 1
            v = self._choose(chain)
            self._chain_of[(v, int(kept[v]))] = chain
            kept[v] -= 1
            self.size -= 1
            freed += 1
            if kept[v] == 0:
                self._candidates.discard(v)
                p = parent[v]
                children[p] -= 1
                if p and children[p] == 0 and not self._marked[p]:
                    self._candidates.add(p)
