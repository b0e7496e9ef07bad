"""Instance families the checker needs beyond ``adversaries/`` (built here, not registered as generators).

* :func:`long_then_short`: one query of B tokens (so L_max = B and k = B - L_max + 1 = 1), then
  one-token queries over B + 1 pages, cyclic or uniform. After the first query the instance is classic
  paging with B frames, where LRU-like rules pay about B per optimum miss (cyclic) and every online rule
  about H_B (uniform, claim 6): far above bounds written with k = 1.
* :func:`random_killer`: a star with k + 1 leaves; each phase requests the page absent from the
  optimum's cache, then cycles many times over the k pages of that cache, never the victim the optimum
  just evicted. Non-marking random eviction keeps evicting the cycle's own pages (about k misses a
  phase, a geometric wait for the victim); a marking rule evicts only unmarked pages (about H_k); the
  optimum pays 1.
* :func:`multiplicity_tie`: three batches of three queries where, among tokens next requested in the same batch,
  the deeper one is shared by fewer of its queries: evicting by depth alone (FIF's batch-1 rule, blind-oracle
  with true predictions) pays 17 where the optimum pays 16 (docs/optima.md §Batch size >= 2: FIF is not optimal).
* :func:`multiplicity_tie_paging`: the same on paging, batches of two one-token queries at B = 3: among the two
  cached pages, the one needed sooner by one query and the one needed later by two; evicting the later one (FIF's
  rule, blind-oracle with true predictions) pays 6 where the optimum pays 5.
* :func:`graham_tight`: M(M-1) one-token queries, then one of M tokens (a_cached = a_miss = 1): greedy
  list scheduling ends at 2M - 1 against the optimum M, Graham's bound 2 - 1/M exactly.
* :func:`hot_prefix`: n queries sharing one prefix of P tokens, distinct suffixes (claim 9, affinity).
* :func:`prefix_groups`: M groups with distinct prefixes; each round sends M copies of group 0, then M of
  group 1, ... so load-only routing spreads every group over every worker (claim 9, load only).
"""

from __future__ import annotations

import numpy as np

from kvtheory.model.query import Query
from kvtheory.model.workload import Workload
from proofs_check.instance import Instance


def _star_queries(prefix_len: int, leaves: int, base: int = 1000) -> list[list[int]]:
    prefix = list(range(base, base + prefix_len))
    return [prefix + [i] for i in range(leaves)]


def long_then_short(*, B: int = 8, n: int = 400, order: str = "cyclic", seed: int = 0) -> Instance:
    long = list(range(10_000, 10_000 + B))
    if order == "cyclic":
        pages = np.arange(n) % (B + 1)
    else:
        pages = np.random.default_rng([seed, 7]).integers(0, B + 1, size=n)
    workload = Workload.from_token_lists([long] + [[int(p)] for p in pages])
    return Instance(workload, B, origin=f"long-then-short B={B} n={n} order={order} seed={seed}", meta={"n": n})


def long_then_short_batched(
    *, B: int = 16, beta: int = 2, n: int = 600, order: str = "cyclic", seed: int = 0, long_len: int = 0
) -> Instance:
    """The batched form: a first query of B // beta tokens (so k = B - beta*L_max + 1 is 1 when beta divides
    B), then batches of beta distinct one-token queries over B + 1 pages. ``long_len`` overrides the first
    query's length: B - beta + 1 makes the first batch's footprint exactly B (k_F = 1) and beta*L_max > B."""
    long_len = long_len or B // beta
    long = list(range(10_000, 10_000 + long_len))
    rng = np.random.default_rng([seed, 7])
    pages: list[int] = []
    position = 0
    while len(pages) < n:
        if order == "cyclic":
            group = [(position + i) % (B + 1) for i in range(beta)]
            position += beta
        else:
            group = [int(x) for x in rng.choice(B + 1, size=beta, replace=False)]
        pages += group
    pages = pages[: n - n % beta] if n >= beta else pages[:beta]
    tokens = [long] + [[p] for p in pages[: beta - 1]] + [[p] for p in pages[beta - 1 :]]
    workload = Workload.from_token_lists(tokens)
    extra = f" long={long_len}" if long_len != B // beta else ""
    return Instance(
        workload,
        B,
        beta,
        origin=f"long-then-short B={B} beta={beta}{extra} n={n} order={order} seed={seed}",
        meta={"n": len(tokens)},
    )


