"""FIF (furthest in future): the exact offline optimum for one worker, in O(T log T).

To make room, evict the cached leaf token whose next request is furthest in the future (never again
counts as infinity); ties go to the token that the fewest queries of that next batch contain (its
multiplicity m: every one of them will miss it), then to the deeper token, then to the larger trie
node id. At batch size 1 every m is 1 and this is the rule of docs/model.md §The offline optimum word
for word. At batch size >= 2, the depth-first rule (depth before multiplicity) is not optimal: with
B = 7 and batches {[1,2,3,4], [1,2,3,5], [6,7]}, {[9], [10], [11]}, {[1,2,3,4], [1,2,3,5], [6,7]}, it evicts token
(1,2,3), shared by two queries of the third batch, instead of (6,7), and pays 17 misses against the
optimum's 16. Within one next batch, the evicted tokens cost the sum of their m; since m never grows
from a node to its child, the set of the r smallest (m, -depth) tokens is itself a set of leaves to
peel, so the order above takes the cheapest r tokens of the group.

Why this runs per edge. All tokens of a radix edge share their next request time and multiplicity,
next(parent) <= next(child), and a parent's m is at least its child's. Let (T*, m*) be the first group
in that order among cached tokens off the current batch's paths: every such token has only tokens of
the same group below it, so FIF removes that whole group before any other, deepest first, lowering the
tops of the group's edges together like a water level (:class:`~kvtheory.optimum.water_level.WaterLevel`).
An eviction costs O(log n) per edge that joins or leaves the level, whatever the number of tokens and of
edges it lowers; over a run, O(T log T) at most, and in practice O(radix edges x log).

Two implementations: :class:`FurthestInFuture`, served batch by batch per edge in Python (the oracle,
and what a caller with its own schedule uses), and the compiled core :mod:`kvtheory.optimum.compiled_fif`
that :func:`run_fif` runs, which evicts in the same order, token for token.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence

from kvtheory.model.batches import batches, validate
from kvtheory.model.trie import PrefixTrie
from kvtheory.model.workload import Workload
from kvtheory.optimum.water_level import WaterLevel
from kvtheory.policies.base import EvictionPolicy
from kvtheory.policies.dispatch import check_backend, long_enough
from kvtheory.simulate import RunResult, drive, result_of


class FurthestInFuture(EvictionPolicy):
    """Offline FIF over a known schedule: ``schedule[t]`` is the batch (trie sequence indices) of step t.

    ``serve`` must be called with the batches of the schedule, in order.
    """

    name = "fif"

    def __init__(self, trie: PrefixTrie, budget: int, schedule: Sequence[Sequence[int]], *, seed=None) -> None:
        super().__init__(trie, budget, seed=seed)
        self._schedule = [tuple(batch) for batch in schedule]
        self._step = 0
        # A group key orders (next step T, multiplicity m): larger T first, then smaller m.
        self._width = max(len(batch) for batch in self._schedule) + 2
        self._never = self._group_key(len(self._schedule), 0)
        requests: dict[int, list[int]] = {}
        for t, batch in enumerate(self._schedule):
            multiplicity = Counter(v for j in batch for v in trie.path(j))
            for v, m in multiplicity.items():
                requests.setdefault(v, []).append(self._group_key(t, m))
        self._requests = requests
        self._cursor = dict.fromkeys(requests, 0)
        self._group_of = [-1] * trie.n_nodes  # the group an edge is cached in, -1 if none
        self._groups: dict[int, WaterLevel] = {}
        self._order: list[int] = []  # the keys of _groups, negated: a max-heap (an emptied group stays until drained)

    def _group_key(self, step: int, multiplicity: int) -> int:
        return step * self._width + (self._width - 1 - multiplicity)

    def kept_of(self, v: int) -> int:
        """Tokens of edge v cached now, counted from the edge's head."""
        group = self._groups.get(self._group_of[v])
        return 0 if group is None else group.kept_of(v)

    def cached_prefix(self, j: int) -> int:
        return sum(self.kept_of(v) for v in self.trie.path(j))

    def kept(self) -> dict[int, int]:
        kept = {v: group.kept_of(v) for group in self._groups.values() for v in group.members()}
        return {v: k for v, k in kept.items() if k}

    def serve(self, batch: Sequence[int]) -> list[int]:
        t = self._step
        if t >= len(self._schedule) or tuple(batch) != self._schedule[t]:
            raise ValueError("FIF must be served its schedule's batches in order")
        self._step += 1
        trie = self.trie
        paths = [trie.path(j) for j in batch]
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = {v for path in paths for v in path}
        cached = {}
        for v in on_paths:  # requested now: out of their groups, so never evicted in this step
            group = self._groups.get(self._group_of[v])
            cached[v] = 0 if group is None else group.remove(v)
        edge_len = trie.edge_len
        overflow = self.size + sum(edge_len[v] - cached[v] for v in on_paths) - self.budget
        if overflow > 0:
            self._evict(overflow)
        for v in on_paths:
            self.size += edge_len[v] - cached[v]
            self._cursor[v] += 1
            occurrences = self._requests[v]
            key = occurrences[self._cursor[v]] if self._cursor[v] < len(occurrences) else self._never
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = WaterLevel(trie.depth, trie.parent)
                heapq.heappush(self._order, -key)
            group.add(v, edge_len[v])
            self._group_of[v] = key
        return hits

    def _evict(self, tokens: int) -> None:
        """Drain the group requested furthest in the future first; a group that frees nothing is empty
        and is dropped. Every round drops a group or frees a token, so the rounds end, by return or by
        the error, within tokens + (groups) + 1 of them."""
        for _ in range(tokens + len(self._order) + 1):
            if tokens <= 0:
                return
            if not self._order:
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            key = -self._order[0]
            evicted = self._groups[key].drain(tokens)
            if not evicted:
                heapq.heappop(self._order)
                del self._groups[key]
                continue
            self.size -= evicted
            tokens -= evicted
        raise AssertionError(f"evicting {tokens} more tokens did not end within its bound on the rounds")


def run_fif(workload: Workload, budget: int, *, batch: int = 1, backend: str = "auto") -> RunResult:
    """FIF on one worker: the exact optimum at batch size 1, an upper bound on it at beta >= 2
    (:func:`kvtheory.optimum.exact.solve_optimum` is exact at every batch size). ``backend``
    (:mod:`kvtheory.policies.dispatch`): ``"compiled"`` is the core :mod:`kvtheory.optimum.compiled_fif`,
    ``"python"`` is :class:`FurthestInFuture`, the rule it reproduces hit for hit (tests/optimum/test_compiled_fif.py),
    and ``"auto"`` the core from 100,000 queries on.

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> run_fif(w, 2).misses   # Belady: 3 compulsory misses, then one miss per two requests
    4
    """
    validate(workload, budget, batch)
    if check_backend(backend) == "python" or (backend == "auto" and not long_enough(len(workload))):
        fif = FurthestInFuture(workload.trie, budget, batches(len(workload), batch))
        return drive(workload, budget, fif, "fif", batch, None)
    from kvtheory.optimum.compiled_fif import run_compiled_fif  # numba, imported by the runs that use it

    return result_of(workload, budget, "fif", batch, None, run_compiled_fif(workload.trie, budget, batch)[0])
