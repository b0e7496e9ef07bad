"""``adaptive``: the adaptive adversary that forces ratio -> k on any deterministic policy (claim 2)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from adversaries._shared import Star, slack_from
from kvtheory.errors import require
from kvtheory.model.trie import PrefixTrie
from kvtheory.model.workload import Workload
from kvtheory.policies import EvictionPolicy, policy_class
from kvtheory.workloads.registry import register

PolicyFactory = type[EvictionPolicy] | Callable[[PrefixTrie, int], EvictionPolicy]


def _construct(factory: PolicyFactory, trie: PrefixTrie, budget: int, policy_seed: int | None) -> EvictionPolicy:
    if inspect.isclass(factory):
        return factory.create(trie, budget, seed=policy_seed)
    return factory(trie, budget)


def adaptive_sequence(
    policy_factory: PolicyFactory,
    *,
    k: int = 4,
    L: int = 4,
    n: int = 1000,
    B: int = 0,
    seed: int = 0,
    policy_seed: int | None = 0,
) -> Workload:
    """Build, online, the sequence on which ``policy_factory``'s policy misses every request.

    ``policy_factory`` is any :class:`EvictionPolicy` subclass (one of kvtheory's or a user's own),
    constructed as ``cls.create(trie, B, seed=policy_seed)`` (its fastest exact implementation), or any
    callable ``f(trie, B) -> EvictionPolicy``.
    The trie is built up front over the k + 1 candidate queries of a star (shared prefix of L - 1
    tokens, k + 1 one-token leaves; B = k + L - 1, or k = B - L + 1 when B is given). At each step the
    adversary asks the policy object which candidates it holds (``cached_prefix(j) == L``), requests
    the lowest-numbered one it does not hold, and serves it to the policy; n steps in all.

    Why a non-held leaf always exists: the cache holds the prefix and at most B - (L - 1) = k leaves, of
    k + 1. So the policy misses every request (the first L - 1 prefix tokens once, then one token per
    request): ALG = (L - 1) + n. Any sequence over k + 1 leaves costs the optimum at most
    (L - 1) + (k + 1) + floor((n - k - 1) / k) (Belady faults at most once per k requests after the
    first k + 1), hence ALG / OPT >= k * (1 - O(k (k + L) / n)) -> k (claim 2). The returned workload
    replays the policy's run exactly when served by the same deterministic policy (for a randomized
    policy: with the same ``policy_seed``, i.e. an adversary that knows the seed).

    >>> from kvtheory.policies import LeafLRU
    >>> w = adaptive_sequence(LeafLRU, k=2, L=3, n=7)
    >>> [int(q.tokens[-1]) == int(w[i % 3].tokens[-1]) for i, q in enumerate(w)]  # LRU gets the cycle
    [True, True, True, True, True, True, True]
    """
    k = slack_from(k, L, B)
    require(n >= 1, f"n={n} must be >= 1")
    budget = k + L - 1
    star = Star.build(seed, L - 1, k + 1)
    trie = PrefixTrie(list(star.queries))
    policy = _construct(policy_factory, trie, budget, policy_seed)
    order = []
    for _ in range(n):
        j = next((j for j in range(k + 1) if policy.cached_prefix(j) < L), None)
        if j is None:
            raise RuntimeError(
                f"{type(policy).__name__} holds all {k + 1} leaves in a budget of {budget} tokens: "
                "it breaks the cache model (capacity or prefix closure)"
            )
        policy.serve([j])
        order.append(j)
    return star.workload(order)


@register("adaptive", kind="adversary")
def adaptive(
    *, seed: int = 0, policy: str = "lru", k: int = 4, L: int = 4, n: int = 1000, B: int = 0, policy_seed: int = 0
) -> Workload:
    """Always request a leaf the given online policy does not hold (deterministic bound k, any policy).

    ``policy`` names a registered online policy (``kvtheory evict --policy`` names); the sequence is
    built online against it by :func:`adaptive_sequence` on a star of a shared prefix of L - 1 tokens
    and k + 1 one-token leaves, to be served with B = k + L - 1 (or pass B: k = B - L + 1). That policy
    misses every request, ALG = (L - 1) + n, while OPT <= (L - 1) + (k + 1) + floor((n - k - 1) / k),
    so ALG / OPT -> k as n grows (claim 2). For a randomized policy the adversary simulates it with
    ``policy_seed``: the bound k then holds for that seed only (an adaptive adversary that knows the
    seed), which is exactly why randomization helps against oblivious adversaries (``yao``).
    """
    return adaptive_sequence(policy_class(policy), k=k, L=L, n=n, B=B, seed=seed, policy_seed=policy_seed)
