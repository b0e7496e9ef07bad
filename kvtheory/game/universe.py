"""A universe's cache configurations and the offline optimum's work function over them (docs/game.md).

A **universe** U is a workload whose queries are the candidates; its trie has N token nodes. A
**configuration** is a prefix-closed set C of them with |C| <= B: every cache the model allows. OPT's
**work function** after a sequence s of batches is W_s(C) = the fewest misses that serve s from the empty
cache and end in configuration C (infinite where none does), so OPT(s) = min_C W_s(C). Serving batch b (its
token nodes U_b, m_b(t) = how many of its queries contain token t) from C costs
cost_b(C) = sum of m_b(t) over t in U_b \\ C; OPT may then keep any configuration C' with
U_b <= C' <= C | U_b (no prefetch; the tokens that left are leaves off the batch, taken one at a time), so

    W_{s b}(C') = min { W_s(C) + cost_b(C) : C' \\ U_b <= C }   for C' containing U_b, else infinity.

This is a dynamic programme over every schedule the model allows (the MIP's constraints), so min W is the
exact optimum at every batch size. **Capping.** Every value is kept at most min W + beta*B: from any C, OPT can
follow the schedule of any other C0, leaving out the tokens of C0 \\ C until first requested, which costs at most
m <= beta more per such token, at most beta*B in all; so a C with W(C) >= W(C0) + beta*B never does better
than C0 on any continuation, and min_C (W(C) + the continuation's cost from C), OPT of every longer sequence, is
unchanged. The capped work function takes finitely many values. tests/game/test_game.py checks min W against FIF
(batch 1) and the exact batched
optimum of :mod:`kvtheory.optimum` on every sequence of small universes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from kvtheory.errors import InputError
from kvtheory.model.workload import Workload

#: the work function's "infinity": larger than any cost on a universe within the limits
INFINITE = 1 << 40


def count_configurations(parents: Sequence[int], budget: int) -> int:
    """The number of prefix-closed sets of at most ``budget`` nodes of the forest ``parents`` (node t's parent
    is ``parents[t]``, -1 for a root), the empty set included: a tree knapsack over subtree sizes.

    >>> count_configurations([-1, 0, 0], 3)   # {}, {0}, {0,1}, {0,2}, {0,1,2}
    5
    """
    children: list[list[int]] = [[] for _ in parents]
    roots = []
    for t, p in enumerate(parents):
        (children[p] if p >= 0 else roots).append(t)

    def combine(a: list[int], b: list[int]) -> list[int]:
        out = [0] * (budget + 1)
        for i, x in enumerate(a):
            if x:
                for j, y in enumerate(b[: budget + 1 - i]):
                    out[i + j] += x * y
        return out

    order = []  # parents before children
    stack = list(roots)
    while stack:
        t = stack.pop()
        order.append(t)
        stack.extend(children[t])
    rooted: dict[int, list[int]] = {}  # rooted[t][s]: prefix-closed sets of size s in t's subtree containing t
    for t in reversed(order):
        inside = [1] + [0] * budget  # the children's subtrees, each empty or rooted
        for c in children[t]:
            inside = combine(inside, [1 + rooted[c][0]] + rooted[c][1:])
        rooted[t] = [0] + inside[:budget]
    total = [1] + [0] * budget
    for r in roots:
        total = combine(total, [1 + rooted[r][0]] + rooted[r][1:])
    return sum(total)


class Universe:
    """The token nodes of a universe's trie, its configurations and the work function's transitions.

    Token t of trie edge v at position i (1-based) has id ``offset[v] + i - 1``; ``tokens_of(j)`` are query
    j's token ids, root first. Configurations are bit masks over the token ids, ``configs[0]`` the empty one.
    """

    def __init__(self, workload: Workload, budget: int, *, batch: int = 1, config_limit: int = 20_000) -> None:
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget <= 0:
            raise InputError(f"budget must be a positive number of tokens, got {budget}")
        self.workload = workload
        self.budget = int(budget)
        self.batch = int(batch)
        self.cap = self.batch * self.budget  # see the module docstring: W <= min W + beta*B loses nothing
        self.trie = trie = workload.trie
        self.n_queries = len(workload)
        for j in range(self.n_queries):
            if trie.length(j) > budget:
                raise InputError(
                    f"{workload.where(j)}: query has {trie.length(j)} tokens, more than the budget B = {budget}"
                )
        offset = [0] * trie.n_nodes
        parents: list[int] = []
        total = 0
        for v in sorted(range(1, trie.n_nodes), key=trie.depth.__getitem__):
            offset[v] = total
            p = trie.parent[v]
            parents.append(offset[p] + trie.edge_len[p] - 1 if p else -1)
            parents.extend(range(total, total + trie.edge_len[v] - 1))
            total += trie.edge_len[v]
        self.offset = offset
        self.parents = parents
        self.n_tokens = total
        self.n_configs = count_configurations(parents, self.budget)
        if self.n_configs > config_limit:
            raise InputError(
                f"the universe has {self.n_configs} cache configurations of at most B = {budget} tokens "
                f"({total} token nodes), over the limit of {config_limit}"
            )
        self.configs = self._configurations()
        self.index = {c: i for i, c in enumerate(self.configs)}
        self._transitions: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def tokens_of(self, j: int) -> list[int]:
        trie = self.trie
        return [self.offset[v] + i for v in trie.path(j) for i in range(trie.edge_len[v])]

    @cached_property
    def query_masks(self) -> list[int]:
        return [sum(1 << t for t in self.tokens_of(j)) for j in range(self.n_queries)]

    def footprint(self, batch: Sequence[int]) -> int:
        """|union of the batch's token nodes|: it must be at most B."""
        union = 0
        for j in batch:
            union |= self.query_masks[j]
        return union.bit_count()

    def batches(self, size: int) -> list[tuple[int, ...]]:
        """Every ordered batch of ``size`` queries whose footprint fits in B (every query fits alone: checked
        when the universe is made)."""
        return [b for b in itertools.product(range(self.n_queries), repeat=size) if self.footprint(b) <= self.budget]

    def _configurations(self) -> list[int]:
        """Every prefix-closed set of at most B tokens, as bit masks, in order of size then mask."""
        parents, budget = self.parents, self.budget
        seen = {0}
        frontier = [0]
        for _ in range(budget):
            grown = []
            for c in frontier:
                for t, p in enumerate(parents):
                    if not c >> t & 1 and (p < 0 or c >> p & 1):
                        d = c | 1 << t
                        if d not in seen:
                            seen.add(d)
                            grown.append(d)
            frontier = grown
        return sorted(seen, key=lambda c: (c.bit_count(), c))

    def initial(self) -> np.ndarray:
        """The work function of the empty sequence: 0 on the empty cache, infinite elsewhere."""
        w = np.full(len(self.configs), INFINITE, dtype=np.int64)
        w[0] = 0
        return w

    def transition(self, batch: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cost_b per configuration, the configurations C' that contain U_b, a mask feasible[C', C]) of the
        batch's multiset of queries (the order inside a batch does not matter to OPT)."""
        key = tuple(sorted(batch))
        if len(key) > self.batch:
            raise ValueError(f"a batch of {len(key)} queries in a universe set up for batches of {self.batch}")
        found = self._transitions.get(key)
        if found is not None:
            return found
        union = 0
        multiplicity: dict[int, int] = {}
        for j in key:
            union |= self.query_masks[j]
            for t in self.tokens_of(j):
                multiplicity[t] = multiplicity.get(t, 0) + 1
        configs = self.configs
        cost = np.array([sum(m for t, m in multiplicity.items() if not c >> t & 1) for c in configs], dtype=np.int64)
        targets = np.array([i for i, c in enumerate(configs) if c & union == union], dtype=np.int64)
        feasible = np.array(
            [[(configs[i] & ~union) & ~c == 0 for c in configs] for i in targets.tolist()], dtype=bool
        ).reshape(len(targets), len(configs))
        found = (cost, targets, feasible)
        self._transitions[key] = found
        return found

    def step(self, w: np.ndarray, batch: Sequence[int]) -> np.ndarray:
        """W_{s b} from W_s = ``w`` (see the module docstring), capped at its minimum + beta*B."""
        cost, targets, feasible = self.transition(batch)
        through = np.minimum(w + cost, INFINITE)
        out = np.full(len(w), INFINITE, dtype=np.int64)
        out[targets] = np.where(feasible, through[None, :], INFINITE).min(axis=1)
        return np.minimum(out, out.min() + self.cap)

    def step_many(self, ws: np.ndarray, batch: Sequence[int]) -> np.ndarray:
        """:meth:`step` of every row of ``ws`` (one work function per row), in chunks of at most 4M cells."""
        cost, targets, feasible = self.transition(batch)
        rows, width = ws.shape
        out = np.full((rows, width), INFINITE, dtype=np.int64)
        chunk = max(1, (1 << 22) // max(1, feasible.size))
        for lo in range(0, rows, chunk):
            through = np.minimum(ws[lo : lo + chunk] + cost, INFINITE)
            out[lo : lo + chunk, targets] = np.where(feasible[None], through[:, None, :], INFINITE).min(axis=2)
        return np.minimum(out, out.min(axis=1, keepdims=True) + self.cap)

    def optimum(self, sequence: Sequence[int]) -> int:
        """OPT of ``sequence`` (query indices) served in this universe's batches: min over C of its work function."""
        w = self.initial()
        for start in range(0, len(sequence), self.batch):
            w = self.step(w, sequence[start : start + self.batch])
        return int(w.min())
