"""FIF streamed over a flat trace at batch size 1 (Belady's rule), in O(distinct objects) memory beside one
next-use array: the driver of :mod:`kvtheory.optimum.flat_fif_kernels` (whose docstring states the rule), which
loads no numba when the kernels compiled ahead of time are current (:mod:`kvtheory.policies.native`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from kvtheory.model.traces.flat import OracleGeneralColumns
from kvtheory.policies.flat_streams import NodeStream, jit_kernels, new_heap, serve_chunks
from kvtheory.policies.native import ahead_of_time


def jit_fif_kernels() -> SimpleNamespace:
    """numba's kernels of a streamed FIF run, under the names the extension exports them by (loads numba)."""
    from kvtheory.optimum import flat_fif_kernels as jit

    widths = ("i4", "i8")  # the next-use array's
    names = {f"{kernel}_{width}": getattr(jit, kernel) for kernel in ("next_uses", "fif_chunk") for width in widths}
    return SimpleNamespace(dense_ids=jit_kernels().dense_ids, **names)


def fif_kernels():
    """The extension compiled ahead of time when it is current, else :func:`jit_fif_kernels`."""
    return ahead_of_time() or jit_fif_kernels()


def stream_fif(columns: OracleGeneralColumns, budget: int, *, query_hits: bool = False, kernels=None):
    """FIF's total hits on the flat trace ``columns`` at batch size 1, and every query's hits (a new int64
    array) when ``query_hits``, else None. ``kernels``: :func:`fif_kernels` by default."""
    kernels = kernels or fif_kernels()
    n = len(columns)
    wide = n >= (1 << 31) - 1
    next_use = np.empty(n, dtype=np.int64 if wide else np.int32)
    next_uses = kernels.next_uses_i8 if wide else kernels.next_uses_i4
    fif_chunk = kernels.fif_chunk_i8 if wide else kernels.fif_chunk_i4
    stream = NodeStream(3, kernels)
    base = n
    for ids in columns.id_chunks(reverse=True):
        base -= ids.size
        next_uses(stream.nodes(ids), base, n, stream.state[2], next_use)
    state = np.zeros(1, dtype=np.int64)
    carried = [new_heap(), 0]  # the heap, and the position of the chunk's first query

    def serve_chunk(ids, nodes, hits):
        heap, base = carried
        kept, pos = stream.state[0], stream.state[1]
        carried[0] = fif_chunk(nodes, ids, base, next_use, hits, budget, state, kept, pos, heap)
        carried[1] = base + ids.size

    return serve_chunks(columns.id_chunks(), stream, serve_chunk, query_hits)
