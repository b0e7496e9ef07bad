"""predictive-marker: RLT's marking, with each eviction chosen by the predictions until its chain grows long,
then at random (Lykouris and Vassilvitskii's Predictive Marker, lifted to the prefix tree; docs/policies.md
§predictive-marker).

Marks and phases are RLT's: every edge on a served query's path is marked; the candidates are the unmarked
cached leaves (never on the batch's paths, which are marked); when room is needed and no candidate is left, a
new phase starts and every mark is cleared except the batch's paths. Each evicted token is charged to a
**chain**. The batch's missing tokens, in the order it asks for them (query by query, root to leaf), are its
requests; the last ``t`` of them cause its ``t`` evictions (t = the shortfall, or the whole allocation), one each.
A cause that was evicted in this phase continues the chain that evicted it (in paging, a stale page evicted
this phase); any other cause starts a new chain. A chain of length <= H_k evicts the candidate leaf token of
the latest predicted next request (the key of :func:`~kvtheory.policies.blind_oracle.tree_keys`; ties: the
deeper token, then the larger edge id), a longer one a uniformly random candidate leaf token (a seeded numpy
Generator, one ``integers`` draw over the candidates in ascending edge order). The evicted token becomes its
chain's representative until it is requested again. k is the slack at batch size 1, B - L_max + 1 (L_max the
longest query of the workload), at least 1.

The engine steps per radix edge, not per token, and takes exactly the per-token rule's decisions and draws. A
chain has one representative at a time, so only its length matters: the tokens evicted in a phase are kept as
runs (edge, positions lo..hi, chain length), and a cause's chain length is looked up by its position. Causes
come as runs of one edge's positions whose chains have one length L; while L + 1 <= H_k, the furthest candidate
v (a lazy max-heap of (key, depth, edge)) gives up its tokens at once until it empties or the next candidate
ranks above it (equal keys: its depth falls to the other's). Past H_k, the draws over the n candidates are
taken as one block of ``integers(n, size=m)``, the same numbers as m single draws, cut just after the first
draw that empties a candidate (the generator is rewound and exactly the draws applied are taken again).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from kvtheory.policies import register_predictive_policy
from kvtheory.policies.blind_oracle import tree_keys
from kvtheory.policies.predicted_marking import MarkingWithPredictions

_MIN_BLOCK = 64


def harmonic(k: int) -> float:
    """H_k = 1 + 1/2 + ... + 1/k."""
    return float(sum(1.0 / i for i in range(1, k + 1)))


def first_emptying(draws: np.ndarray, caps: np.ndarray) -> tuple[int, np.ndarray]:
    """(how many of ``draws`` (indices of candidates holding ``caps`` tokens) apply, up to and including the first
    that takes a candidate's last token; each candidate's count among those draws)."""
    n = caps.size
    counts = np.bincount(draws, minlength=n)
    emptied = np.flatnonzero(counts >= caps)
    if not emptied.size:
        return draws.size, counts
    hits = np.zeros(n, dtype=bool)
    hits[emptied] = True
    where = np.flatnonzero(hits[draws])
    order = where[np.argsort(draws[where], kind="stable")]  # the draws of each emptied candidate, in turn
    starts = np.cumsum(counts[emptied]) - counts[emptied]
    taken = int(order[starts + caps[emptied] - 1].min()) + 1
    return taken, np.bincount(draws[:taken], minlength=n)


@register_predictive_policy
class PredictiveMarker(MarkingWithPredictions):
    """Marking with predicted evictions, random past H_k on a chain; ``predictions`` is required. Its compiled
    core (``compiled_told``): :class:`~kvtheory.policies.compiled.predictive.CompiledPredictiveMarker`."""

    name = "predictive-marker"
    compiled_core = True
    core_class = "compiled.predictive:CompiledPredictiveMarker"

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)
        self._heap: list[tuple[float, int, int, int]] = []  # (-key, -depth, -edge, version) of the candidates
        self._version = [0] * trie.n_nodes
        #: edge -> runs [lo, hi, chain length] of the positions of its tokens evicted in this phase
        self._chains: dict[int, list[list[int]]] = {}
        self.threshold = harmonic(self.k)

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie, kept, edge_len = self.trie, self._kept, self.trie.edge_len
        self._step += 1
        paths = [trie.path(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        told = self._predictions.told(self._step, on_paths, self.name)
        keys = tree_keys(trie, told, lambda c: self._key[c] if kept[c] else None)
        hits = [self.cached_prefix(j) for j in batch]
        requests, seen, missing = [], set(), 0
        for path in paths:
            for v in path:
                if v not in seen and kept[v] < edge_len[v]:
                    seen.add(v)
                    requests.append((v, int(kept[v]) + 1, edge_len[v]))
                    missing += edge_len[v] - int(kept[v])
        self._mark_all(on_paths)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            self._evict(last_tokens(requests, self.tokens_to_free(overflow, missing)), overflow, on_paths)
        self._forget(on_paths)
        self._fill(paths)
        for v in on_paths:
            self._key[v] = keys[v]
        return hits

    def _mark_all(self, on_paths: set[int]) -> None:
        for v in on_paths:
            self._mark(v)

    def _forget(self, on_paths: set[int]) -> None:
        """Drop the runs of the batch's edges: marked until the phase ends, they are never looked up again."""
        for v in on_paths:
            self._chains.pop(v, None)

    def _mark(self, v: int) -> None:
        if not self._marked[v]:
            self._marked[v] = 1
            self._marked_edges.add(v)
        self._candidates.discard(v)

    def _join(self, v: int) -> None:
        """Edge v becomes a candidate (or its depth changed): a fresh heap entry, the older ones void."""
        self._candidates.add(v)
        self._version[v] += 1
        depth = self.trie.depth[self.trie.parent[v]] + int(self._kept[v])
        heapq.heappush(self._heap, (-self._key[v], -depth, -v, self._version[v]))

    def _new_phase(self, on_paths: set[int]) -> bool:
        """Clear every mark off the batch's paths; False if there was none to clear (no new candidates)."""
        cleared = self._marked_edges - on_paths
        if not cleared:
            return False
        self.phases += 1
        self._marked_edges -= cleared
        self._chains.clear()
        for v in cleared:
            self._marked[v] = 0
            if self._kept[v] > 0 and self._cached_children[v] == 0:
                self._join(v)
        return True

    def _evict(self, causes: list[tuple[int, int, int]], overflow: int, on_paths: set[int]) -> None:
        """One eviction per cause (runs (edge, first, last position)), charged to its chain; with no candidate
        even after a new phase, stop if ``overflow`` tokens went, else raise. Every round frees a token or
        more: at most (causes' tokens) + 1 rounds per run."""
        freed = 0
        for v, first, last in causes:
            phase = self.phases
            for lo, hi, length in self._chain_runs(v, first, last):
                count = hi - lo + 1
                for _ in range(count + 1):
                    if count <= 0:
                        break
                    if not self._candidates and not (self._new_phase(on_paths) and self._candidates):
                        if freed >= overflow:
                            return
                        raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
                    grown = length + 1 if self.phases == phase else 1  # a new phase forgot every chain
                    if grown <= self.threshold:
                        taken = self._evict_furthest(count, grown)
                    else:
                        taken = self._evict_drawn(count, grown)
                    count -= taken
                    freed += taken
                else:
                    raise AssertionError(f"evicting {count} more tokens did not end within its bound on the rounds")

    def _chain_runs(self, v: int, first: int, last: int) -> list[tuple[int, int, int]]:
        """Positions first..last of edge v as runs (lo, hi, length of the chain their tokens represent, 0 for
        none: a token not evicted in this phase), ascending."""
        runs, at = [], first
        for lo, hi, length in sorted(self._chains.get(v, ())):
            lo, hi = max(lo, first), min(hi, last)
            if lo > hi:
                continue
            if at < lo:
                runs.append((at, lo - 1, 0))
            runs.append((lo, hi, length))
            at = hi + 1
        if at <= last:
            runs.append((at, last, 0))
        return runs

    def _furthest(self) -> tuple[float, int, int, int] | None:
        """The heap entry of the candidate of the largest (key, depth, edge), void entries dropped; None if none."""
        heap, version, candidates = self._heap, self._version, self._candidates
        while heap:
            entry = heap[0]
            if entry[3] == version[-entry[2]] and -entry[2] in candidates:
                return entry
            heapq.heappop(heap)
        return None

    def _evict_furthest(self, count: int, length: int) -> int:
        """Up to ``count`` predicted evictions (chains of ``length``) from the furthest candidate, while it stays
        the furthest; returns how many."""
        top = self._furthest()
        heapq.heappop(self._heap)
        v = -top[2]
        run = int(self._kept[v])
        second = self._furthest()
        if second is not None and second[0] == top[0]:  # equal keys: until v's depth falls to the other's
            run = min(run, second[1] - top[1] + (1 if v > -second[2] else 0))
        run = min(run, count)
        self._take(v, run, length)
        if self._kept[v]:
            self._join(v)
        return run

    def _evict_drawn(self, count: int, length: int) -> int:
        """Up to ``count`` uniform evictions (chains of ``length``), one ``integers`` draw each over the candidates
        in ascending order, cut after the first draw that empties one; returns how many."""
        nodes = np.fromiter(sorted(self._candidates), dtype=np.int64)
        caps = self._kept[nodes]
        rng = self._rng
        block = min(count, max(2 * nodes.size * int(caps.min()), _MIN_BLOCK))
        state = rng.bit_generator.state
        taken, counts = first_emptying(rng.integers(nodes.size, size=block), caps)
        if taken < block:  # rewind: exactly the draws applied, as single draws would have taken them
            rng.bit_generator.state = state
            rng.integers(nodes.size, size=taken)
        for index in np.flatnonzero(counts).tolist():
            v = int(nodes[index])
            self._take(v, int(counts[index]), length)
            if self._kept[v]:
                self._join(v)
        return taken

    def _take(self, v: int, tokens: int, length: int) -> None:
        """Evict the last ``tokens`` cached tokens of edge v, each its chain's representative (chains of
        ``length``); an emptied edge leaves the candidates and its parent may join them."""
        kept = self._kept
        top = int(kept[v])
        runs = self._chains.setdefault(v, [])
        if runs and runs[-1][0] == top + 1 and runs[-1][2] == length:
            runs[-1][0] = top - tokens + 1
        else:
            runs.append([top - tokens + 1, top, length])
        kept[v] -= tokens
        self.size -= tokens
        if kept[v] == 0:
            self._candidates.discard(v)
            p = self.trie.parent[v]
            self._cached_children[p] -= 1
            if p and self._cached_children[p] == 0 and not self._marked[p]:
                self._join(p)


def last_tokens(requests: list[tuple[int, int, int]], tokens: int) -> list[tuple[int, int, int]]:
    """The last ``tokens`` positions of ``requests`` (runs (edge, first, last position), in order), as runs."""
    causes = []
    for v, first, last in reversed(requests):
        if tokens <= 0:
            break
        take = min(tokens, last - first + 1)
        causes.append((v, last - take + 1, last))
        tokens -= take
    causes.reverse()
    return causes
