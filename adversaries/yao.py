"""``yao``: uniform random requests over k+1 leaves, the randomized lower bound H_k (docs/claims.md §C6)."""

from __future__ import annotations

import numpy as np

from adversaries._shared import Star, slack_from
from kvtheory.errors import require
from kvtheory.model.workload import Workload
from kvtheory.workloads.registry import register


@register("yao", kind="adversary")
def yao(*, seed: int = 0, k: int = 4, L: int = 4, n: int = 1000, B: int = 0) -> Workload:
    """Uniform random requests over k+1 one-token leaves under a shared prefix (randomized bound H_k).

    A star (shared prefix of L - 1 tokens, k + 1 one-token leaves); each of the n requests picks a leaf
    uniformly and independently (``default_rng(seed)``; the token labels come from the same seed). Serve
    it with B = k + L - 1 (or pass B: k = B - L + 1): paging with k + 1 pages and k frames.

    Claim realised (claim 6, Yao's principle): the request is independent of the cache, which holds k
    of the k + 1 leaves once warm, so every online policy, randomized or not, misses with probability
    1 / (k + 1) per request: E[ALG] = n / (k + 1) + O(k + L). Belady faults when the page it evicted
    comes back, which is after every other of the k cached pages has been requested again: a coupon
    collector over k pages at rate 1 / (k + 1) each, (k + 1) * H_k requests on average. So
    E[ALG] / E[OPT] -> H_k for every online policy: no randomized policy beats H_k, and RLT's
    2 * H_k bound (claim 5) is within a factor 2 of optimal.

    At finite n both costs carry the same compulsory misses D = (L - 1) + (k + 1) (every distinct token
    node misses once), which pull ALG / OPT below H_k until n >> (k + 1)^2 * H_k; the steady-state ratio
    (ALG - D) / (OPT - D) (:func:`adversaries._shared.steady_ratio`) converges to H_k much sooner.

    >>> w = yao(k=3, L=2, n=50, seed=1)
    >>> len(w), w.max_length, w.trie.distinct_tokens <= 1 + 4
    (50, 2, True)
    """
    k = slack_from(k, L, B)
    require(n >= 1, f"n={n} must be >= 1")
    star = Star.build(seed, L - 1, k + 1)
    order = np.random.default_rng([seed, 1]).integers(0, k + 1, size=n)
    return star.workload(order)
