"""``imbalanced``: whole-node L-LRU is only linearly competitive in B at fixed k (docs/claims.md §C4)."""

from __future__ import annotations

import numpy as np

from adversaries._shared import distinct_tokens, sequence_workload
from kvtheory.errors import require
from kvtheory.model.workload import Workload
from kvtheory.workloads.registry import register


@register("imbalanced", kind="adversary")
def imbalanced(*, seed: int = 0, B: int = 64, k: int = 2, n: int = 1000) -> Workload:
    """One long query of B-k+1 tokens interleaved with k one-token queries (L-LRU ratio linear in B).

    The instance: a long query Q of L_max = B - k + 1 tokens (B - 1 at the default k = 2) and k short
    one-token queries s_1..s_k, all with distinct first tokens (no sharing); the sequence repeats the
    cycle Q, s_1, ..., s_k (n queries in all, k + 1 per cycle). Serve it with budget B: then the slack
    (docs/model.md §The slack k) is B - L_max + 1 = k, and next to Q the cache has room for only k - 1 shorts.

    Claim realised (claim 4, the paper's O(n) lower bound for leaf-LRU): when s_k arrives, the least
    recently used leaf is the whole node Q, so L-LRU throws away all B - k + 1 of its tokens to make room
    for one token, and Q misses in full on its next request; each cycle then costs L-LRU
    (B - k + 1) + k = B + 1 misses. An algorithm that evicts one token at a time sees k + 1 one-token
    "pages" (the shorts and Q's last token) competing for k frames, and the optimum misses about
    (k + 1) / k tokens per cycle (Belady on k + 1 pages, k frames). Hence
    L-LRU / OPT ~ (B + 1) * k / (k + 1): linear in B at fixed k, while token-LRU's ratio stays near
    k (LRU on that paging instance, a miss per request) and RLT's near its marking bound, neither
    depending on B.

    ``seed`` only relabels the token ids.

    >>> w = imbalanced(B=10, k=2, n=6)
    >>> [q.length for q in w], w.max_length
    ([9, 1, 1, 9, 1, 1], 9)
    """
    require(k >= 2, f"k={k} must be >= 2 (with k = 1 the long query fills the cache and every policy is optimal)")
    require(B - k + 1 >= 2, f"B={B} must be >= k + 1 = {k + 1} so that the long query is longer than a short one")
    require(n >= 1, f"n={n} must be >= 1")
    long_len = B - k + 1
    ids = distinct_tokens(seed, long_len + k)
    queries = [ids[:long_len]] + [ids[long_len + i : long_len + i + 1] for i in range(k)]
    for q in queries:
        q.setflags(write=False)
    return sequence_workload(queries, np.arange(n) % (k + 1))