def random_killer(*, k: int = 8, L: int = 2, phases: int = 12, passes: int = 0) -> Instance:
    """Star of a shared prefix of L - 1 tokens and k + 1 leaves; B = k + L - 1."""
    passes = passes or 3 * k
    queries = _star_queries(L - 1, k + 1)
    order: list[int] = list(range(k))  # fill the cache with leaves 0..k-1
    cache = set(range(k))
    missing = k
    for phase in range(phases):
        victim = sorted(cache)[phase % k]
        cache = (cache - {victim}) | {missing}
        block = sorted(cache)
        order.append(missing)
        order += block * passes
        missing = victim
    workload = Workload.from_token_lists([queries[i] for i in order])
    return Instance(workload, k + L - 1, origin=f"random-killer k={k} L={L} phases={phases}", meta={"n": len(order)})


def multiplicity_tie() -> Instance:
    shared = [[1, 2, 3, 4], [1, 2, 3, 5], [6, 7]]
    workload = Workload.from_token_lists([*shared, [9], [10], [11], *shared])
    return Instance(workload, 7, 3, origin="multiplicity-tie B=7 beta=3")


def multiplicity_tie_paging() -> Instance:
    workload = Workload.from_token_lists([[0], [1], [2], [3], [0], [2], [1], [1]])
    return Instance(workload, 3, 2, origin="multiplicity-tie paging B=3 beta=2")


def graham_tight(*, M: int = 3) -> Instance:
    queries = [Query.of([100 + j], output_len=0) for j in range(M * (M - 1))]
    queries.append(Query.of(list(range(10_000, 10_000 + M)), output_len=0))
    return Instance(Workload(tuple(queries)), M, workers=M, a_cached=1, a_miss=1, origin=f"graham-tight M={M}")


def hot_prefix(*, M: int = 3, P: int = 16, suffix: int = 2, n: int = 96, a_miss: int = 4) -> Instance:
    prefix = list(range(10_000, 10_000 + P))
    tokens = [prefix + [j * suffix + t for t in range(suffix)] for j in range(n)]
    workload = Workload(tuple(Query.of(t, output_len=0) for t in tokens))
    return Instance(
        workload,
        P + suffix,
        workers=M,
        a_cached=1,
        a_miss=a_miss,
        origin=f"hot-prefix M={M} P={P} suffix={suffix} n={n} a_miss={a_miss}",
        meta={"n": n, "reference": tuple(j % M for j in range(n))},
    )


def prefix_groups(*, M: int = 2, P: int = 32, rounds: int = 8, a_miss: int = 4) -> Instance:
    tokens, groups = [], []
    serial = 0
    for _ in range(rounds):
        for g in range(M):
            for _ in range(M):
                tokens.append(list(range(100_000 * (g + 1), 100_000 * (g + 1) + P)) + [serial])
                groups.append(g)
                serial += 1
    workload = Workload(tuple(Query.of(t, output_len=0) for t in tokens))
    return Instance(
        workload,
        P + 1,
        workers=M,
        a_cached=1,
        a_miss=a_miss,
        origin=f"prefix-groups M={M} P={P} rounds={rounds} a_miss={a_miss}",
        meta={"n": len(tokens), "reference": tuple(groups)},
    )


def registered(name: str, params: dict, *, budget: int, batch: int = 1, seed: int = 0) -> Instance:
    """An instance of a family of ``kvtheory.workloads`` / ``adversaries`` (``kvtheory generate NAME``)."""
    from kvtheory.workloads import generate

    workload = generate(name, params, seed=seed)
    text = " ".join(f"{key}={value}" for key, value in params.items())
    return Instance(
        workload,
        budget,
        batch,
        origin=f"{name} {text} seed={seed}".replace("  ", " "),
        meta={"n": len(workload), "family": name, "params": dict(params), "seed": seed},
    )
