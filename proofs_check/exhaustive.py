"""The single-worker optimum by exhaustive search over cache states (tiny instances only).

Independent of FIF and of the MIP: token nodes are numbered, a cache state is a bitmask, and every
batch is served against every reachable state: hits are counted against the state before the batch,
the batch's nodes are added, and when they do not fit every way to evict exactly the overflow is tried
(an evicted set must be closed under cached descendants, so it can go leaf by leaf, and must avoid the
batch's nodes: docs/model.md §Eviction, demand paging). Exponential: meant for a few dozen token nodes.
"""

from __future__ import annotations

from itertools import combinations

from kvtheory.model.batches import batches, validate
from kvtheory.model.workload import Workload

#: refuse instances whose state space could explode
MAX_TOKEN_NODES = 40


def token_nodes(workload: Workload) -> tuple[list[int], list[int]]:
    """(node bitmask of each query, parent of each token node or -1) over the workload's distinct prefixes."""
    ids: dict[tuple, int] = {}
    parent: list[int] = []
    masks: list[int] = []
    for query in workload:
        tokens = tuple(int(t) for t in query.tokens)
        mask = 0
        up = -1
        for depth in range(1, len(tokens) + 1):
            key = tokens[:depth]
            node = ids.get(key)
            if node is None:
                node = ids[key] = len(parent)
                parent.append(up)
            mask |= 1 << node
            up = node
        masks.append(mask)
    return masks, parent


def exhaustive_optimum(workload: Workload, budget: int, batch: int = 1) -> int:
    """Minimum total misses over all demand-paging eviction schedules."""
    validate(workload, budget, batch)
    masks, parent = token_nodes(workload)
    if len(parent) > MAX_TOKEN_NODES:
        raise ValueError(f"{len(parent)} token nodes: too many for exhaustive search (max {MAX_TOKEN_NODES})")
    children_mask = [0] * len(parent)
    for v, p in enumerate(parent):
        if p >= 0:
            children_mask[p] |= 1 << v
    lengths = [q.length for q in workload]
    states = {0: 0}
    for group in batches(len(workload), batch):
        need = 0
        for j in group:
            need |= masks[j]
        successors: dict[int, int] = {}
        for state, cost in states.items():
            misses = sum(lengths[j] - (masks[j] & state).bit_count() for j in group)
            total = state | need
            overflow = total.bit_count() - budget
            if overflow <= 0:
                options = [total]
            else:
                movable = [v for v in range(len(parent)) if (state >> v) & 1 and not (need >> v) & 1]
                options = []
                for drop in combinations(movable, overflow):
                    dropped = 0
                    for v in drop:
                        dropped |= 1 << v
                    kept = total & ~dropped
                    if all(not (children_mask[v] & kept) for v in drop):
                        options.append(kept)
            for nxt in options:
                value = cost + misses
                if successors.get(nxt, value + 1) > value:
                    successors[nxt] = value
        states = successors
    return min(states.values())
