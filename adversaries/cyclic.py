"""``cyclic``: the classic paging lower bound k, lifted to prefix trees (docs/claims.md §C2)."""

from __future__ import annotations

from adversaries._shared import Star, slack_from
from kvtheory.errors import require
from kvtheory.model.workload import Workload
from kvtheory.workloads.registry import register


@register("cyclic", kind="adversary")
def cyclic(*, seed: int = 0, k: int = 4, L: int = 4, n: int = 1000, B: int = 0) -> Workload:
    """Shared prefix of L-1 tokens, k+1 one-token leaves requested in a cycle (deterministic bound k).

    Query i (i = 0..k) is the shared prefix p (L - 1 tokens) followed by leaf token x_i; the sequence
    requests leaves 0, 1, ..., k, 0, 1, ... (n queries in all). Serve it with B = k + L - 1 (or pass B:
    then k = B - L + 1), so that the slack (docs/model.md §The slack k) is k: the cache holds p and k of the k + 1
    leaves, and the instance is paging with k + 1 pages and k frames.

    Claim realised (claim 2, Sleator-Tarjan lifted to trees): every request goes to the leaf that was
    requested longest ago, which L-LRU, token-LRU and FIFO-leaf (and any LRU-like rule) have just
    evicted, so they miss every request: ALG = (L - 1) + n. The optimum (Belady/FIF) misses the first
    k + 1 leaves and then once every k requests: OPT = (L - 1) + (k + 1) + floor((n - k - 1) / k), hence
    ALG / OPT = k * (1 - O(k (k + L) / n)) -> k as n grows. (The ``adaptive`` family realises the same
    bound against any deterministic policy; against LRU it produces exactly this sequence.)

    ``seed`` only relabels the token ids (the instance's structure does not depend on it).

    >>> w = cyclic(k=2, L=3, n=6)
    >>> [q.length for q in w], w.trie.distinct_tokens
    ([3, 3, 3, 3, 3, 3], 5)
    """
    k = slack_from(k, L, B)
    require(n >= 1, f"n={n} must be >= 1")
    star = Star.build(seed, L - 1, k + 1)
    return star.workload([i % (k + 1) for i in range(n)])
