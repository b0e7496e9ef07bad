"""lbgr-full's prediction and RLS step (:mod:`kvtheory.cluster.routers.rls`) compiled by numba, the same
source on arrays: ``weights`` (M x 5) and ``covariance`` (M x 25, each P_i row by row). Compiled without
fast-math, so every product and sum is rounded on its own, in the source's order (LLVM neither fuses a
multiply and an add nor reassociates): the same bits as the plain Python functions."""

from __future__ import annotations

from kvtheory.cluster.routers import rls
from kvtheory.jit import njit

predict = njit(cache=True)(rls.predict)
rls_update = njit(cache=True)(rls.rls_update)
