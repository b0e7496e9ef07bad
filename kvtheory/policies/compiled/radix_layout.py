"""The array layout the compiled radix core (:mod:`kvtheory.policies.compiled.radix`) and its object
(:class:`kvtheory.policies.radix_core.CompiledRadix`) share: the rows of its trie, state and dynamic-node arrays
and the cells of its scalar array, and the trie array itself. Plain Python: the object loads no numba."""

from __future__ import annotations

import numpy as np

from kvtheory.model.trie import PrefixTrie

# rows of the trie array
T_PARENT, T_DEPTH, T_TIN, T_TOUT, T_EDGE = range(5)
# rows of the per-trie-node state
S_FIRST, S_KEPT, S_SEEN = range(3)
# rows of the dynamic-node array
N_PARENT, N_D0, N_D1, N_BOTTOM, N_KEY, N_CHILDREN, N_MID, N_LOCK, N_ALIVE = range(9)
#: rows of ``nodes`` the shared tree functions use; the radix rules' own row follows
TREE_ROWS = 9
N_STAMP = TREE_ROWS
# cells of the scalar array (the heap's size must be cell 0: heap_push / heap_pop read it there)
C_HEAP, C_CLOCK, C_LAST_CID, C_SIZE, C_BUDGET, C_REFRESH, C_WHOLE, C_ALLOCATION = range(8)


def trie_arrays(trie: PrefixTrie) -> np.ndarray:
    """The trie array: rows parent, depth, Euler-tour in and out times, edge length, one column per trie node."""
    return np.stack([trie.column(name) for name in ("parent", "depth", "tin", "tout", "edge_len")])
