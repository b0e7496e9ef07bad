"""lbgr-full's arithmetic (docs/cluster.md §lbgr-full) in one fixed order: the prediction w_i . x and the
recursive-least-squares step of one worker's five weights, on x = (miss, hit, out, load, 1).

Every product and every sum is rounded on its own (IEEE 754 double, round to nearest; no fused
multiply-add, no BLAS), and every sum runs left to right in the index order of x:

    w . x   = (((miss w_0 + hit w_1) + out w_2) + load w_3) + w_4
    (P x)_r = (((P_r0 miss + P_r1 hit) + P_r2 out) + P_r3 load) + P_r4
    x . p   = (((miss p_0 + hit p_1) + out p_2) + load p_3) + p_4
    tr(P)   = (((P_00 + P_11) + P_22) + P_33) + P_44

(the fifth term is a product with 1, exact). So the routes are the same on every machine, whichever BLAS
kernel numpy would pick. The functions run as plain Python on lists (``weights[i]`` five floats,
``covariance[i]`` the 25 entries of P_i row by row) and, unchanged, compiled by numba on arrays
(:mod:`kvtheory.cluster.routers.compiled.rls`, without fast-math, so that LLVM neither fuses nor
reorders); tests/cluster/test_lbgr_fast_path.py checks that both round alike.
"""

from __future__ import annotations

import math


def predict(weights, i, miss, hit, out, load):
    """w_i . (miss, hit, out, load, 1), summed left to right."""
    w = weights[i]
    return (((miss * w[0] + hit * w[1]) + out * w[2]) + load * w[3]) + w[4]


def rls_update(weights, covariance, i, miss, hit, out, load, error, lam, cap):
    """One RLS step of worker i on x = (miss, hit, out, load, 1) and the error e = latency - w_i . x:

        p = P x,  d = lam + x . p,  g = p / d,  w <- w + g e,  P <- (P - g p^T) / lam,
        w_k <- max(w_k, 0) for the four coefficients,  P <- P * (cap / tr(P)) when tr(P) > cap,

    each entry rounded element by element in that order; skipped (False) when d is not finite and positive
    or e is not finite. ``weights[i]`` and ``covariance[i]`` are updated in place."""
    w = weights[i]
    P = covariance[i]
    p = [(((P[r] * miss + P[r + 1] * hit) + P[r + 2] * out) + P[r + 3] * load) + P[r + 4] for r in range(0, 25, 5)]
    denominator = lam + ((((miss * p[0] + hit * p[1]) + out * p[2]) + load * p[3]) + p[4])
    if not math.isfinite(denominator) or denominator <= 0 or not math.isfinite(error):
        return False
    for r in range(5):
        gain = p[r] / denominator
        w[r] = w[r] + gain * error
        for c in range(5):
            P[5 * r + c] = (P[5 * r + c] - gain * p[c]) / lam
    for k in range(4):
        if w[k] < 0.0:  # max(w_k, 0); a NaN stays
            w[k] = 0.0
    trace = (((P[0] + P[6]) + P[12]) + P[18]) + P[24]
    if trace > cap:
        scale = cap / trace
        for k in range(25):
            P[k] = P[k] * scale
    return True
