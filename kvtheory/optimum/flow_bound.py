"""A lower bound on the batched optimum: the weighted-paging relaxation, solved as a min-cost flow.

Symbols (docs/optima.md): steps t = 0..S-1 serve batches Q_t, budget B, F_t = the footprint of Q_t
(its distinct token nodes, all resident at the end of step t), m_t(v) = the queries of Q_t containing
edge v. Between two consecutive requests r < r' of edge v nothing can refill v, so an optimal schedule
may keep on v, during the whole gap r+1..r'-1, the x tokens it still holds at r'-1 (the normal form of
:mod:`kvtheory.optimum.mip`); those x tokens save m_{r'}(v) misses each. When r' = r + 1 the edge is
resident at both steps and all of it hits. So, with T the total tokens,

    OPT = T - sum_{consecutive (r, r+1)} m_{r+1}(v) len(v) - max sum_gaps m_{r'}(v) x_g

where the maximum runs over x_g in [0, len(v)] with, at every step t, the gaps covering t holding at
most B - F_t tokens, and with prefix closure (a child kept only under a full parent). Dropping prefix
closure leaves interval packing with integer capacities: a min-cost flow on the line of steps. Flow B
enters node 0 and leaves node S; the arc t -> t+1 (step t) carries between F_t and B units, and gap g
of edge v is an arc from node r+1 to node r' of capacity len(v) and cost -m_{r'}(v), bypassing the
steps it covers. Every cut between t and t+1 carries exactly B units, so the gaps covering t hold at
most B - F_t. Its optimum is integral and at least the closure-constrained one, so
``T - consecutive - flow savings`` is a lower bound on the batched optimum, an integer.

At batch size 1 every m is 1 and FIF is exact anyway. At batch size >= 2 the bound often meets FIF's
misses, which proves FIF optimal on that instance; where it does not, the MIP decides.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from kvtheory.model.trie import PrefixTrie
from kvtheory.optimum.requests import edge_requests


def weighted_paging_bound(trie: PrefixTrie, steps: Sequence[Sequence[int]], budget: int, total_tokens: int) -> int:
    """A lower bound on the minimum total misses of serving ``steps`` (batches of trie sequence indices).

    >>> from kvtheory.model.workload import Workload
    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> weighted_paging_bound(w.trie, [[j] for j in range(6)], 2, w.total_tokens)   # Belady's 4
    4
    """
    requests = edge_requests(trie, steps)
    n_steps = len(steps)
    footprint = [0] * n_steps
    consecutive = 0
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n_steps + 1), demand=0)
    gaps: dict[tuple[int, int], dict[int, int]] = {}  # (from node, to node) -> {cost: capacity}
    for v, points in requests.items():
        length = trie.edge_len[v]
        for t, _ in points:
            footprint[t] += length
        for (r, _), (r_next, m) in zip(points, points[1:]):
            if r_next == r + 1:
                consecutive += m * length
            else:
                _add_gap(gaps, r + 1, r_next, length, -m)
    for t in range(n_steps):  # lower bound F_t on arc t -> t+1, moved into the node demands
        graph.add_edge(t, t + 1, capacity=budget - footprint[t], weight=0)
        graph.nodes[t]["demand"] += footprint[t]
        graph.nodes[t + 1]["demand"] -= footprint[t]
    graph.nodes[0]["demand"] -= budget
    graph.nodes[n_steps]["demand"] += budget
    for (start, stop), arcs in gaps.items():  # a DiGraph holds one arc per pair: one relay node per extra cost
        for cost, capacity in arcs.items():
            relay = ("gap", start, stop, cost)
            graph.add_edge(start, relay, capacity=capacity, weight=cost)
            graph.add_edge(relay, stop, capacity=capacity, weight=0)
    saving = -nx.network_simplex(graph)[0]
    return total_tokens - consecutive - saving


def _add_gap(gaps: dict, start: int, stop: int, capacity: int, cost: int) -> None:
    """Parallel gap arcs of equal cost add their capacities: the same flow problem with fewer arcs."""
    arcs = gaps.setdefault((start, stop), {})
    arcs[cost] = arcs.get(cost, 0) + capacity
