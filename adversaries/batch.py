"""``batch``: batched requests that meet, or break on purpose, the assumptions of claim 7 (docs/claims.md §C7)."""

from __future__ import annotations

import math

import numpy as np

from adversaries._shared import Star
from kvtheory.errors import require
from kvtheory.model.workload import Workload
from kvtheory.workloads.registry import register

ORDERS = ("random", "cyclic")


@register("batch", kind="adversary")
def batch(
    *,
    seed: int = 0,
    B: int = 64,
    beta: int = 4,
    L: int = 8,
    leaf_len: int = 1,
    leaves: int = 0,
    n: int = 1000,
    repeat: int = 0,
    load: float = 0.0,
    order: str = "random",
) -> Workload:
    """Batches of beta queries over a shared prefix, with switches that break claim 7's assumptions.

    The instance is a star: a shared prefix of P = L - leaf_len tokens and ``leaves`` leaves of
    ``leaf_len`` tokens (query i = prefix + leaf i, |q| = L = L_max). The workload is ceil(n / beta)
    batches of beta consecutive queries, to be served with ``--batch beta`` and budget B: the slack is
    k = B - beta * L + 1. ``leaves=0`` means one more leaf than fit next to the prefix,
    floor((B - P) / leaf_len) + 1, so the cache is always under pressure.

    Each batch holds d = beta - repeat distinct leaves, drawn uniformly without replacement
    (``order="random"``, from ``default_rng(seed)``) or taken as the next d leaves of a fixed cycle
    (``order="cyclic"``, the sequence that defeats LRU-like rules), followed by ``repeat`` copies of
    uniformly chosen members of the same batch.

    Claim 7 (the paper's Theorem 5): with beta *distinct* queries per batch and beta * L_max <= B,
    batched RLT satisfies E[RLT] <= 2 * H_k * OPT + c with k = B - beta * L_max + 1. The switches break
    each assumption on purpose:

    - ``repeat > 0``: repeated queries inside a batch (each copy pays its misses against the pre-batch
      cache, docs/model.md §Batches), so a batch's cost counts a missed leaf several times.
    - ``load > 0``: choose L = floor(load * B / beta) so that beta * L_max is about load * B; ``load``
      close to 1 makes k small, ``load > 1`` makes beta * L_max > B (k <= 0, the bound is vacuous),
      yet the input stays valid because the batch's queries share the prefix: the footprint
      P + d * leaf_len must fit in B, which is checked here.

    What the ratio does when an assumption fails is a measured answer, not a theorem (see the sweep
    example ``examples/sweeps/ratios.toml``, whose claim-7 grid breaks each assumption, and docs/claims.md §C7).

    >>> w = batch(B=20, beta=2, L=4, n=6, seed=3)
    >>> len(w), w.max_length, [bool((w[i].tokens != w[i + 1].tokens).any()) for i in (0, 2, 4)]
    (6, 4, [True, True, True])
    """
    require(beta >= 1, f"beta={beta} must be >= 1")
    require(0 <= repeat < beta, f"repeat={repeat} must lie in [0, beta - 1] = [0, {beta - 1}]")
    require(leaf_len >= 1, f"leaf_len={leaf_len} must be >= 1")
    require(n >= 1, f"n={n} must be >= 1")
    require(order in ORDERS, f"order={order!r} is not one of {', '.join(ORDERS)}")
    require(load >= 0 and math.isfinite(load), f"load={load} must be a finite number >= 0 (0: use L)")
    if load > 0:
        L = int(load * B // beta)
    prefix_len = L - leaf_len
    require(prefix_len >= 1, f"L={L} must exceed leaf_len={leaf_len} (a shared prefix of at least one token)")
    require(L <= B, f"L={L} exceeds the budget B={B} (raise B or lower load)")
    distinct = beta - repeat
    need = prefix_len + distinct * leaf_len
    require(need <= B, f"a batch needs {need} token nodes resident at once, more than B={B}")
    if leaves <= 0:
        leaves = (B - prefix_len) // leaf_len + 1
    require(leaves >= distinct, f"leaves={leaves} must be >= the {distinct} distinct queries of a batch")
    star = Star.build(seed, prefix_len, leaves, leaf_len)
    rng = np.random.default_rng([seed, 1])
    batches = -(-n // beta)
    picks = np.empty((batches, beta), dtype=np.int64)
    for b in range(batches):
        if order == "random":
            chosen = rng.choice(leaves, size=distinct, replace=False)
        else:
            chosen = (np.arange(distinct) + b * distinct) % leaves
        picks[b, :distinct] = chosen
        if repeat:
            picks[b, distinct:] = chosen[rng.integers(0, distinct, size=repeat)]
    return star.workload(picks.ravel())
