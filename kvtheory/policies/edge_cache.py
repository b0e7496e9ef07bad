"""Cache state as tokens kept per radix edge, and uniform eviction of leaf tokens in blocks.

Every prefix-closed cache keeps, on each radix edge v, the first ``kept[v]`` of its ``edge_len[v]``
tokens, and kept[v] > 0 only under a full parent edge. Edge v then holds exactly one cached leaf token
(its last kept one) when kept[v] > 0 and none of its children is cached.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import EvictionPolicy, kept_of_array
from kvtheory.policies.dispatch import CORE_MIN_TOKENS

_MIN_BLOCK = 256
_SCAN_LIMIT = 64


class EdgeCache(EvictionPolicy):
    """A cache held as ``_kept[v]`` tokens per radix edge v, with ``_cached_children[v]`` counting the
    children of v that hold tokens."""

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self._kept = np.zeros(trie.n_nodes, dtype=np.int64)
        self._cached_children = [0] * trie.n_nodes

    def cached_prefix(self, j: int) -> int:
        kept = self._kept
        return int(sum(kept[v] for v in self.trie.path(j)))

    def kept(self) -> dict[int, int]:
        return kept_of_array(self._kept)

    def serve(self, batch: Sequence[int]) -> list[int]:
        """The per-edge engine every rule of this module family shares: each query's hits h against the cache
        before the batch; the rule's books on the batch (:meth:`_before_batch`); with ``missing`` uncached
        tokens overflowing B by ``overflow`` > 0, the rule's eviction of the tokens due off the batch's edges
        (:meth:`_evict`, :meth:`~kvtheory.policies.base.EvictionPolicy.tokens_to_free`); the paths filled; the
        rule's books after it (:meth:`_after_batch`)."""
        trie, kept = self.trie, self._kept
        paths = [trie.path(j) for j in batch]
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = self._batch_edges(paths)
        self._before_batch(paths, on_paths)
        missing = sum(trie.edge_len[v] - int(kept[v]) for v in on_paths)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            self._evict(self.tokens_to_free(overflow, missing), overflow, on_paths)
        self._fill(paths)
        self._after_batch(paths, on_paths)
        return hits

    def _batch_edges(self, paths: Sequence[Sequence[int]]) -> Collection[int]:
        """The radix edges of the batch's paths (a set)."""
        return {v for path in paths for v in path}

    def _before_batch(self, paths: Sequence[Sequence[int]], on_paths: Collection[int]) -> None:
        """The rule's books before the batch's eviction (none by default)."""

    def _after_batch(self, paths: Sequence[Sequence[int]], on_paths: Collection[int]) -> None:
        """The rule's books once the batch is resident (none by default)."""

    def _evict(self, tokens: int, overflow: int, on_paths: Collection[int]) -> None:
        """Evict ``tokens`` tokens from cached leaves off ``on_paths``, stopping early only when nothing is left
        to evict (an error if that is before ``overflow`` tokens went): the rule's own."""
        raise NotImplementedError(f"{type(self).__name__} must define _evict or serve")

    def _fill(self, paths: Sequence[Sequence[int]]) -> None:
        """Make every token node of ``paths`` resident (room has been made)."""
        kept, edge_len, parent, children = self._kept, self.trie.edge_len, self.trie.parent, self._cached_children
        for path in paths:
            for v in path:
                if kept[v] < edge_len[v]:
                    if kept[v] == 0:
                        children[parent[v]] += 1
                    self.size += edge_len[v] - int(kept[v])
                    kept[v] = edge_len[v]


