"""The symbols of docs/model.md §Symbols as sympy symbols, and exact evaluation of a bound on one instance.

B budget (tokens), L = L_max (longest query), beta batch size, k = B - beta*L_max + 1 the slack,
M workers, rho the hit benefit of a routing instance (docs/claims.md §C9b: the largest factor by which a full
hit shrinks a query's service time), n the length of a request sequence, OPT the optimum's cost, eta the error of
the predictions a policy is told (docs/predictions.md §Requests and predictions; smoothness bounds depend on it).
Bounds are sympy expressions in these symbols; they are evaluated exactly (harmonic numbers are
rationals), so no floating-point tolerance can hide a violation.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp

B = sp.Symbol("B", integer=True, positive=True)
L = sp.Symbol("L_max", integer=True, positive=True)
beta = sp.Symbol("beta", integer=True, positive=True)
k = sp.Symbol("k", integer=True, positive=True)
M = sp.Symbol("M", integer=True, positive=True)
rho = sp.Symbol("rho", positive=True)
n = sp.Symbol("n", integer=True, positive=True)
OPT = sp.Symbol("OPT", nonnegative=True)
eta = sp.Symbol("eta", nonnegative=True)
H = sp.harmonic

#: The slack of docs/model.md §The slack k as an expression: k = B - beta*L_max + 1 (beta = 1: B - L_max + 1).
SLACK = B - beta * L + 1

SYMBOLS = {s.name: s for s in (B, L, beta, k, M, rho, n, OPT, eta)}


class UndefinedBound(ValueError):
    """The bound has no value on this instance (e.g. H_k with k <= 0)."""


def evaluate(expr: sp.Expr, values: Mapping[sp.Symbol, object]) -> sp.Expr:
    """The exact value of ``expr`` at ``values`` (a sympy number: Integer, Rational, or exact real).

    Raises :class:`UndefinedBound` when the value is not a finite real number, or when the expression
    mentions k (through H_k) with k < 1, where the harmonic number is not a bound of anything.
    """
    exact = {
        symbol: sp.nsimplify(value) if isinstance(value, float) else sp.sympify(value)
        for symbol, value in values.items()
    }
    if k in expr.free_symbols and k in exact and exact[k] < 1:
        raise UndefinedBound(f"k = {exact[k]} < 1: {sp.sstr(expr)} is undefined")
    value = sp.sympify(expr).subs(exact)
    value = sp.expand_func(value) if value.has(sp.harmonic) else value
    if value.free_symbols:
        raise UndefinedBound(f"{sp.sstr(expr)} still depends on {sorted(map(str, value.free_symbols))}")
    if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo) or not value.is_real:
        raise UndefinedBound(f"{sp.sstr(expr)} is not a finite real number at {values}")
    return value


def show(expr: sp.Expr) -> str:
    """A short plain-text form of a bound: ``2*H_k``, ``k``, ``2 - 1/M``."""
    text = sp.sstr(expr)
    return text.replace("harmonic(k)", "H_k").replace("harmonic(B)", "H_B").replace("harmonic(", "H(")
