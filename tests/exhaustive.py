"""An exhaustive optimum for tiny instances, written straight from docs/model.md (token nodes as tuples).

After each batch the cache may be any prefix-closed set of at most B token nodes that contains the
batch's nodes and is drawn from what was cached plus the batch's nodes (no prefetch). Dynamic
programming over (step, cache) tries every such set; evicting more than needed never helps, so this is
the optimum of the demand-paging model too.
"""

from __future__ import annotations

import functools
import itertools


def _nodes(query) -> list[tuple]:
    return [tuple(query[:i]) for i in range(1, len(query) + 1)]


def exhaustive_misses(queries: list[list[int]], budget: int, batch: int = 1) -> int:
    steps = [queries[i : i + batch] for i in range(0, len(queries), batch)]

    @functools.cache
    def best(t: int, cache: frozenset) -> int:
        if t == len(steps):
            return 0
        cost, union = 0, set()
        for query in steps[t]:
            nodes = _nodes(query)
            cost += sum(node not in cache for node in nodes)
            union.update(nodes)
        optional = [node for node in cache if node not in union]
        result = None
        for r in range(min(len(optional), budget - len(union)) + 1):
            for keep in itertools.combinations(optional, r):
                state = union.union(keep)
                if all(len(node) == 1 or node[:-1] in state for node in state):
                    value = best(t + 1, frozenset(state))
                    result = value if result is None else min(result, value)
        return cost + result

    return best(0, frozenset())
