"""The compiled radix core's object: a radix-family policy (L-LRU, token-LRU, FIFO-leaf) served batch by batch by
the kernel :func:`kvtheory.policies.compiled.radix.radix_serve` on any prefix trie.

This module loads no numba: the kernels come from :func:`kvtheory.policies.native.kernels`, the extension compiled
ahead of time when it is current, else numba's, with the same hits."""

from __future__ import annotations

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import KernelServed
from kvtheory.policies.compiled.radix_layout import (
    C_ALLOCATION,
    C_BUDGET,
    C_REFRESH,
    C_SIZE,
    C_WHOLE,
    N_ALIVE,
    N_MID,
    S_FIRST,
    S_KEPT,
    T_PARENT,
    TREE_ROWS,
    trie_arrays,
)
from kvtheory.policies.native import kernels


class CompiledRadix(KernelServed):
    """A radix-family policy's cache served batch by batch through ``radix_serve``; the same hits, batch for batch,
    as the per-edge class ``rule`` (L-LRU, token-LRU or FIFO-leaf) it is made for."""

    _KEPT_ROW, _SIZE_CELL = S_KEPT, C_SIZE
    #: the kernels' module, or None for :func:`kvtheory.policies.native.kernels`' choice at each call (no module is
    #: held, so the object pickles)
    _kernels = None

    def __init__(self, rule: type, trie: PrefixTrie, budget: int, **options) -> None:
        super().__init__(trie, budget, **options)
        self.name = rule.name
        n = trie.n_nodes
        self._trie = trie_arrays(trie)
        self._state = np.zeros((3, n), dtype=np.int64)
        self._state[S_FIRST] = -1
        self._nodes = np.zeros((TREE_ROWS + 1, 64), dtype=np.int64)
        self._nodes[N_MID, 0] = -1
        self._nodes[N_ALIVE, 0] = 1
        self._heap = np.zeros((2, 64), dtype=np.int64)
        self._scalars = np.zeros(8, dtype=np.int64)
        self._scalars[C_BUDGET] = budget
        self._scalars[C_REFRESH] = rule.refresh_on_hit
        self._scalars[C_WHOLE] = rule.whole_node
        self._scalars[C_ALLOCATION] = self.evict_amount == "allocation"
        self._path = np.zeros(n, dtype=np.int64)
        self._ends = trie.column("end")  # read only

    def _run(self, ends: np.ndarray, batch: int, hits: np.ndarray) -> None:
        self._nodes, self._heap = self._core().radix_serve(
            self._trie, self._state, self._nodes, self._heap, self._scalars, self._path, ends, batch, hits
        )

    def cached_prefix(self, j: int) -> int:
        return int(self._core().cached_prefix_of(self._trie[T_PARENT], self._state[S_KEPT], self._ends[j]))

    def _core(self):
        return self._kernels or kernels("kvtheory.policies.compiled.radix")
