"""The state of the edge-cache core (:mod:`kvtheory.policies.compiled.edge_cache`: LFU-leaf, RLT, random-leaf) and
the codes of its rules, without numba: the drivers that take the kernel compiled ahead of time
(:mod:`kvtheory.policies.flat_streams`) build it without loading numba."""

from __future__ import annotations

import numpy as np

from kvtheory.model.trie import PrefixTrie

#: the rules the kernel ``run_batches`` interprets
RANDOM_LEAF, RLT, LFU = 0, 1, 2
# indices into the int64 ``counters`` array of an edge cache's state
_SIZE, _POOL, _MARKED, _STEP, _PHASES, _HEAP = range(6)


class EdgeState:
    """The arrays of one run over ``trie``: the trie (``parent``, ``edge_len``, ``ends``), the cache (``kept``,
    ``children``), marks (``marked``; RLT's list of marked edges ``marked_list``/``listed``), the candidate pool
    (``pool``, ``slot``), ``seen[v]`` (the last batch whose paths hold v), ``on`` (scratch space for the batch's
    edges), ``counters`` = [cached tokens, pool size, marked-list length, batches served, phases,
    heap entries], LFU's ``count``, ``last`` and ``heap``, and ``order`` (the order of a new phase: the node
    numbers themselves on a trie). Without ``trie``, the state of a flat stream of ``nodes`` nodes so far: every
    node a one-token edge under the root."""

    #: the per-node arrays and the value a node not met yet holds in each
    FILLS = {"parent": 0, "edge_len": 1, "kept": 0, "children": 0, "marked": 0, "listed": 0, "marked_list": 0}
    FILLS |= {"pool": 0, "slot": -1, "seen": -1, "on": 0, "count": 0, "last": 0, "order": 0}

    def __init__(self, trie: PrefixTrie | None = None, nodes: int = 1) -> None:
        n = trie.n_nodes if trie is not None else nodes
        for name, fill in self.FILLS.items():
            setattr(self, name, np.full(n, fill, dtype=np.uint8 if name in ("marked", "listed") else np.int64))
        if trie is not None:
            self.parent = np.asarray(trie.parent, dtype=np.int64)
            self.edge_len = np.asarray(trie.edge_len, dtype=np.int64)
            self.ends = np.asarray(trie.end, dtype=np.int64)
        self.order = np.arange(n, dtype=np.int64)
        self.counters = np.zeros(6, dtype=np.int64)
        self.counters[_PHASES] = 1
        self.heap = np.zeros((2, 64), dtype=np.int64)

    def grow(self, nodes: int) -> None:
        """Hold at least ``nodes`` nodes (twice as many as now, if more are needed), the new ones not met yet."""
        n = self.kept.size
        if nodes > n:
            wider = max(nodes, 2 * n)
            for name, fill in self.FILLS.items():
                old = getattr(self, name)
                setattr(self, name, np.concatenate([old, np.full(wider - n, fill, dtype=old.dtype)]))

    def arrays(self) -> tuple:
        """The arguments of ``run_batches`` after the queries, in its order."""
        return (
            self.parent, self.edge_len, self.kept, self.children, self.marked, self.listed, self.marked_list,
            self.pool, self.slot, self.seen, self.on, self.counters, self.count, self.last, self.heap, self.order,
        )  # fmt: skip
