"""``best --randomized``: the smallest worst-case expected ratio any randomized online algorithm reaches over the
sequences of up to H queries of a universe, at any batch size, by a linear programme with both certificates
checked in exact arithmetic (docs/game.md §The best randomized ratio).

best_rand(H) = min over randomized online algorithms A of max over sequences s (1 <= |s| <= H) of
E[A(s)] / OPT(s). E[A(s)] depends on A only through the probabilities p(h, C) that A holds cache C after the
request history h, so A may be taken to choose its next cache from (h, C) alone; the LP's variables are the
flows y(h, C, r, C') = P(cache C after h, then r requested, then C' kept), with C' any cache the model allows
(demand paging, leaves only: see :mod:`kvtheory.game.best`):

    minimise lambda  subject to  sum over C' of y(h, C, r, C') = p(h, C) for every r, where
    p(empty, {}) = 1 and p(h r, C') = sum over C of y(h, C, r, C');  y >= 0;
    E[A(s)] = sum over t, C, C' of y(s_<t, C, s_t, C') cost(C, s_t) <= lambda OPT(s) for every s.

As solved, E[A(s)] is a variable z_s per sequence, z_s = z_(s less its last request) + the expected misses of
its last request (so each ratio row has two entries). The LP (HiGHS through scipy) gives floats; both
certificates are recovered in rationals and checked on their own. **Upper bound**: the algorithm's conditional
choices y / p, rounded to nearby fractions and normalised exactly, are a randomized algorithm; its exact max
over s of E[A(s)] / OPT(s) is computed by walking every sequence with the exact distribution of caches. **Lower
bound**: the duals mu_s of the ratio rows give the adversary's distribution D(s) = mu_s OPT(s) (they sum to 1 at
the optimum), rounded and normalised exactly; by Yao's principle min over deterministic online algorithms of
E_D[A(s) / OPT(s)] is a lower bound, computed exactly by backward induction (the best reply to D). When the two
meet, the ratio is exact.

At batch size beta >= 2 a request r is one of the requester's moves of the deterministic game
(:meth:`kvtheory.game.best._Game.requests`): a batch of beta queries whose footprint fits in B, or a shorter last
batch that ends the sequence; h is the history of batches, cost(C, r) ALG's misses on the batch from C, the C'
the caches the batched game allows, OPT(s) the exact batched optimum (the work function at batch beta), and H
still counts queries. Everything else, both certificates included, is as above; batch 1 is the game described
first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from kvtheory.errors import InputError
from kvtheory.game.best import _Game
from kvtheory.game.search import fraction_text
from kvtheory.game.universe import Universe
from kvtheory.model.workload import Workload

#: LP variables a ``best --randomized`` may build before it is refused
LP_LIMIT = 2_000_000


@dataclass(frozen=True)
class RandomizedBest:
    """best_rand(H): ``lower`` <= best_rand(H) <= ``upper``, both exact and each checked on its own (the adversary's
    distribution against every deterministic algorithm, the algorithm's strategy against every sequence);
    ``lp`` the LP's value; ``exact`` when the two meet."""

    budget: int
    horizon: int
    lower: Fraction
    upper: Fraction
    lp: float
    variables: int
    constraints: int
    batch: int = 1
    #: the adversary's distribution behind ``lower``: sequence (a tuple of moves: query indices at batch 1, batch
    #: tuples otherwise) -> its exact probability
    adversary: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def exact(self) -> bool:
        return self.lower == self.upper

    def to_dict(self) -> dict:
        return {
            "mode": "best",
            "kind": "randomized",
            "budget": self.budget,
            "batch": self.batch,
            "horizon": self.horizon,
            "ratio": fraction_text(self.upper) if self.exact else f"{self.lp:.12g}",
            "ratio_float": float(self.upper) if self.exact else self.lp,
            "exact": self.exact,
            "lower": fraction_text(self.lower),
            "upper": fraction_text(self.upper),
            "variables": self.variables,
            "constraints": self.constraints,
            "certificate": "checked",
        }


def best_randomized(
    workload: Workload, budget: int, horizon: int, *, batch: int = 1, lp_limit: int = LP_LIMIT
) -> RandomizedBest:
    """best_rand(``horizon``) on the universe ``workload`` at batch size ``batch`` (module docstring).

    >>> from kvtheory.model.workload import Workload
    >>> r = best_randomized(Workload.from_token_lists([[0], [1], [2]]), 2, 3)   # paging, n = 3, k = 2
    >>> r.exact, r.upper
    (True, Fraction(1, 1))
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise InputError(f"horizon must be a positive number of queries, got {horizon}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise InputError(f"batch size must be a positive integer, got {batch}")
    batch = int(batch)
    universe = Universe(workload, budget, batch=batch)
    game = _Game(universe, horizon, batch)
    # the nodes (h, C) reachable, level by level (t: the queries of h); the y variables; the flow rows
    nodes: dict[tuple[tuple, int], int] = {((), 0): 0}
    frontier = [((), 0, 0)]
    ys: list[tuple[tuple, int, object, int]] = []  # (h, C, r, C'); r a query index at batch 1, else a batch
    into: dict[int, list[int]] = {}  # node -> y variables flowing into it
    out_of: dict[tuple[int, object], list[int]] = {}  # (node, r) -> y variables leaving it on r
    while frontier:
        grown = []
        for h, c, t in frontier:
            u = nodes[(h, c)]
            for r, _, after in game.requests(t):
                _, keep = game.moves(c, r)
                for c2 in keep:
                    var = len(ys) + 1  # variable 0 is lambda
                    ys.append((h, c, r, c2))
                    out_of.setdefault((u, r), []).append(var)
                    if after < horizon:
                        key = (h + (r,), c2)
                        v = nodes.get(key)
                        if v is None:
                            v = nodes[key] = len(nodes)
                            grown.append((*key, after))
                        into.setdefault(v, []).append(var)
                    if len(ys) > lp_limit:
                        raise InputError(
                            f"horizon {horizon} needs more than {lp_limit} LP variables; lower the horizon"
                        )
        frontier = grown
    # the sequences (every request history up to H) and OPT of each
    by_step: dict[tuple, list[int]] = {}
    for i, (h, _, r, _) in enumerate(ys):
        by_step.setdefault(h + (r,), []).append(i + 1)
    sequences = sorted(by_step, key=lambda s: (len(s), s))
    opt = _optima(universe, sequences)
    # variables: lambda, the y's, and z_s = E[ALG(s)] for every sequence s
    z = {seq: 1 + len(ys) + i for i, seq in enumerate(sequences)}
    n_vars = 1 + len(ys) + len(sequences)
    rows, cols, vals, rhs = [], [], [], []
    for (u, _), out in out_of.items():  # flow conservation
        row = len(rhs)
        for var in out:
            rows.append(row), cols.append(var), vals.append(1.0)
        for var in into.get(u, []):
            rows.append(row), cols.append(var), vals.append(-1.0)
        rhs.append(1.0 if u == 0 else 0.0)
    for seq in sequences:  # z_s = z_(s less its last request) + the expected misses of the last request
        row = len(rhs)
        rows.append(row), cols.append(z[seq]), vals.append(1.0)
        if len(seq) > 1:
            rows.append(row), cols.append(z[seq[:-1]]), vals.append(-1.0)
        for var in by_step[seq]:
            h, c, r, _ = ys[var - 1]
            cost = game.moves(c, r)[0]
            if cost:
                rows.append(row), cols.append(var), vals.append(-float(cost))
        rhs.append(0.0)
    a_eq = coo_matrix((vals, (rows, cols)), shape=(len(rhs), n_vars)).tocsr()
    # the ratio rows: z_s <= lambda OPT(s)
    rows = [i for i in range(len(sequences)) for _ in (0, 1)]
    cols = [c for seq in sequences for c in (z[seq], 0)]
    vals = [v for seq in sequences for v in (1.0, -float(opt[seq]))]
    a_ub = coo_matrix((vals, (rows, cols)), shape=(len(sequences), n_vars)).tocsr()
    objective = np.zeros(n_vars)
    objective[0] = 1.0
    solved = linprog(
        objective,
        A_ub=a_ub,
        b_ub=np.zeros(len(sequences)),
        A_eq=a_eq,
        b_eq=np.array(rhs),
        bounds=[(0, None)] * n_vars,
        method="highs",
    )
    if solved.status != 0:
        raise RuntimeError(f"the LP was not solved: {solved.message}")
    duals = -np.asarray(solved.ineqlin.marginals)
    upper, lower, adversary = None, None, {}
    for denominator in (10**3, 10**6):  # the coarser rounding first: LP vertices have small denominators
        bound = _strategy_bound(universe, game, horizon, ys, solved.x, denominator, opt)
        upper = bound if upper is None else min(upper, bound)
        found: dict = {}
        bound = _adversary_bound(universe, game, horizon, sequences, opt, duals, denominator, found)
        if lower is None or bound > lower:
            lower, adversary = bound, found
        if lower == upper:
            break
    if lower > upper:
        raise AssertionError(f"the certificates cross: lower bound {lower} > upper bound {upper}")
    return RandomizedBest(
        universe.budget,
        horizon,
        lower,
        upper,
        float(solved.fun),
        n_vars,
        len(rhs) + len(sequences),
        batch,
        adversary,
    )


def _batch(r) -> tuple[int, ...]:
    """The queries of move ``r``: a query index (batch 1) or a batch tuple."""
    return r if isinstance(r, tuple) else (r,)


def _optima(universe: Universe, sequences) -> dict[tuple, int]:
    """OPT of every sequence of ``sequences`` (shorter first, every prefix among them), along the tree of
    prefixes; a sequence is a tuple of moves (query indices at batch 1, batch tuples otherwise)."""
    ws = {(): universe.initial()}
    opt = {}
    for s in sequences:  # shorter first: a prefix is always there
        w = ws[s] = universe.step(ws[s[:-1]], _batch(s[-1]))
        opt[s] = int(w.min())
    return opt


def _rational(x: float, denominator: int) -> Fraction:
    """The fraction of denominator at most ``denominator`` nearest ``x`` (0 for a negative ``x``)."""
    if x <= 0.5 / denominator:
        return Fraction(0)
    if abs(x - round(x)) <= 0.5 / denominator:
        return Fraction(round(x))
    return Fraction(x).limit_denominator(denominator)


def _strategy_bound(universe, game, horizon, ys, x, denominator, opt=None) -> Fraction:
    """max over s of E[A(s)] / OPT(s), exactly, for the algorithm that keeps C' with probability y / p after
    (h, C, r), from the LP's y: each conditional distribution (computed in floats) rounded to fractions of at
    most ``denominator`` and normalised exactly (all of it on the first option where p is 0). Only the
    (h, C) the rounded strategy reaches are rounded. ``opt``: OPT of every sequence, if known."""
    if opt is None:
        opt = _optima(universe, sorted({h + (r,) for h, _, r, _ in ys}, key=lambda s: (len(s), s)))
    flows: dict[tuple, list[tuple[int, float]]] = {}
    for i, (h, c, r, c2) in enumerate(ys):
        flows.setdefault((h, c, r), []).append((c2, max(float(x[i + 1]), 0.0)))
    rounded: dict[tuple, list[tuple[int, Fraction]]] = {}

    def choices(key: tuple) -> list[tuple[int, Fraction]]:
        found = rounded.get(key)
        if found is None:
            options = flows[key]
            total = sum(y for _, y in options)
            qs = [_rational(y / total, denominator) for _, y in options] if total > 1e-12 else []
            norm = sum(qs)
            if norm == 0:
                found = [(options[0][0], Fraction(1))]
            else:
                found = [(c2, q / norm) for (c2, _), q in zip(options, qs) if q]
            rounded[key] = found
        return found

    worst = Fraction(0)
    stack = [((), 0, {0: Fraction(1)}, Fraction(0))]
    while stack:
        h, t, dist, alg = stack.pop()
        for r, _, after in game.requests(t):
            nxt: dict[int, Fraction] = {}
            cost = Fraction(0)
            for c, p in dist.items():
                cost += p * game.moves(c, r)[0]
                for c2, q in choices((h, c, r)):
                    nxt[c2] = nxt.get(c2, 0) + p * q
            alg2 = alg + cost
            worst = max(worst, alg2 / opt[h + (r,)])
            if after < horizon:
                stack.append((h + (r,), after, nxt, alg2))
    return worst


def _adversary_bound(universe, game, horizon, sequences, opt, duals, denominator, distribution=None) -> Fraction:
    """min over deterministic online algorithms of E_D[A(s) / OPT(s)], exactly, for D(s) proportional to the
    LP's dual mu_s times OPT(s), rounded to fractions of at most ``denominator`` and normalised; D (its support)
    is written into ``distribution`` when given."""
    weight = {s: _rational(float(mu) * opt[s], denominator) for s, mu in zip(sequences, duals)}
    total = sum(weight.values())
    if total == 0:
        return Fraction(0)
    if distribution is not None:
        distribution.update((s, d / total) for s, d in weight.items() if d)
    # w(h r): the weight, over OPT, of the sequences that go through step h r
    through: dict[tuple, Fraction] = {}
    for s, d in weight.items():
        if d:
            share = d / total / opt[s]
            for t in range(1, len(s) + 1):
                through[s[:t]] = through.get(s[:t], 0) + share
    memo: dict = {}

    def reply(h: tuple, t: int, c: int) -> Fraction:
        key = (h, c)  # h fixes t
        if key in memo:
            return memo[key]
        value = Fraction(0)
        for r, _, after in game.requests(t):
            step = h + (r,)
            weight_here = through.get(step)
            if not weight_here:
                continue
            cost, keep = game.moves(c, r)
            value += weight_here * cost
            if after < horizon:
                value += min(reply(step, after, c2) for c2 in keep)
        memo[key] = value
        return value

    return reply((), 0, 0)
