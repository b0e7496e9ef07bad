"""The algebra behind the claims, done by sympy instead of trusted by the reader.

Each :class:`Derivation` is a list of steps; a step is a sympy computation that must come out as stated
(an expression that simplifies to 0, a sign sympy can decide, a limit). Every function takes the
expressions it derives as arguments with the true ones as defaults, so a test can pass a changed
expression and watch the derivation fail. ``verify_all()`` runs them all.

Symbols as in docs/model.md §Symbols: k the slack, B the budget, L = L_max, beta the batch size, M workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp

from proofs_check.symbols import B, H, L, M, beta, k, n

x = sp.Symbol("x", nonnegative=True)
i = sp.Symbol("i", integer=True, positive=True)
m = sp.Symbol("m", integer=True, nonnegative=True)  # M - 1
OPT, s, t = sp.symbols("OPT s t", nonnegative=True)
rho = sp.Symbol("rho", positive=True)

# the true expressions, the defaults of the derivations below
LOG_BOUND = 1 + sp.log(k)
TWICE_LHS, TWICE_RHS = 2 * H(k) - 1, 2 * sp.log(k) + 1
YAO = H(k)
LOAD_ONLY = rho * (2 - 1 / M)


@dataclass
class Step:
    text: str
    check: Callable[[], bool]


@dataclass
class Derivation:
    name: str
    statement: str
    steps: list[Step] = field(default_factory=list)
    sweep: Callable[[int], bool] | None = None  # exact check at k = 1..SWEEP (a second, independent look)

    def verify(self) -> tuple[bool, str]:
        """(True, "") when every step holds; else (False, the first failing step)."""
        for step in self.steps:
            try:
                ok = bool(step.check())
            except Exception as exc:  # noqa: BLE001 - sympy could not do it: the step fails
                return False, f"{step.text}: {type(exc).__name__}: {exc}"
            if not ok:
                return False, step.text
        if self.sweep is not None:
            for value in range(1, SWEEP + 1):
                if not self.sweep(value):
                    return False, f"exact check fails at k = {value}"
        return True, ""


SWEEP = 60


def _zero(expr) -> bool:
    expr = sp.expand_func(sp.sympify(expr))
    return sp.simplify(sp.expand_log(expr, force=True)) == 0


def harmonic_log(upper=LOG_BOUND) -> Derivation:
    """H_k <= 1 + ln k for k >= 1, by induction: f(k) = upper - H_k has f(1) >= 0 and f(k+1) >= f(k)."""
    f = lambda v: upper.subs(k, v) - H(v)  # noqa: E731
    g = sp.log(1 + x) - x / (1 + x)  # f(k+1) - f(k) = g(1/k)
    return Derivation(
        "H_k <= 1 + ln k",
        f"H_k <= {sp.sstr(upper)} for every k >= 1 (claim 5's bound 2 H_k is O(log k))",
        [
            Step("base case f(1) = upper(1) - H_1 >= 0", lambda: sp.nsimplify(f(1)) >= 0),
            Step(
                "increment f(k+1) - f(k) = ln(1 + 1/k) - 1/(k+1) = g(1/k)",
                lambda: _zero(f(k + 1) - f(k) - g.subs(x, 1 / k)),
            ),
            Step("g(0) = 0", lambda: sp.simplify(g.subs(x, 0)) == 0),
            Step("g'(x) = x/(1+x)^2 >= 0 for x >= 0", lambda: sp.simplify(sp.diff(g, x)).is_nonnegative is True),
        ],
        sweep=lambda v: H(v) <= upper.subs(k, v),
    )


def twice_harmonic(lhs=TWICE_LHS, rhs=TWICE_RHS) -> Derivation:
    """2 H_k - 1 <= 2 ln k + 1: double H_k <= 1 + ln k and subtract 1."""
    return Derivation(
        "2 H_k - 1 <= 2 ln k + 1",
        f"{sp.sstr(lhs)} <= {sp.sstr(rhs)} for every k >= 1",
        [
            Step("H_k <= 1 + ln k holds", lambda: harmonic_log().verify()[0]),
            Step("lhs = 2 H_k - 1 (the doubled and shifted left side)", lambda: _zero(lhs - (2 * H(k) - 1))),
            Step("rhs = 2 (1 + ln k) - 1", lambda: _zero(rhs - (2 * (1 + sp.log(k)) - 1))),
        ],
        sweep=lambda v: (lhs.subs(k, v) <= rhs.subs(k, v)) == sp.true,
    )


def tree_slack(single=B - L + 1, batched=B - beta * L + 1) -> Derivation:
    """The lifting of paging to trees: on a star (prefix L-1, one-token leaves) B = (L - 1) + k holds the
    prefix and exactly k leaves; batches of beta distinct queries leave B - beta*L_max + 1."""
    leaves = sp.Symbol("leaves", integer=True, positive=True)
    return Derivation(
        "k = B - L_max + 1 (and B - beta*L_max + 1)",
        "the slack that turns a star instance into paging with k pages, and its batched form",
        [
            Step(
                "a cache of B holding the prefix of L_max - 1 tokens has room for exactly k leaves",
                lambda: sp.solve(sp.Eq((L - 1) + leaves, B), leaves) == [sp.expand(single)],
            ),
            Step(
                "the cyclic adversary's k + 1 leaves are B + 1 token nodes: one too many",
                lambda: _zero((L - 1) + (single + 1) - (B + 1)),
            ),
            Step("depth-1 instances (L_max = 1) give k = B pages", lambda: _zero(single.subs(L, 1) - B)),
            Step("batch size 1 gives back the single form", lambda: _zero(batched.subs(beta, 1) - single)),
            Step(
                "beta*L_max slots for the batch's paths leave k - 1 others", lambda: _zero(B - beta * L - (batched - 1))
            ),
        ],
    )


def graham(bound=2 - 1 / M) -> Derivation:
    """Greedy list scheduling: the last query j on the busiest worker started by W_-j / M, so
    makespan <= (W - p_j)/M + p_j <= OPT + (1 - 1/M) OPT; tight on M(M-1) units and one of size M."""
    w = M * OPT - s  # W <= M * OPT
    p = OPT - t  # p_j <= OPT
    gap = (w - p) / M + p - bound * OPT
    return Derivation(
        "Graham 2 - 1/M",
        f"greedy makespan <= ({sp.sstr(bound)}) * OPT, tight",
        [
            Step(
                "(W - p_j)/M + p_j - bound*OPT <= 0 whenever W <= M*OPT and p_j <= OPT (M = m + 1 >= 1)",
                lambda: sp.simplify(gap.subs(M, m + 1)).is_nonpositive is True,
            ),
            Step(
                "tight instance: M(M-1) unit queries, then one of size M: (2M - 1)/M = bound",
                lambda: _zero((2 * M - 1) / M - bound),
            ),
        ],
    )


def hit_benefit_graham(bound=LOAD_ONLY) -> Derivation:
    """Claim 9b: costs between c*_j (all hits) and rho*c*_j (all misses) give rho*(2 - 1/M)."""
    w = M * OPT - s  # sum of all-hit costs <= M*OPT
    p = OPT - t  # the last query's all-hit cost <= OPT
    gap = rho * ((w - p) / M + p) - bound * OPT
    return Derivation(
        "load-only routing: rho (2 - 1/M)",
        f"least-load on predicted all-miss work: makespan <= {sp.sstr(bound)} * OPT",
        [
            Step(
                "rho((W* - p*_j)/M + p*_j) - bound*OPT <= 0 when W* <= M*OPT, p*_j <= OPT",
                lambda: sp.simplify(gap.subs(M, m + 1)).is_nonpositive is True,
            ),
            Step("rho = 1 (a_cached = a_miss) gives back Graham", lambda: _zero(bound.subs(rho, 1) - (2 - 1 / M))),
        ],
    )


def yao_ratio(ratio=YAO) -> Derivation:
    """Uniform requests over k + 1 pages: online misses 1/(k+1) per request; Belady's next fault comes
    after all k other pages were requested, a coupon collector of sum_{i=1..k} (k+1)/i requests."""
    phase = sp.summation((k + 1) / i, (i, 1, k))
    return Derivation(
        "Yao: H_k",
        f"E[ALG] / E[OPT] -> {sp.sstr(ratio)} on uniform requests over k + 1 leaves",
        [
            Step(
                "coupon collector over k of k + 1 pages: sum_{i=1..k} (k+1)/i = (k+1) H_k",
                lambda: _zero(phase - (k + 1) * H(k)),
            ),
            Step("(1/(k+1)) / (1/((k+1) H_k)) = ratio", lambda: _zero((1 / (k + 1)) / (1 / phase) - ratio)),
            Step(
                "the same as (k+1) H_{k+1} - 1 over k + 1 (the other way to count a phase)",
                lambda: _zero(((k + 1) * H(k + 1) - 1) / (k + 1) - ratio),
            ),
        ],
    )


def adaptive_limit(limit=k) -> Derivation:
    """Claim 2: ALG = L - 1 + n against OPT <= (L - 1) + (k + 1) + (n - k - 1)/k gives ratio -> k."""
    alg = L - 1 + n
    opt = L - 1 + k + 1 + (n - k - 1) / k
    return Derivation(
        "adaptive adversary: ratio -> k",
        f"(L - 1 + n) / ((L - 1) + (k + 1) + (n - k - 1)/k) -> {sp.sstr(limit)} as n -> oo",
        [Step("the limit as n -> oo", lambda: _zero(sp.limit(alg / opt, n, sp.oo) - limit))],
    )


def imbalanced_limit(limit=(B + 1) * k / (k + 1)) -> Derivation:
    """Claim 4: a cycle costs L-LRU (B - k + 1) + k = B + 1 tokens and OPT (k + 1)/k (paging, k frames)."""
    lru = (B - k + 1) + k
    opt = (k + 1) / k
    return Derivation(
        "imbalanced: (B + 1) k / (k + 1)",
        f"L-LRU / OPT per cycle = {sp.sstr(limit)}, linear in B at fixed k",
        [
            Step("(B + 1) / ((k + 1)/k) = limit", lambda: _zero(lru / opt - limit)),
            Step(
                "d limit / dB = k/(k+1) > 0 does not depend on B (linear growth)",
                lambda: sp.simplify(sp.diff(limit, B)).is_positive is True and sp.diff(limit, B, 2) == 0,
            ),
        ],
    )


def affinity_limit(limit=M) -> Derivation:
    """Claim 9a: all n queries of a hot prefix on one worker against n/M each: ratio -> M."""
    first, each = sp.symbols("c_1 c", positive=True)
    alg = first + (n - 1) * each
    opt = first + (n / M - 1) * each
    return Derivation(
        "affinity on a hot prefix: ratio -> M",
        f"(c_1 + (n-1) c) / (c_1 + (n/M - 1) c) -> {sp.sstr(limit)}",
        [Step("the limit as n -> oo", lambda: _zero(sp.limit(alg / opt, n, sp.oo) - limit))],
    )


DERIVATIONS: dict[str, Callable[[], Derivation]] = {
    "harmonic-log": harmonic_log,
    "twice-harmonic": twice_harmonic,
    "tree-slack": tree_slack,
    "graham": graham,
    "hit-benefit": hit_benefit_graham,
    "yao": yao_ratio,
    "adaptive": adaptive_limit,
    "imbalanced": imbalanced_limit,
    "affinity": affinity_limit,
}


def verify_all() -> list[tuple[str, str, bool, str]]:
    """(name, statement, ok, failing step) for every derivation."""
    results = []
    for make in DERIVATIONS.values():
        d = make()
        ok, why = d.verify()
        results.append((d.name, d.statement, ok, why))
    return results
