"""Streamed runs of flat traces: one-token queries read chunk by chunk, in O(distinct objects) memory.

A flat trace (an oracleGeneral file, :class:`~kvtheory.model.traces.flat.OracleGeneralColumns`) is served at
batch size 1 without ever holding a per-request array of the whole trace: each chunk of object ids becomes node
numbers (node i is the i-th distinct object met: :class:`NodeStream`), and a kernel whose state persists between
chunks serves the chunk (:mod:`kvtheory.policies.compiled.flat_stream` for the radix family and LFU-leaf,
``flat_sampler`` for RLT and random-leaf, ``flat_authors`` for rlt-authors; FIF's driver is
:mod:`kvtheory.optimum.flat_fif`). This module loads no numba: the kernels come from :func:`flat_kernels`, the
extension compiled ahead of time when it is current (:mod:`kvtheory.policies.native`), else numba's.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from kvtheory.policies.native import ahead_of_time, bit_source

#: rlt-authors' first Fenwick tree length (:func:`stream_authors`)
_FIRST_STAMPS = 1 << 10


def jit_kernels() -> SimpleNamespace:
    """The kernels a streamed run of an online policy calls, as numba compiles them just in time (loads numba)."""
    from kvtheory.policies.compiled import flat_authors, flat_sampler, flat_stream

    return SimpleNamespace(
        dense_ids=flat_stream.dense_ids,
        radix_chunk=flat_stream.radix_chunk,
        lfu_chunk=flat_stream.lfu_chunk,
        sampler_chunk=flat_sampler.sampler_chunk,
        authors_chunk=flat_authors.authors_chunk,
    )


def flat_kernels():
    """The extension compiled ahead of time when it is current, else :func:`jit_kernels`."""
    return ahead_of_time() or jit_kernels()


class NodeStream:
    """The node numbers of a stream of id chunks (the kernel ``dense_ids``: an open-addressing hash table, at most
    half full), and ``state``: ``rows`` int64 arrays per node, zero for a node not met yet, lengthened by
    :meth:`nodes` to cover every node met so far. With ``nodes`` given, the ids are node numbers already (1 to
    ``nodes`` - 1: a trie's, node 0 its root) and are taken as they are, the state made for all of them at once."""

    def __init__(self, rows: int, kernels, nodes: int | None = None) -> None:
        self.table = np.zeros((1 << 10, 2), dtype=np.int64)
        self.count = np.zeros(1, dtype=np.int64)
        self.state = np.zeros((rows, 1 << 9 if nodes is None else nodes), dtype=np.int64)
        self._dense_ids = kernels.dense_ids
        self._numbered = nodes is not None

    def nodes(self, ids: np.ndarray) -> np.ndarray:
        if self._numbered:
            return ids
        out = np.empty(ids.size, dtype=np.int64)
        self.table = self._dense_ids(ids, self.table, self.count, out)
        needed = int(self.count[0]) + 1
        if self.state.shape[1] < needed:
            wider = np.zeros((self.state.shape[0], max(needed, 2 * self.state.shape[1])), dtype=np.int64)
            wider[:, : self.state.shape[1]] = self.state
            self.state = wider
        return out


def new_heap() -> np.ndarray:
    """An empty heap for the kernels' ``heap_admit``, which lengthens it as the cache fills."""
    return np.empty((1 << 10, 3), dtype=np.int64)


def serve_chunks(chunks, stream: NodeStream, serve_chunk, query_hits: bool):
    """The total hits of serving each chunk of ids (``serve_chunk(ids, nodes, hits)``), and every query's hits
    (one int64 array) when ``query_hits``, else None; a kernel's RuntimeError raised as a new one (no chain)."""
    total, kept_hits = 0, []
    try:
        for ids in chunks:
            hits = np.empty(ids.size, dtype=np.int64)
            serve_chunk(ids, stream.nodes(ids), hits)
            total += int(hits.sum())
            if query_hits:
                kept_hits.append(hits)
    except RuntimeError as exc:
        raise RuntimeError(str(exc)) from None
    return total, (np.concatenate(kept_hits) if query_hits else None)


def stream_run(
    chunks, budget: int, policy: str, *, refresh: bool = True, query_hits: bool = False, kernels=None, nodes=None
):
    """The total hits of the one-token queries whose ids ``chunks`` yields, served at batch size 1 by ``policy``
    ("radix", with ``refresh`` as the policy's ``refresh_on_hit``, or "lfu"), and every query's hits (a new int64
    array) when ``query_hits``, else None. ``kernels``: :func:`flat_kernels` by default; ``nodes``: as
    :class:`NodeStream` takes it (here and below)."""
    kernels = kernels or flat_kernels()
    stream = NodeStream(4 if policy == "lfu" else 3, kernels, nodes)
    state = np.zeros(2, dtype=np.int64)
    heap = [new_heap()]

    def serve_chunk(ids, nodes, hits):
        rows = stream.state
        if policy == "lfu":
            heap[0] = kernels.lfu_chunk(nodes, hits, budget, state, rows[0], rows[1], rows[2], rows[3], heap[0])
        else:
            kernels.radix_chunk(nodes, hits, budget, refresh, state, rows[0], rows[1], rows[2])

    return serve_chunks(chunks, stream, serve_chunk, query_hits)


def stream_sampler(
    chunks, budget: int, *, marking: bool, seed=None, query_hits: bool = False, kernels=None, nodes=None
):
    """The total hits of the one-token queries whose ids ``chunks`` yields, served at batch size 1 by RLT
    (``marking``) or random-leaf from ``numpy.random.default_rng(seed)``, and every query's hits (a new int64
    array) when ``query_hits``, else None. ``kernels``: :func:`flat_kernels` by default."""
    kernels = kernels or flat_kernels()
    stream = NodeStream(6 if marking else 3, kernels, nodes)
    counters = np.zeros(3, dtype=np.int64)
    rng = np.random.default_rng(seed)  # kept alive: the kernel draws from its state
    bits = bit_source(rng)

    def serve_chunk(ids, nodes, hits):
        kernels.sampler_chunk(ids, nodes, hits, budget, marking, counters, stream.state, *bits)

    return serve_chunks(chunks, stream, serve_chunk, query_hits)


def stream_authors(chunks, budget: int, *, seed=None, query_hits: bool = False, kernels=None, nodes=None):
    """The total hits of the one-token queries whose ids ``chunks`` yields, served at batch size 1 by rlt-authors
    from ``numpy.random.default_rng(seed)``, and every query's hits (a new int64 array) when ``query_hits``,
    else None. ``kernels``: :func:`flat_kernels` by default."""
    kernels = kernels or flat_kernels()
    stream = NodeStream(2, kernels, nodes)
    counters = np.zeros(4, dtype=np.int64)
    # the Fenwick tree over insertion stamps and its owner array (stamp -> node): any first length will do, the
    # kernel renumbers the stamps into longer ones as the cache grows
    tree = [np.zeros(_FIRST_STAMPS + 1, dtype=np.int64), np.zeros(_FIRST_STAMPS + 1, dtype=np.int64)]
    rng = np.random.default_rng(seed)  # kept alive: the kernel draws from its state
    bits = bit_source(rng)

    def serve_chunk(ids, nodes, hits):
        tree[:] = kernels.authors_chunk(nodes, hits, budget, counters, stream.state, *tree, *bits)

    return serve_chunks(chunks, stream, serve_chunk, query_hits)
