"""The binary min-heap of (a, b) int64 pairs and the growing buffers every compiled core shares.

The heap lives in two arrays (one per half of the pair) and a size cell, so a kernel keeps it in its own
int64 state; push and pop are inlined into each kernel that calls them. :func:`grow_columns` and
:func:`set_aside` lengthen a two-row buffer (a heap, or the entries a batch puts aside) as it fills.
"""

from __future__ import annotations

import numpy as np

from kvtheory.jit import njit

#: the step-limit errors of the kernels below (constants: numba raises them without building a string)
_PER_LEVEL = " of the compiled heap exceeded its step limit of 64 levels"
_HEAP_PUSH_LIMIT = "internal error: kernel heap_push" + _PER_LEVEL
_HEAP_POP_LIMIT = "internal error: kernel heap_pop" + _PER_LEVEL

#: the step limit of one heap push or pop: a heap of fewer than 2**63 entries has at most 63 levels below its top
HEAP_LEVELS = 64


# -- a binary min-heap of (a, b) int64 pairs, in two arrays plus a size cell ----------------------------
@njit(cache=True, inline="always")
def heap_less(ha, hb, i, j):
    return ha[i] < ha[j] or (ha[i] == ha[j] and hb[i] < hb[j])


@njit(cache=True, inline="always")
def heap_push(ha, hb, size, a, b):
    i = size[0]
    size[0] += 1
    ha[i] = a
    hb[i] = b
    rounds_left = np.int64(HEAP_LEVELS)  # i < 2**63 more than halves per level: 0 after at most 63
    while i > 0:
        if rounds_left == 0:
            raise RuntimeError(_HEAP_PUSH_LIMIT)
        rounds_left -= 1
        up = (i - 1) // 2
        if heap_less(ha, hb, i, up):
            ha[i], ha[up] = ha[up], ha[i]
            hb[i], hb[up] = hb[up], hb[i]
            i = up
        else:
            break


@njit(cache=True, inline="always")
def heap_pop(ha, hb, size):
    n = size[0] - 1
    size[0] = n
    ha[0] = ha[n]
    hb[0] = hb[n]
    i = 0
    rounds_left = np.int64(HEAP_LEVELS)  # i + 1 at least doubles per level and stays <= n < 2**63: at most 63
    while True:
        if rounds_left == 0:
            raise RuntimeError(_HEAP_POP_LIMIT)
        rounds_left -= 1
        left = 2 * i + 1
        if left >= n:
            break
        best = left
        if left + 1 < n and heap_less(ha, hb, left + 1, left):
            best = left + 1
        if heap_less(ha, hb, best, i):
            ha[i], ha[best] = ha[best], ha[i]
            hb[i], hb[best] = hb[best], hb[i]
            i = best
        else:
            break


@njit(cache=True)
def grow_columns(array, needed):
    """``array`` itself if it has ``needed`` columns, else a copy with at least twice as many."""
    if array.shape[1] >= needed:
        return array
    wider = np.zeros((array.shape[0], max(needed, 2 * array.shape[1])), dtype=np.int64)
    wider[:, : array.shape[1]] = array
    return wider


@njit(cache=True)
def set_aside(aside, n_aside, a, b):
    """``aside`` (the pairs of two rows put aside from a heap) with (a, b) in column ``n_aside``, enlarged first
    (:func:`grow_columns`) if it is full."""
    aside = grow_columns(aside, n_aside + 1)
    aside[0, n_aside] = a
    aside[1, n_aside] = b
    return aside
