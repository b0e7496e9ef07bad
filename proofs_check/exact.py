"""Exact verification of an upper bound on a stated family of small universes (docs/claims.md §Exact verification).

A claim ALG <= f * OPT + c (f, c evaluated exactly on each instance) is checked on every sequence of up to H
queries of each universe of :data:`FAMILY`, at each of its budgets, with the exact worst case of
:mod:`kvtheory.game` (a randomized policy: its exact expectation over its own draws, oblivious adversary):

- f and c depend on the sequence s only through B, beta and L_max(s) (k = B - beta*L_max(s) + 1). For each
  length l of a query of the universe (only the largest, when f and c do not mention L_max or k), the sequences
  with L_max(s) = l are exactly the sequences of the sub-universe of queries of length <= l that hold one of
  length l (``require`` in the search), and on them f = f(l), c = c(l);
- there, r = max over s of ALG(s) / OPT(s) (:func:`kvtheory.game.worst`). If r <= f, then ALG <= f * OPT <= f *
  OPT + c on every such s (c >= 0). Otherwise e = max over s of ALG(s) - f * OPT(s)
  (:func:`kvtheory.game.excess`) decides: the bound holds on every such s iff e <= c, and when e > c its witness
  is an exact counterexample (ALG > f * OPT + c in rationals).

The bound is **verified** (on the family, up to H, for the policies checked) when it holds on every sequence
of every universe, budget and length level: a finite proof, not a sample. The family, seeded and fixed:
classic paging on 4 pages; a star (one shared token, 3 leaves); two imbalanced trees (one query of 2 or 3 tokens
and 3 one-token queries: the long-then-short shape that breaks claims 3, 5 and 7); three random tries
of 7 token nodes, depth <= 3 (:func:`random_trie`, seeds 0, 1, 2). Budgets: B = beta*L_max and beta*L_max + 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

from kvtheory.errors import InputError
from kvtheory.model.workload import Workload
from proofs_check import symbols as S
from proofs_check.instance import Instance
from proofs_check.measuring import bound_expr, instance_values, policy_name, resolve_policy
from proofs_check.results import Measurement, Options

#: search states one setting may keep (kvtheory.game's state limit): a policy without a state key is searched
#: sequence by sequence and stops here; the bound is then not verified
STATE_LIMIT = 50_000
#: the assumptions this verification knows how to honour on a universe (see :meth:`ExactCheck.settings`)
HONOURED = {"queries-fit", "single-worker", "batch-1", "batch-fits", "distinct-queries"}


def random_trie(seed: int, nodes: int = 7, depth: int = 3) -> list[list[int]]:
    """A random trie of ``nodes`` token nodes (token v is node v), seeded: node v's parent is drawn uniformly
    among the earlier nodes of depth < ``depth`` and a new root (numpy default_rng(seed)); the queries are the
    root-to-leaf paths, in node order."""
    rng = np.random.default_rng(seed)
    parent, level = [-1], [1]
    for v in range(1, nodes):
        shallow = [u for u in range(v) if level[u] < depth]
        choice = int(rng.integers(0, len(shallow) + 1))
        p = -1 if choice == len(shallow) else shallow[choice]
        parent.append(p)
        level.append(1 if p < 0 else level[p] + 1)
    children = {p for p in parent if p >= 0}
    queries = []
    for v in range(nodes):
        if v not in children:
            path, u = [], v
            while u >= 0:
                path.append(u)
                u = parent[u]
            queries.append(path[::-1])
    return queries


#: the family: name -> token lists (each line a query of the universe)
FAMILY: dict[str, list[list[int]]] = {
    "paging-4": [[0], [1], [2], [3]],
    "star-3": [[0, 1], [0, 2], [0, 3]],
    "imbalanced-2+3": [[0, 1], [2], [3], [4]],
    "imbalanced-3+3": [[0, 1, 2], [3], [4], [5]],
    **{f"random-trie-7 seed={s}": random_trie(s) for s in (0, 1, 2)},
}


def keyed(cls) -> bool:
    """Whether the exact search can merge ``cls``'s states: a state key the search trusts
    (:func:`kvtheory.game.search.trusted_key`) that the class defines. Without one every sequence is searched
    apart, which the default check does not attempt."""
    from kvtheory.game.search import trusted_key
    from kvtheory.policies.base import EvictionPolicy

    return trusted_key(cls) and getattr(cls, "state_key", None) is not EvictionPolicy.state_key


def fraction(value) -> Fraction:
    """An exact sympy rational as a Fraction (an irrational bound is refused)."""
    value = sp.nsimplify(value)
    if not value.is_Rational:
        raise InputError(f"the bound {value} is not rational: it cannot be compared exactly")
    return Fraction(int(value.p), int(value.q))


@dataclass
class Row:
    """One (universe, budget, length level, policy) verified or refuted: ``ratio`` the exact worst ALG / OPT on
    the level's sequences, ``f`` and ``c`` the bound there, ``excess`` max ALG - f * OPT when it was needed."""

    universe: str
    budget: int
    batch: int
    length: int
    horizon: int
    policy: str
    ratio: Fraction
    f: Fraction
    c: Fraction
    excess: Fraction | None
    sequence: tuple[int, ...]
    alg: Fraction
    opt: int
    states: int
    holds: bool

    def to_dict(self) -> dict:
        text = lambda x: None if x is None else f"{x.numerator}/{x.denominator}"  # noqa: E731
        return {
            "universe": self.universe,
            "budget": self.budget,
            "batch": self.batch,
            "l_max": self.length,
            "horizon": self.horizon,
            "policy": self.policy,
            "ratio": text(self.ratio),
            "ratio_float": float(self.ratio),
            "f": text(self.f),
            "c": text(self.c),
            "excess": text(self.excess),
            "sequence": list(self.sequence),
            "alg": text(self.alg),
            "opt": self.opt,
            "states": self.states,
            "holds": self.holds,
        }


