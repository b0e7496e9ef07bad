"""lbgr-full's arithmetic compiled (numba): the prediction w_i . x_ij and the recursive-least-squares update
of one worker's five weights, rounded exactly as the numpy expressions of
:class:`~kvtheory.cluster.routers.lbgr_calibrated.LBGRCalibrated` are, so both give the same routes.

numpy computes ``w @ x`` (five float64) with BLAS ddot and ``P @ x`` (5 x 5, C order) with BLAS dgemv. The
OpenBLAS numpy ships (0.3.31; measured with the SkylakeX kernels it picks on an AVX-512 AMD EPYC) rounds
them as follows, with fma(a, b, c) = a * b + c rounded once (IEEE 754 fusedMultiplyAdd):

    ddot:  s = 0; s = fma(x_k, y_k, s) for k = 0 .. 4
    dgemv: (P x)_r = fma(P_r4, x_4, (P_r0 x_0 + P_r2 x_2) + (P_r1 x_1 + P_r3 x_3))

(every other product and sum rounded). Element-wise numpy operations round each operation once, as here.
These orders were found by comparing numpy's results with candidate orders on random inputs (a plain
left-to-right sum differs in about a quarter of them). A BLAS that rounds otherwise would make numpy's
routes, and so the numpy path's, differ from these: tests/test_lbgr_fast_path.py compares the two, route
for route and bit for bit, wherever the tests run.
"""

from __future__ import annotations

import math

from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's llvm.fma: fused, or a correctly rounded libm call)."""
    signature = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, sig, args):
        return builder.fma(*args)

    return signature, codegen


@njit(cache=True)
def predict(weights, i, miss, hit, out, load):
    """w_i . (miss, hit, out, load, 1), rounded as BLAS ddot rounds ``weights[i] @ x``."""
    s = fma(miss, weights[i, 0], 0.0)
    s = fma(hit, weights[i, 1], s)
    s = fma(out, weights[i, 2], s)
    s = fma(load, weights[i, 3], s)
    return fma(1.0, weights[i, 4], s)


@njit(cache=True)
def rls_update(weights, covariance, i, miss, hit, out, load, latency, lam, cap):
    """One RLS step of worker i on feature x = (miss, hit, out, load, 1) and observed ``latency``:

        e = latency - w.x,  p = P x,  d = lam + x.p,  g = p / d,  w <- w + g e,  P <- (P - g p^T) / lam,
        w_k <- max(w_k, 0) for the four coefficients,  P <- P * cap / tr(P) when tr(P) > cap,

    skipped (False) when d is not finite and positive or e is not finite; tr(P) summed in index order.
    ``weights`` (M x 5) and ``covariance`` (M x 5 x 5) are updated in place."""
    x = (float(miss), float(hit), float(out), float(load), 1.0)
    w = weights[i]
    p_matrix = covariance[i]
    error = latency - predict(weights, i, x[0], x[1], x[2], x[3])
    p = [0.0] * 5
    for r in range(5):
        row = p_matrix[r]
        p[r] = fma(row[4], x[4], (row[0] * x[0] + row[2] * x[2]) + (row[1] * x[1] + row[3] * x[3]))
    xp = 0.0
    for k in range(5):
        xp = fma(x[k], p[k], xp)
    denominator = lam + xp
    if not math.isfinite(denominator) or denominator <= 0 or not math.isfinite(error):
        return False
    gain = [p[r] / denominator for r in range(5)]
    for r in range(5):
        w[r] = w[r] + gain[r] * error
    for r in range(5):
        for c in range(5):
            p_matrix[r, c] = (p_matrix[r, c] - gain[r] * p[c]) / lam
    for k in range(4):
        if w[k] < 0.0:  # np.maximum(w, 0): a NaN stays
            w[k] = 0.0
    trace = 0.0
    for k in range(5):
        trace += p_matrix[k, k]
    if trace > cap:
        scale = cap / trace
        for r in range(5):
            for c in range(5):
                p_matrix[r, c] = p_matrix[r, c] * scale
    return True