class LeafTokenSampler(EdgeCache):
    """Evict uniformly random leaf tokens among the *candidates*: cached leaves that are not marked.

    Every edge of a served query is marked; ``marking`` (data of the rule) decides how long: with it (RLT)
    marks stay until no candidate is left, when a new phase unmarks every edge off the batch's paths;
    without it (random-leaf) they go when the batch is served. One token at a time, the rule picks a
    candidate edge uniformly (each holds one leaf token) and removes its last token; an emptied edge may
    make its parent a candidate. Instead of a Python step per token, draws are taken in blocks of i.i.d. uniform choices
    over the current candidates and cut just after the first draw that empties an edge (the first
    moment the candidate set changes), which is the same distribution as drawing one at a time.
    """

    randomized = True
    #: marks persist across batches and an empty pool starts a new phase (RLT), as the compiled core reads it
    marking = False

    def __init__(self, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        n = trie.n_nodes
        self._rng = np.random.default_rng(options.get("seed"))
        self._marked = bytearray(n)
        self._pool = np.zeros(n, dtype=np.int64)
        self._slot = [-1] * n
        self._pool_size = 0
        self._marked_nodes: set[int] = set()  # with marking: the marked edges
        self.phases = 1

    def _batch_edges(self, paths: Sequence[Sequence[int]]) -> list[int]:
        """The batch's edges in ascending ids: the pool's order is reproducible."""
        return sorted({v for path in paths for v in path})

    def _before_batch(self, paths: Sequence[Sequence[int]], on_paths: Collection[int]) -> None:
        for v in on_paths:
            self._mark(v)

    def _after_batch(self, paths: Sequence[Sequence[int]], on_paths: Collection[int]) -> None:
        if not self.marking:
            for v in on_paths:
                self._unmark(v)

    #: "auto" runs the compiled core from this many tokens in all (kvtheory.policies.dispatch)
    compiled_min_tokens = CORE_MIN_TOKENS
    core_class = "compiled.edge_cache:CompiledLeafSampler"

    def eviction_distribution(self, batch: Sequence[int]) -> dict[int, float]:
        """{edge v: probability} that the first token evicted, were ``batch`` served now and short of room, is
        edge v's leaf token (its last cached one): uniform over the candidates, the unmarked cached leaves off
        the batch's paths; with none left and marking, over every cached leaf off them (a new phase). Exact,
        not a sample; the state is left as it is."""
        on_paths = {v for j in batch for v in self.trie.path(j)}
        candidates = [int(v) for v in self._pool[: self._pool_size] if int(v) not in on_paths]
        if not candidates and self.marking:
            kept, children = self._kept, self._cached_children
            candidates = [int(v) for v in np.flatnonzero(kept) if children[v] == 0 and int(v) not in on_paths]
        return {v: 1.0 / len(candidates) for v in sorted(candidates)}

    # -- exact analysis (kvtheory.game) --------------------------------------------------------------------
    def state_key(self) -> tuple:
        """(the cached tokens per edge, the marked edges), both sorted: the candidates are the unmarked cached
        leaves, drawn uniformly, so this fixes the distribution of everything later (the pool's order and the
        generator only decide which draw picks which candidate)."""
        return tuple(self.kept().items()), tuple(v for v, m in enumerate(self._marked) if m)

    # -- marks and the candidate pool -------------------------------------------------------------
    def _mark(self, v: int) -> None:
        self._marked[v] = 1
        self._leave_pool(v)
        if self.marking:
            self._marked_nodes.add(v)

    def _unmark(self, v: int) -> None:
        self._marked[v] = 0
        if self._kept[v] > 0 and self._cached_children[v] == 0:
            self._join_pool(v)

    def _join_pool(self, v: int) -> None:
        if self._slot[v] < 0:
            self._pool[self._pool_size] = v
            self._slot[v] = self._pool_size
            self._pool_size += 1

    def _leave_pool(self, v: int) -> None:
        slot = self._slot[v]
        if slot >= 0:
            self._pool_size -= 1
            last = int(self._pool[self._pool_size])
            self._pool[slot] = last
            self._slot[last] = slot
            self._slot[v] = -1

    def _no_candidates(self, on_paths: Collection[int]) -> bool:
        """Run when room is needed but no candidate is left: with marking, a new phase, unless every marked edge
        is on the batch's paths (then there is nothing to unmark). True if it made new candidates."""
        survivors = self._marked_nodes & set(on_paths)
        cleared = self._marked_nodes - survivors
        if not cleared:
            return False
        self.phases += 1
        self._marked_nodes = survivors
        for v in sorted(cleared):  # ascending ids: the pool's order is reproducible
            self._unmark(v)
        return True

    def _evict(self, tokens: int, overflow: int, on_paths: Collection[int]) -> None:
        """Evict ``tokens`` leaf tokens, block by block (see the class docstring), stopping early only when
        no candidate is left and :meth:`_no_candidates` makes none; an error if that is before ``overflow``
        tokens went (``tokens`` >= ``overflow``: the shortfall, or the whole allocation).

        A block is sized about twice the expected draws before the smallest candidate empties
        (n candidates, the smallest holding c tokens: about n*c draws). When few draws are expected
        before the cut, the block is scanned in Python, else counted with numpy; both take the same
        draws and cut at the same place.
        """
        rng, kept = self._rng, self._kept
        freed = 0
        # each round takes at least one token or makes new candidates by unmarking at least one node, so
        # the rounds end, by return, within tokens + (trie nodes) + 1 of them
        for _ in range(tokens + len(kept) + 1):
            if tokens <= 0:
                return
            if self._pool_size == 0:
                if self._no_candidates(on_paths):
                    continue
                if freed >= overflow:
                    return
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            n = self._pool_size
            nodes = self._pool[:n].copy()
            caps = kept[nodes]
            expected = n * int(caps.min())
            block = min(tokens, max(2 * expected, _MIN_BLOCK))
            draws = rng.integers(n, size=block)
            if min(block, expected) <= _SCAN_LIMIT:
                taken = self._take_scanning(draws.tolist(), nodes, caps)
            else:
                taken = self._take_vectorized(draws, nodes, caps)
            tokens -= taken
            freed += taken
            self.size -= taken
        raise AssertionError(f"evicting {tokens} more tokens did not end within its bound on the rounds")

    def _take_scanning(self, draws: list[int], nodes: np.ndarray, caps: np.ndarray) -> int:
        """Apply draws one by one up to the first that empties a candidate; return how many applied."""
        counts: dict[int, int] = {}
        taken = 0
        for index in draws:
            taken += 1
            count = counts.get(index, 0) + 1
            counts[index] = count
            if count == caps[index]:
                break
        kept = self._kept
        for index, count in counts.items():
            v = int(nodes[index])
            kept[v] -= count
            if kept[v] == 0:
                self._emptied(v)
        return taken

    def _take_vectorized(self, draws: np.ndarray, nodes: np.ndarray, caps: np.ndarray) -> int:
        """The same as :meth:`_take_scanning` with numpy: per-candidate counts, and the position of the
        ``caps[i]``-th draw of candidate i found through a stable sort of the draws."""
        n = nodes.size
        counts = np.bincount(draws, minlength=n)
        emptied = np.flatnonzero(counts >= caps)
        taken = draws.size
        if emptied.size:
            # only the draws of emptied candidates matter for the cut: sort those (stably) by candidate
            hits = np.zeros(n, dtype=bool)
            hits[emptied] = True
            where = np.flatnonzero(hits[draws])
            order = where[np.argsort(draws[where], kind="stable")]
            starts = np.cumsum(counts[emptied]) - counts[emptied]
            taken = int(order[starts + caps[emptied] - 1].min()) + 1
            counts = np.bincount(draws[:taken], minlength=n)
        kept = self._kept
        kept[nodes] -= counts
        for v in nodes[kept[nodes] == 0].tolist():
            self._emptied(v)
        return taken

    def _emptied(self, v: int) -> None:
        """Edge v lost its last cached token: it leaves the pool and its parent may become a leaf."""
        self._leave_pool(v)
        p = self.trie.parent[v]
        children = self._cached_children
        children[p] -= 1
        if p and children[p] == 0 and not self._marked[p]:
            self._join_pool(p)
