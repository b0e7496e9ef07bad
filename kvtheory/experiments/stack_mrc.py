"""One-pass miss-ratio curves at batch size 1: every budget's hits from one traversal (Mattson's stack
distances, lifted to the prefix tree), where the policy is provably a stack algorithm on the workload.

The lemma. Let a policy, at beta = 1, make room by evicting the cached token node (off the current path q_t)
that is least in a total order P_t on token nodes which (i) does not depend on B, (ii) changes from step to
step only on q_t's nodes, and (iii) ranks every node below its cached ancestors, so that the least cached node
off the path is a leaf (the model's leaf-only rule is then no constraint). Then the caches are nested,
C_t(B) subset of C_t(B + 1) with at most one node more, for every B >= L_max (induction on t: after adding q_t,
C_t(B) = q_t + the top B - |q_t| of C_{t-1}(B) - q_t under P_t, and one extra element moves an element's
rank down by at most one). So the hits of q_t at budget B are its nodes of stack distance <= B.

Token-LRU with P_t = (last access time, then the shallower token) meets (i)-(iii) -- a child's last access is no
later than its parent's, and at equal times the deeper token goes first -- on every workload where the
policy never splits a cached node off the current path: then its radix nodes' access times are exactly their
tokens' last-access times, and two leaves never share a time. That holds whenever every earlier query that
shares a token with q_t is a prefix of q_t (:func:`prefix_nested`): the flat traces, a single growing
conversation. Elsewhere the split refresh of docs/policies.md §L-LRU (the off-path tail of a node q_t diverges
inside counts as accessed at t) gives tokens times that depend on B's node boundaries, and inclusion fails:
on queries [0], [1, 2, 1, 0], [0, 2], [2], [0], [1, 0], [0, 2] the last one hits 2 tokens at B = 4 and 1 at
B = 5, 6, 7 (tests/experiments/test_stack_mrc.py).

L-LRU evicts whole radix nodes, more than the shortfall, and refreshes split tails too, so it is not a stack
algorithm on trees: on [0, 0, 0], [1], [0, 1], [1] the last query hits at B = 3 (the whole first node went for
[1]) and misses at B = 4 (the first node, split by [0, 1], keeps its refreshed tail and [1] goes). Where every
two queries are identical or share no token (:func:`identical_or_disjoint`), each query is one radix node,
never split, and L-LRU is LRU over variable-size objects, whose cache is the longest run of most recently used
objects that fits in B: a query hits all its L tokens exactly when the distinct tokens used since its last
use, its own included, number at most B.

FIF at beta = 1 meets (i)-(iii) with P_t = (next request, then the shallower token, then the smaller trie node
id: the tie rule of docs/model.md §The offline optimum, with its fixed order), on every workload: next(child) >=
next(parent), and nothing here depends on B. So OPT's curve is a stack curve (Mattson et al. 1970, lifted to
trees); tests/experiments/test_stack_mrc.py checks per-query hits growing with B by brute force. Its one pass
(a priority stack update per query, cut at the budgets) is implemented where every query is one token
(:func:`one_token_queries`: the trie is a root and its leaves), in :mod:`kvtheory.experiments.fif_stack`;
on other workloads ``miss_ratio_curve`` runs FIF per budget.

The traversal runs per radix edge (every token of an edge shares its last access time) with a Fenwick tree
over access times: the tokens accessed after time s number W(> s), so the j-th token of edge e_i of q_t,
last accessed at s_i, has stack distance W(> s_i) + (tokens above it on q_t last accessed at s_i) + j.
O(edge visits x (log T + budgets)).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.dispatch import long_enough
from kvtheory.policies.native import kernels

#: the policies with a one-pass method (:func:`one_pass_blocker` says on which workloads it is exact); "fif" and
#: "opt" name the optimum (kvtheory.experiments.mrc.OPT_NAMES)
ONE_PASS = ("lru", "token-lru", "fif", "opt")


def prefix_nested(trie: PrefixTrie) -> bool:
    """Whether every earlier query that shares a token with a query is a prefix of it. The earlier queries
    under one child of the root then form a chain: keep its deepest end, which each new query's end must
    have as an ancestor (or be)."""
    if identical_or_disjoint(trie):  # each query one edge off the root: nested at once (and quick to tell)
        return True
    deepest: dict[int, int] = {}  # child of the root -> the deepest end reached below it so far
    for j, end in enumerate(trie.end):
        top = trie.path(j)[0]
        low = deepest.get(top)
        if low is not None and not trie.is_ancestor(low, end):
            return False
        deepest[top] = end
    return True


def identical_or_disjoint(trie: PrefixTrie) -> bool:
    """Whether every two queries are identical or share no token: each query is one radix edge off the root."""
    # then no node lies deeper: nodes end queries or branch
    return bool((trie.column("parent")[trie.column("end")] == 0).all())


def one_token_queries(trie: PrefixTrie) -> bool:
    """Whether every query is a single token: each ends on a one-token edge off the root."""
    ends = trie.column("end")
    return bool((trie.column("parent")[ends] == 0).all() and (trie.column("edge_len")[ends] == 1).all())


def one_pass_blocker(policy: str, trie: PrefixTrie, batch: int, evict_amount: str) -> str | None:
    """None where the one pass is proven exact for ``policy`` on the workload of ``trie`` (the module's lemma),
    else why not, in words."""
    if policy not in ONE_PASS:
        return "it is not a stack algorithm (only lru, token-lru and fif/opt have a one-pass method)"
    if batch != 1:
        return "the one pass is exact at batch size 1 only"
    if policy in ("fif", "opt"):  # OPT evicts the shortfall whatever the online policies' eviction amount
        if not one_token_queries(trie):
            return "a query has more than one token (FIF's one pass takes one-token queries only)"
        return None
    if evict_amount != "shortfall":
        return "evicting the whole allocation is not a stack algorithm"
    if policy == "token-lru" and not prefix_nested(trie):
        return "a query leaves an earlier query's path (token-LRU's split refresh breaks inclusion on trees)"
    if policy == "lru" and not identical_or_disjoint(trie):
        return "two queries share a prefix without being identical (L-LRU evicts whole radix nodes)"
    return None


def stack_hits(trie: PrefixTrie, budgets: Sequence[int], *, whole_node: bool, compiled: bool | None = None):
    """Total hits at each budget (int64, in ``budgets``' order) of token-LRU (``whole_node`` False) or L-LRU on
    the workload of ``trie`` at beta = 1, by stack distances; exact only where the module's lemma applies.
    ``compiled``: the traversal compiled (:mod:`kvtheory.experiments.compiled_stack`, ahead of time when current:
    :func:`~kvtheory.policies.native.kernels`) or as Python, the same code; by default compiled from
    :data:`~kvtheory.policies.dispatch.CORE_MIN_QUERIES` queries on (below that, loading numba, where the
    extension is not current, costs more than it saves)."""
    ends, parent, length = trie.column("end"), trie.column("parent"), trie.column("edge_len")  # read only
    traverse = stack_traversal
    if long_enough(ends.size) if compiled is None else compiled:  # ahead of time when current, else numba
        traverse = kernels("kvtheory.experiments.compiled_stack").compiled_traversal
    return traverse(ends, parent, length, np.asarray(budgets, dtype=np.int64), whole_node)


def stack_traversal(ends, parent, length, budgets, whole_node):
    """The traversal of :func:`stack_hits` (plain enough for numba to compile as it is): ``tree`` is a Fenwick
    tree over times 1..T of the tokens whose last access is that time."""
    steps = ends.size
    tree = np.zeros(steps + 1, dtype=np.int64)
    last = np.zeros(parent.size, dtype=np.int64)  # 0: never accessed; else the time (1-based)
    hits = np.zeros(budgets.size, dtype=np.int64)
    path = np.empty(parent.size, dtype=np.int64)
    seen = 0
    for t in range(1, steps + 1):
        depth = 0
        v = ends[t - 1]
        while v != 0:
            path[depth] = v
            depth += 1
            v = parent[v]
        run_time = -1  # the last access time shared by the edges just above, and their tokens
        run_tokens = 0
        for i in range(depth - 1, -1, -1):
            e = path[i]
            s = last[e]
            if s == 0:
                break  # never accessed, nor is anything below it
            if s != run_time:
                run_time = s
                run_tokens = 0
            below = 0  # tokens last accessed at or before s: W(<= s)
            k = s
            while k > 0:
                below += tree[k]
                k -= k & -k
            first = seen - below + run_tokens + 1  # the stack distance of the edge's first token
            w = length[e]
            if whole_node:
                first += w - 1  # the whole object or nothing: its last token's distance
            for b in range(budgets.size):
                got = budgets[b] - first + 1
                if whole_node:
                    got = w if got > 0 else 0
                hits[b] += min(max(got, 0), w)
            run_tokens += w
        for i in range(depth):
            e = path[i]
            s = last[e]
            w = length[e]
            if s == 0:
                seen += w
            else:
                k = s
                while k <= steps:
                    tree[k] -= w
                    k += k & -k
            k = t
            while k <= steps:
                tree[k] += w
                k += k & -k
            last[e] = t
    return hits