@dataclass
class ExactCheck:
    """The exact step of an upper-bound method: ``horizon`` (queries) for a deterministic policy and
    ``randomized_horizon`` for a randomized one, unless ``Options.exact_horizon`` says otherwise."""

    horizon: int = 10
    randomized_horizon: int = 7
    batch: int = 1
    family: dict = field(default_factory=lambda: dict(FAMILY))

    def wanted(self, opts: Options) -> list[str]:
        """The universes to check: all (sources None or "exact"), or those named ``exact NAME`` in sources."""
        return [name for name in self.family if opts.wants(f"exact {name}")]

    def settings(self, claim, names=None):
        """(name, token lists, budget) of the family on which the claim's assumptions hold: batches of
        ``batch`` (batch-1: 1), B >= beta*L_max (queries-fit, batch-fits), one worker; distinct-queries is
        honoured by the search (only batches of distinct queries)."""
        unknown = set(claim.assumptions) - HONOURED
        if unknown:
            raise InputError(f"{claim.id}: exact verification does not honour {sorted(unknown)}")
        beta = self.batch
        if "batch-1" in claim.assumptions and beta != 1:
            raise InputError(f"{claim.id} assumes batch 1; its exact check has batch {beta}")
        for name, lists in self.family.items():
            if names is not None and name not in names:
                continue
            longest = max(len(q) for q in lists)
            for budget in (beta * longest, beta * longest + 1):
                yield name, lists, budget

    def run(self, claim, opts: Options, policies) -> tuple[list[Row], list[str], bool]:
        """Every setting's row, notes, and whether every setting was searched to the end (else: not verified)."""
        from kvtheory.game import excess, worst
        from kvtheory.game.branching import enumerable

        rows: list[Row] = []
        notes: list[str] = []
        complete = True
        expr = bound_expr(claim, opts)
        by_length = bool({S.L, S.k} & (expr.free_symbols | sp.sympify(claim.additive).free_symbols))
        distinct = "distinct-queries" in claim.assumptions
        for policy in policies:
            cls = resolve_policy(policy)
            name = policy_name(policy)
            if not enumerable(cls):
                notes.append(f"exact: {name} not checked (its draws cannot be enumerated exactly)")
                complete = False
                continue
            if opts.exact_horizon is None and not keyed(cls):
                notes.append(
                    f"exact: {name} not checked (no state key of its own: every sequence would be searched apart; "
                    "--exact-horizon H checks it)"
                )
                complete = False
                continue
            horizon = opts.exact_horizon or (self.randomized_horizon if cls.randomized else self.horizon)
            for universe, lists, budget in self.settings(claim, self.wanted(opts)):
                lengths = sorted({len(q) for q in lists}) if by_length else [max(len(q) for q in lists)]
                for length in lengths:
                    keep = [j for j, q in enumerate(lists) if len(q) <= length]
                    sub = Workload.from_token_lists([lists[j] for j in keep])
                    # sequences of the level: L_max(s) = length exactly (the first level has no shorter query)
                    require = (
                        None if length == lengths[0] else {i for i, j in enumerate(keep) if len(lists[j]) == length}
                    )
                    values = instance_values(Instance(sub, budget, self.batch))
                    f = fraction(S.evaluate(expr, values))
                    c = fraction(S.evaluate(claim.additive, {**values, S.k: max(values[S.k], 1)}))
                    if c < 0 or f < 0:
                        raise InputError(f"{claim.id}: exact verification needs f, c >= 0, got f = {f}, c = {c}")
                    kw = dict(
                        batch=self.batch,
                        distinct=distinct,
                        require=require,
                        state_limit=STATE_LIMIT,
                        evict_amount=opts.evict_amount,
                    )
                    try:
                        w = worst(sub, budget, cls, horizon, **kw)
                    except InputError as exc:
                        if "search states" not in str(exc):
                            raise
                        notes.append(f"exact: {name} on {universe} B={budget} L_max={length} not finished ({exc})")
                        complete = False
                        continue
                    row = Row(
                        universe,
                        budget,
                        self.batch,
                        length,
                        horizon,
                        name,
                        w.ratio,
                        f,
                        c,
                        None,
                        tuple(keep[j] for j in w.sequence),
                        w.alg,
                        w.opt,
                        w.states,
                        w.ratio <= f,
                    )
                    if not row.holds:
                        try:
                            e = excess(sub, budget, cls, horizon, f, **kw)
                        except InputError as exc:
                            if "search states" not in str(exc):
                                raise
                            notes.append(f"exact: {name} on {universe} B={budget} L_max={length} not finished ({exc})")
                            complete = False
                            continue
                        row.excess, row.states = e.excess, row.states + e.states
                        row.holds = e.excess <= c
                        if not row.holds:
                            row.sequence, row.alg, row.opt = tuple(keep[j] for j in e.sequence), e.alg, e.opt
                    rows.append(row)
        return rows, notes, complete


def counterexample(row: Row, lists: list[list[int]]) -> Measurement:
    """The exact counterexample of ``row`` (on the universe ``lists``) as a measurement: the witness sequence
    as a workload."""
    sequence = Workload.from_token_lists([lists[j] for j in row.sequence])
    instance = Instance(sequence, row.budget, row.batch, origin=f"exact: {row.universe} B={row.budget}")
    limit = row.f * row.opt + row.c
    return Measurement(
        instance,
        row.policy,
        row.alg,
        row.opt,
        float(row.alg) / row.opt,
        float(limit) / row.opt,
        True,
        float(row.alg / limit) if limit else float("inf"),
        row.alg,
        (),
        f"exact: {'E[ALG]' if resolve_policy(row.policy).randomized else 'ALG'} = {row.alg} > "
        f"{row.f} * {row.opt} + {row.c} = {limit} on the sequence {list(row.sequence)} of {row.universe}",
    )
