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

Solving. :func:`min_cost_flow` hands the flow to HiGHS as a linear program (one column per arc, one row
per node) and then *proves* the answer in integers: it rounds HiGHS's flow and node potentials and checks
conservation, the arc bounds and complementary slackness exactly (an arc with negative reduced cost at
its upper bound, with positive reduced cost at its lower bound). Those conditions certify an optimal
flow whatever solver produced them. Should the check fail (it has not been seen to), networkx's
network simplex, exact in integers but far slower in Python, solves it instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.optimum.requests import edge_requests
from kvtheory.optimum.solver_runtime import stdout_silenced


def weighted_paging_bound(trie: PrefixTrie, steps: Sequence[Sequence[int]], budget: int, total_tokens: int) -> int:
    """A lower bound on the minimum total misses of serving ``steps`` (batches of trie sequence indices).

    >>> from kvtheory.model.workload import Workload
    >>> w = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    >>> weighted_paging_bound(w.trie, [[j] for j in range(6)], 2, w.total_tokens)   # Belady's 4
    4
    """
    n_steps = len(steps)
    footprint = np.zeros(n_steps, dtype=np.int64)
    consecutive = 0
    gap_tail, gap_head, gap_capacity, gap_cost = [], [], [], []
    for v, points in edge_requests(trie, steps).items():
        length = trie.edge_len[v]
        for t, _ in points:
            footprint[t] += length
        for (r, _), (r_next, m) in zip(points, points[1:]):
            if r_next == r + 1:
                consecutive += m * length
            else:
                gap_tail.append(r + 1)
                gap_head.append(r_next)
                gap_capacity.append(length)
                gap_cost.append(-m)
    line = np.arange(n_steps, dtype=np.int64)
    demand = np.zeros(n_steps + 1, dtype=np.int64)
    demand[0], demand[n_steps] = -budget, budget
    cost = min_cost_flow(
        demand,
        tail=np.concatenate([line, np.asarray(gap_tail, dtype=np.int64)]),
        head=np.concatenate([line + 1, np.asarray(gap_head, dtype=np.int64)]),
        lower=np.concatenate([footprint, np.zeros(len(gap_tail), dtype=np.int64)]),
        upper=np.concatenate([np.full(n_steps, budget, dtype=np.int64), np.asarray(gap_capacity, dtype=np.int64)]),
        cost=np.concatenate([np.zeros(n_steps, dtype=np.int64), np.asarray(gap_cost, dtype=np.int64)]),
    )
    return total_tokens - consecutive + cost


def min_cost_flow(demand, *, tail, head, lower, upper, cost) -> int:
    """The minimum of sum_a cost_a f_a over flows with lower_a <= f_a <= upper_a on arcs tail_a -> head_a
    and, at every node v, inflow - outflow = demand_v (integers; a feasible flow must exist).

    >>> min_cost_flow(np.array([-2, 0, 2]), tail=np.array([0, 1, 0]), head=np.array([1, 2, 2]),
    ...               lower=np.array([0, 0, 0]), upper=np.array([2, 2, 1]), cost=np.array([1, 1, 3]))
    4
    """
    if np.any(lower > upper):
        raise ValueError("an arc's lower bound exceeds its capacity: no feasible flow")
    flow = _highs_certified(demand, tail, head, lower, upper, cost)
    if flow is None:
        flow = _network_simplex(demand, tail, head, lower, upper, cost)
    return int(np.dot(cost, flow))


def _highs_certified(demand, tail, head, lower, upper, cost) -> np.ndarray | None:
    """HiGHS's optimal flow, if its rounding passes the exact optimality check; else None."""
    import highspy

    n_nodes, n_arcs = len(demand), len(tail)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_arcs, n_nodes
    lp.col_cost_ = cost.astype(float)
    lp.col_lower_, lp.col_upper_ = lower.astype(float), upper.astype(float)
    lp.row_lower_ = lp.row_upper_ = demand.astype(float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, 2 * n_arcs + 1, 2, dtype=np.int32)
    lp.a_matrix_.index_ = np.column_stack([tail, head]).ravel().astype(np.int32)
    lp.a_matrix_.value_ = np.tile([-1.0, 1.0], n_arcs)
    with stdout_silenced():
        highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.passModel(lp)
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    solution = highs.getSolution()
    flow = np.rint(np.asarray(solution.col_value)).astype(np.int64)
    potential = np.rint(np.asarray(solution.row_dual)).astype(np.int64)
    net_inflow = np.bincount(head, flow, minlength=n_nodes) - np.bincount(tail, flow, minlength=n_nodes)
    feasible = np.all(lower <= flow) and np.all(flow <= upper) and np.array_equal(net_inflow, demand)
    if not feasible:
        return None
    for sign in (1, -1):  # HiGHS's sign convention for row duals, either way round
        reduced = cost - sign * (potential[head] - potential[tail])
        if np.all((reduced >= 0) | (flow == upper)) and np.all((reduced <= 0) | (flow == lower)):
            return flow
    return None


def _network_simplex(demand, tail, head, lower, upper, cost) -> np.ndarray:
    """The same flow by networkx's network simplex (lower bounds moved into the node demands; one relay
    node per parallel arc, since a DiGraph holds one arc per pair of nodes)."""
    import networkx as nx

    graph = nx.DiGraph()
    shifted = demand.astype(np.int64).copy()
    np.add.at(shifted, tail, lower)
    np.subtract.at(shifted, head, lower)
    graph.add_nodes_from((v, {"demand": int(d)}) for v, d in enumerate(shifted))
    for a, (u, v) in enumerate(zip(tail.tolist(), head.tolist())):
        relay = ("arc", a)
        graph.add_edge(u, relay, capacity=int(upper[a] - lower[a]), weight=int(cost[a]))
        graph.add_edge(relay, v, capacity=int(upper[a] - lower[a]), weight=0)
    _, flows = nx.network_simplex(graph)
    return np.array([lower[a] + flows[u][("arc", a)] for a, u in enumerate(tail.tolist())], dtype=np.int64)
