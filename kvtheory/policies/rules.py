"""A user's eviction rule in a few lines: a priority over cached leaves, or a weighted random draw among them
(docs/policies.md §Writing a policy as a rule).

The engine here keeps the cache, its books per radix edge v (:class:`LeafView`) and both eviction amounts;
the rule only ranks or weighs the leaves, as SGLang's ``EvictionStrategy.get_priority`` does::

    @kvtheory.register_policy
    class MostRecentLeaf(kvtheory.PriorityRule):
        name = "mru-leaf"

        def priority(self, leaf):
            return (-leaf.last_access, -leaf.edge)   # the most recently requested leaf goes first

A **leaf** is a radix edge v of the workload's trie that holds cached tokens and has no cached child, off
the paths of the batch being served; it holds exactly one leaf token of the model, its last cached one. To
make room, the engine evicts from the leaf of the smallest ``priority`` (ties: the smaller edge id) one token
(or, with ``whole_node = True``, every cached token of that edge) and ranks again, until the shortfall (or
the allocation) is freed; an emptied edge's parent becomes a leaf. :class:`SamplerRule` draws the leaf
instead, with probability proportional to ``weight`` (uniform by default), from a seeded numpy Generator,
and gives its decision as a distribution too (:meth:`SamplerRule.eviction_distribution`).

Cost: a ``priority`` (or ``weight``) call per leaf and per evicted token, which suits a plug-in on the
instances it is checked and compared on. LFU-leaf (:mod:`kvtheory.policies.lfu`) is a PriorityRule whose
engine keeps the leaves in a lazy heap by its priority instead.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.edge_cache import EdgeCache


class LeafView(NamedTuple):
    """What a rule sees of a cached leaf: ``edge`` v (a trie node: the radix edge from its parent to it),
    ``depth`` of its leaf token, ``tokens`` of the edge cached, ``last_access`` (the last batch, counted
    from 1, whose queries contained the edge), ``inserted`` (the batch that loaded its first cached token,
    since it was last empty) and ``requests`` (queries that contained the edge so far, hits or misses)."""

    edge: int
    depth: int
    tokens: int
    last_access: int
    inserted: int
    requests: int


class PriorityRule(EdgeCache):
    """Leaf eviction in the order of :meth:`priority` (smallest first; ties: smaller edge id)."""

    #: evict every cached token of the chosen leaf edge at once, rather than its last token
    whole_node = False

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        n = trie.n_nodes
        self.step = 0
        self._last_access = [0] * n
        self._inserted = [0] * n
        self._requests = [0] * n

    def priority(self, leaf: LeafView):
        """The leaf's rank: any value comparable with the others' (a number or a tuple); the smallest goes."""
        raise NotImplementedError(f"{type(self).__name__} must define priority(leaf)")

    def view(self, v: int) -> LeafView:
        """The books of edge v as a rule sees them."""
        trie, kept = self.trie, int(self._kept[v])
        depth = trie.depth[trie.parent[v]] + kept
        return LeafView(v, depth, kept, self._last_access[v], self._inserted[v], self._requests[v])

    def _before_batch(self, paths: Sequence[Sequence[int]], on_paths: Collection[int]) -> None:
        """The batch's books: a new step, a request per query and path edge, this step as the last access of the
        batch's edges, and as the insertion step of those it loads (none of them is evicted for the batch)."""
        self.step = step = self.step + 1
        requests, last_access, inserted, kept = self._requests, self._last_access, self._inserted, self._kept
        for path in paths:
            for v in path:
                requests[v] += 1
        for v in on_paths:
            last_access[v] = step
            if kept[v] == 0:
                inserted[v] = step

    def leaves(self, on_paths: Collection[int]) -> list[int]:
        """The cached leaf edges off ``on_paths``, ascending."""
        children = self._cached_children
        return [int(v) for v in np.flatnonzero(self._kept) if children[v] == 0 and v not in on_paths]

    def _choose(self, candidates: list[int]) -> int:
        """The leaf to evict from: the smallest (priority, edge)."""
        return min(candidates, key=lambda v: (self.priority(self.view(v)), v))

    def _evict(self, tokens: int, overflow: int, on_paths: Collection[int]) -> None:
        """Evict from the chosen leaf, again and again, until ``tokens`` are freed; with nothing left, stop if
        ``overflow`` tokens went, else raise. Each round frees at least one token: at most ``tokens`` rounds."""
        kept, parent, children = self._kept, self.trie.parent, self._cached_children
        candidates = self.leaves(on_paths)
        freed = 0
        for _ in range(tokens + 1):
            if tokens <= 0:
                return
            if not candidates:
                if freed >= overflow:
                    return
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            v = self._choose(candidates)
            take = int(kept[v]) if self.whole_node else 1
            kept[v] -= take
            self.size -= take
            tokens -= take
            freed += take
            if kept[v] == 0:
                candidates.remove(v)
                p = parent[v]
                children[p] -= 1
                if p and children[p] == 0 and p not in on_paths:
                    candidates.append(p)
        raise AssertionError(f"evicting {tokens} more tokens did not end within its bound on the rounds")

    def eviction_distribution(self, batch: Sequence[int]) -> dict[int, float]:
        """{edge v: probability} that the first token evicted, were ``batch`` served now and short of room, is
        edge v's leaf token: the one leaf :meth:`priority` ranks first."""
        candidates = self.leaves({v for j in batch for v in self.trie.path(j)})
        return {self._choose(candidates): 1.0} if candidates else {}


class SamplerRule(PriorityRule):
    """Leaf eviction by a random draw: each token (each whole edge with ``whole_node``) comes from leaf v with
    probability weight(v) / (sum of the leaves' weights); a weight of 0 keeps a leaf. Uniform by default, over
    candidate leaf tokens, as random-leaf. Randomness: ``numpy.random.default_rng(seed)``, one ``random()``
    per draw."""

    randomized = True

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self._rng = np.random.default_rng(options.get("seed"))

    def weight(self, leaf: LeafView) -> float:
        """The leaf's weight (>= 0, finite); uniform by default."""
        return 1.0

    def _weights(self, candidates: list[int]) -> np.ndarray:
        weights = np.array([self.weight(self.view(v)) for v in candidates], dtype=np.float64)
        if weights.size and (not np.all(np.isfinite(weights)) or np.any(weights < 0)):
            raise ValueError(f"policy {self.name!r}: a weight must be finite and >= 0, got {weights.tolist()}")
        return weights

    def _choose(self, candidates: list[int]) -> int:
        weights = self._weights(candidates)
        total = weights.sum()
        if total <= 0:
            raise RuntimeError(f"policy {self.name!r}: every leaf has weight 0, nothing can be evicted")
        index = int(np.searchsorted(np.cumsum(weights), self._rng.random() * total, side="right"))
        return candidates[min(index, len(candidates) - 1)]

    def eviction_distribution(self, batch: Sequence[int]) -> dict[int, float]:
        """{edge v: probability} that the first token evicted, were ``batch`` served now and short of room, is
        edge v's leaf token: weight(v) / (sum of the leaves' weights), an exact distribution, not a sample."""
        candidates = self.leaves({v for j in batch for v in self.trie.path(j)})
        weights = self._weights(candidates)
        total = weights.sum()
        return {v: float(w / total) for v, w in zip(candidates, weights) if w > 0} if total > 0 else {}
