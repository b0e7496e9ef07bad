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
tops of the group's edges together like a water level (:class:`~kvtheory.policies.water_level.WaterLevel`).
An eviction costs O(log n) per edge that joins or leaves the level, whatever the number of tokens and of
edges it lowers; over a run, O(T log T) at most, and in practice O(radix edges x log).

Two implementations: :class:`FurthestInFuture`, served batch by batch per edge in Python (the oracle,
and what a caller with its own schedule uses), and the compiled core :mod:`kvtheory.optimum.compiled_fif`
that :func:`run_fif` runs, which evicts in the same order, token for token.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from kvtheory.model.batches import batches, validate
from kvtheory.model.trie import PrefixTrie
from kvtheory.model.workload import Workload
from kvtheory.policies import native
from kvtheory.policies.dispatch import check_backend, flat_stream, long_enough
from kvtheory.policies.furthest import FurthestKeyCache
from kvtheory.simulate import RunResult, drive, result_of, run_in_blocks


class FurthestInFuture(FurthestKeyCache):
    """Offline FIF over a known schedule: ``schedule[t]`` is the batch (trie sequence indices) of step t.

    The key of an edge (:class:`~kvtheory.policies.furthest.FurthestKeyCache`) orders its next request
    (step T, multiplicity m): larger T first, then smaller m; never again comes last of all.
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

    def _group_key(self, step: int, multiplicity: int) -> int:
        return step * self._width + (self._width - 1 - multiplicity)

    def _next_key(self, v: int) -> int:
        self._cursor[v] += 1
        occurrences = self._requests[v]
        return occurrences[self._cursor[v]] if self._cursor[v] < len(occurrences) else self._never

    def serve(self, batch: Sequence[int]) -> list[int]:
        t = self._step
        if t >= len(self._schedule) or tuple(batch) != self._schedule[t]:
            raise ValueError("FIF must be served its schedule's batches in order")
        self._step += 1
        return super().serve(batch)


def run_fif(
    workload: Workload, budget: int, *, batch: int = 1, backend: str = "auto", block_size: int = 1
) -> RunResult:
    """FIF on one worker: the exact optimum at batch size 1, an upper bound on it at beta >= 2
    (:func:`kvtheory.optimum.exact.solve_optimum` is exact at every batch size). ``backend``
    (:mod:`kvtheory.policies.dispatch`): ``"compiled"`` is the core :mod:`kvtheory.optimum.compiled_fif`,
    ``"python"`` is :class:`FurthestInFuture`, the rule it reproduces hit for hit (tests/optimum/test_compiled_fif.py),
    and ``"auto"`` the core from 100,000 queries on. ``block_size`` b > 1: FIF on the block-level workload with
    B / b slots (docs/model.md §Blocks), where the same exchange argument makes it optimal at batch size 1.

    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> run_fif(w, 2).misses   # Belady: 3 compulsory misses, then one miss per two requests
    4
    """
    if block_size != 1:

        def run(blocks: Workload, slots: int):
            return run_fif(blocks, slots, batch=batch, backend=backend).query_hits

        return run_in_blocks(workload, budget, batch, block_size, run, "fif")
    validate(workload, budget, batch)
    if check_backend(backend) == "python" or (backend == "auto" and not long_enough(len(workload))):
        fif = FurthestInFuture(workload.trie, budget, batches(len(workload), batch))
        return drive(workload, budget, fif, "fif", batch, None)
    columns = flat_stream(workload, batch)
    if columns is not None:  # a flat trace at batch size 1: streamed, the same hits (kvtheory.optimum.flat_fif)
        from kvtheory.optimum.flat_fif import stream_fif

        return result_of(workload, budget, "fif", batch, None, stream_fif(columns, budget)[0])
    return result_of(workload, budget, "fif", batch, None, run_compiled_fif(workload.trie, budget, batch)[0])


def run_compiled_fif(trie: PrefixTrie, budget: int, batch: int, kernels=None) -> tuple[np.ndarray, np.ndarray]:
    """FIF's hits per query and final kept tokens per trie node from the compiled core ``fif_run`` of
    :mod:`kvtheory.optimum.compiled_fif` (from ``kernels``, by default the extension compiled ahead of time when
    it is current, else numba's: :func:`kvtheory.policies.native.kernels`), queries served in order in batches
    of ``batch``."""
    parent, depth, ends = trie.column("parent"), trie.column("depth"), trie.column("end")  # fif_run reads them only
    n_nodes = parent.size
    if int(depth.max(initial=0)) + 1 >= (1 << 62) // max(n_nodes, 1):
        raise ValueError("queries too long for the FIF core's int64 heap keys")
    width = min(batch, ends.size) + 2  # FurthestInFuture's: the longest batch + 2
    try:
        core = kernels or native.kernels("kvtheory.optimum.compiled_fif")
        return core.fif_run(parent, depth, ends, int(budget), int(batch), width)
    except RuntimeError as exc:  # raised inside the kernel: its message, without numba's frames
        raise RuntimeError(str(exc)) from None
