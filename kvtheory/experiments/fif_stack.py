"""FIF's miss-ratio curve (OPT's at beta = 1) in one pass, on workloads of one-token queries: Mattson's priority
stack, cut at the budgets.

The rule. Every query q_t is one token, so the trie is a root with one leaf per object and a query is a request
for one object x = q_t. FIF at beta = 1 (docs/model.md §The offline optimum) is then Belady's rule: a miss on a
full cache C_{t-1}(B) evicts the cached object whose next request is furthest, ties (objects never requested
again, next request T) to the larger trie node id; every other tie-break of the rule (multiplicity, depth) is
even here. On a flat trie the larger node is the larger token id, since the trie numbers its leaves in sorted id
order (:mod:`kvtheory.optimum.flat_fif_kernels` and :mod:`kvtheory.optimum.compiled_fif` take the same
evictions). Write P_t for that order at step t: y ranks above z (y goes first) when next_t(y) > next_t(z), or
next_t(y) = next_t(z) = T and y > z. P_t does not depend on B, and from step t - 1 to t it changes at x alone
(every other object's next request after t is its next request after t - 1); x itself is not a candidate at
step t (a batch's nodes are resident after it). So FIF is a stack algorithm here
(:mod:`kvtheory.experiments.stack_mrc`'s lemma): C_t(B) within C_t(B + 1).

The stack, cut. Sort the distinct budgets b_1 < ... < b_K (b_0 = 0, C(0) empty) and keep the segments
S_i = C(b_i) - C(b_{i-1}), each a max-heap under P_t; C(b_i) = S_1 + ... + S_i. A segment has room only when
every later one is empty (they fill from the top). If x lies in S_i, it hits at b_i, ..., b_K and misses below;
if in none (i = K + 1 below), it misses at every budget.

The update, for x found in S_i. At every b_j with j < i, x is not in C_{t-1}(b_j), which is full when S_j is, so
FIF evicts e_j = the P_t-highest of C_{t-1}(b_j), and C_t(b_j) = C_{t-1}(b_j) - e_j + x. As C_{t-1}(b_j) =
C_{t-1}(b_{j-1}) + S_j, e_1 = max S_1 and e_j = max(e_{j-1}, max S_j): the carry e_{j-1} against the segment's
max. The new segments are the differences:

- S_1' = S_1 - e_1 + x: x takes the place of S_1's max whatever its own rank (inserting x first and popping the
  max would evict x itself whenever its next request is the furthest: not FIF);
- S_j' = S_j - e_j + e_{j-1} for 1 < j < i: the carry goes in and the max comes out, nothing moving when the
  carry itself ranks highest (it then passes on);
- S_i' = S_i - x + e_{i-1}: the carry takes x's place, and nothing below S_i changes.

A segment with room (no eviction at its budget: C_{t-1}(b_j) is every cached object) takes the carry and the
chain stops there; what is carried out of S_K leaves every cache. A hit in S_1 only re-keys x. Per request
O(i log B) heap work, i the segment x was found in; the next requests are computed once, backwards, in O(T).
Budgets above the trie's objects are cut there: nothing is ever evicted at them, and equal cut budgets share a
segment.

:func:`fif_stack_traversal` is plain enough for numba to compile as it is
(:mod:`kvtheory.experiments.compiled_fif_stack`, run from :data:`~kvtheory.policies.dispatch.CORE_MIN_QUERIES`
queries on, as :func:`~kvtheory.experiments.stack_mrc.stack_hits` is); tests/experiments/test_fif_one_pass.py
checks it against :func:`~kvtheory.optimum.fif.run_fif` query for query and final cache for final cache.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvtheory.errors import InputError
from kvtheory.experiments.stack_mrc import one_token_queries
from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.dispatch import long_enough
from kvtheory.policies.native import kernels


def fif_stack(trie: PrefixTrie, budgets: Sequence[int], *, compiled: bool | None = None):
    """FIF at beta = 1 on the one-token queries of ``trie`` at every budget from one traversal: ``(index,
    where, segment)``, int64 arrays. Query t hits at ``budgets[k]`` exactly when ``where[t] <= index[k]``, and
    trie node v is cached at ``budgets[k]`` after the last query exactly when ``0 <= segment[v] <= index[k]``.
    ``compiled``: the compiled kernel (ahead of time when current: :func:`~kvtheory.policies.native.kernels`) or
    the same code as Python; by default compiled from
    :data:`~kvtheory.policies.dispatch.CORE_MIN_QUERIES` queries on."""
    if not one_token_queries(trie):
        raise InputError("FIF's one-pass miss-ratio curve takes workloads of one-token queries only")
    wanted = np.asarray(budgets, dtype=np.int64).reshape(-1)
    if wanted.size and int(wanted.min()) < 1:
        raise InputError(f"a budget must be at least 1 token, got {int(wanted.min())}")
    ends = trie.column("end")  # read only
    n_nodes = len(trie.parent)
    clipped = np.minimum(wanted, max(n_nodes - 1, 1))  # n_nodes - 1 objects: nothing is evicted from there on
    cuts = np.unique(clipped)
    traverse = fif_stack_traversal
    if long_enough(ends.size) if compiled is None else compiled:  # ahead of time when current, else numba
        traverse = kernels("kvtheory.experiments.compiled_fif_stack").compiled_fif_traversal
    where, segment = traverse(ends, n_nodes, cuts)
    return np.searchsorted(cuts, clipped).astype(np.int64), where, segment


def fif_stack_hits(trie: PrefixTrie, budgets: Sequence[int], *, compiled: bool | None = None) -> np.ndarray:
    """FIF's total hits at each of ``budgets`` (int64, in their order) on the one-token queries of ``trie`` at
    beta = 1: the hits of :func:`~kvtheory.optimum.fif.run_fif` at each, from one traversal (:func:`fif_stack`)."""
    index, where, _ = fif_stack(trie, budgets, compiled=compiled)
    found = np.bincount(where, minlength=int(index.max(initial=0)) + 2)  # found in segment i (last: nowhere)
    return np.cumsum(found)[index].astype(np.int64)


def fif_stack_traversal(ends, n_nodes, cuts):
    """The traversal of :func:`fif_stack` (plain enough for numba to compile as it is): ``ends[t]`` is the trie
    node of query t, ``cuts`` the sorted distinct budgets b_1 < ... < b_K, at most the trie's objects. Returns
    ``where`` (the segment, 0-based, each query found its object in; K: none) and ``segment`` (each node's
    segment after the last query; -1: none). Segment j holds heap slots ``low[j]:low[j] + size[j]`` of ``heap``,
    a max-heap of nodes under P_t: the larger ``key`` (next request), then the larger node."""
    steps = ends.size
    segments = cuts.size
    upcoming = np.empty(steps, dtype=np.int64)  # the position of the next request of query t's node (steps: none)
    after = np.full(n_nodes, steps, dtype=np.int64)
    for t in range(steps - 1, -1, -1):
        v = ends[t]
        upcoming[t] = after[v]
        after[v] = t
    low = np.zeros(segments, dtype=np.int64)
    room = np.zeros(segments, dtype=np.int64)  # b_j - b_{j-1}
    size = np.zeros(segments, dtype=np.int64)
    for j in range(segments):
        low[j] = cuts[j - 1] if j >= 1 else 0
        room[j] = cuts[j] - low[j]
    heap = np.zeros(cuts[segments - 1] if segments > 0 else 0, dtype=np.int64)
    key = np.zeros(n_nodes, dtype=np.int64)
    segment = np.full(n_nodes, -1, dtype=np.int64)
    slot_of = np.zeros(n_nodes, dtype=np.int64)
    where = np.empty(steps, dtype=np.int64)
    for t in range(steps):
        x = ends[t]
        found = segment[x]
        where[t] = segments if found < 0 else found
        key[x] = upcoming[t]
        left = slot_of[x]  # x's slot in its segment, taken by the carry (found >= 1) or re-keyed (found == 0)
        carry = x
        for j in range(segments):
            base = low[j]
            top = -1
            if j == found:
                p = left
                stop = True
            elif size[j] < room[j]:  # no eviction at b_j: the carry joins the segment
                p = base + size[j]
                size[j] += 1
                stop = True
            else:
                top = heap[base]
                if j > 0:
                    u = carry
                    w = top
                    if key[u] > key[w] or (key[u] == key[w] and u > w):
                        continue  # the carry is e_j too: S_j stays, the carry goes on
                p = base  # S_j's max leaves (at j = 0 whatever x's rank) and is carried down
                stop = False
            heap[p] = carry
            segment[carry] = j
            slot_of[carry] = p
            if not stop:
                carry = top
            # restore the heap of segment j at local index k: up, then down
            k = p - base
            n_j = size[j]
            rounds_left = n_j + 1
            while k > 0:
                if rounds_left == 0:
                    raise RuntimeError(
                        "internal error: kernel fif_stack_traversal of FIF's one-pass miss-ratio curve exceeded "
                        "its step limit of segment size + 1 rounds (up)"
                    )
                rounds_left -= 1
                up = (k - 1) >> 1
                u = heap[base + k]
                w = heap[base + up]
                if key[u] > key[w] or (key[u] == key[w] and u > w):
                    heap[base + k] = w
                    slot_of[w] = base + k
                    heap[base + up] = u
                    slot_of[u] = base + up
                    k = up
                else:
                    break
            rounds_left = n_j + 1
            while 2 * k + 1 < n_j:
                if rounds_left == 0:
                    raise RuntimeError(
                        "internal error: kernel fif_stack_traversal of FIF's one-pass miss-ratio curve exceeded "
                        "its step limit of segment size + 1 rounds (down)"
                    )
                rounds_left -= 1
                c = 2 * k + 1
                if c + 1 < n_j:
                    u = heap[base + c + 1]
                    w = heap[base + c]
                    if key[u] > key[w] or (key[u] == key[w] and u > w):
                        c += 1
                u = heap[base + c]
                w = heap[base + k]
                if key[u] > key[w] or (key[u] == key[w] and u > w):
                    heap[base + k] = u
                    slot_of[u] = base + k
                    heap[base + c] = w
                    slot_of[w] = base + c
                    k = c
                else:
                    break
            if stop:
                break
        else:
            if segments > 0:
                segment[carry] = -1  # carried out of S_K: in no cache any more
    return where, segment
