"""Whole runs on a flat trie (every query one radix edge off the root) by the flat cores of
:mod:`kvtheory.policies.compiled.flat`: L-LRU, token-LRU and FIFO-leaf (whole-leaf eviction) and LFU-leaf.

This module loads no numba: the kernels come from :func:`kvtheory.policies.native.kernels`, the extension compiled
ahead of time when it is current, else numba's, with the same hits."""

from __future__ import annotations

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.base import flat_trie_arrays
from kvtheory.policies.native import kernels


def _run_flat(name: str, kernel: str, trie: PrefixTrie, *args) -> np.ndarray:
    """The hits of the flat core ``kernel`` on a flat trie (a ValueError naming ``name`` on any other), its errors
    without numba's frames."""
    arrays = flat_trie_arrays(trie)
    if arrays is None:
        raise ValueError(f"{name} needs a flat trie (every query one edge off the root)")
    try:
        return getattr(kernels("kvtheory.policies.compiled.flat"), kernel)(*arrays, *args)
    except RuntimeError as exc:
        raise RuntimeError(str(exc)) from None


def run_flat_radix(trie: PrefixTrie, budget: int, batch: int, *, refresh: bool) -> np.ndarray:
    """Hits of each query under whole-leaf radix eviction on a flat trie (the kernel ``flat_radix_run``)."""
    return _run_flat("run_flat_radix", "flat_radix_run", trie, int(budget), int(batch), bool(refresh))


def run_flat_lfu(trie: PrefixTrie, budget: int, batch: int) -> np.ndarray:
    """Hits of each query under LFU-leaf on a flat trie (the kernel ``flat_lfu_run``)."""
    if (-(-len(trie.end) // batch) + 1) * (trie.n_nodes + 1) >= 1 << 62:
        raise ValueError("too many steps for the flat LFU core's int64 heap keys")
    return _run_flat("run_flat_lfu", "flat_lfu_run", trie, int(budget), int(batch))
