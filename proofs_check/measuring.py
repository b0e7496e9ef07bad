"""Measuring one instance: the bound there, the policy's misses, the optimum's, prefixes of a run.

Upper bounds are compared exactly where both sides are exact numbers (sympy integers and rationals).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from kvtheory.errors import InputError
from kvtheory.policies import EvictionPolicy, policy_class
from kvtheory.simulate import run_policy
from proofs_check import symbols as S
from proofs_check.instance import Instance
from proofs_check.results import Options


def bound_expr(claim, opts: Options) -> sp.Expr:
    expr = claim.bound if opts.bound is None else sp.sympify(opts.bound)
    if opts.bound_scale is not None:
        expr = sp.nsimplify(opts.bound_scale) * expr
    return expr


def bound_text(claim, opts: Options) -> str:
    raw = bound_expr(claim, opts)
    expr = S.show(raw)
    if isinstance(raw, sp.Add) and claim.kind == "upper":
        expr = f"({expr})"
    if claim.kind == "equal":
        return "FIF = OPT"
    relation = {"upper": "<=", "lower": "->"}[claim.kind]
    additive = "" if claim.additive == 0 else f" + {S.show(claim.additive)}"
    if claim.kind == "upper":
        return f"ALG {relation} {expr}*OPT{additive}"
    return f"ratio {relation} {expr}"


def instance_values(instance: Instance, k_value: int | None = None) -> dict:
    values = {
        S.B: instance.budget,
        S.L: instance.max_length,
        S.beta: instance.batch,
        S.M: instance.workers,
        S.k: instance.k if k_value is None else k_value,
    }
    if instance.workers > 1:
        from proofs_check.routing import hit_benefit

        values[S.rho] = hit_benefit(instance)
    return values


def bound_or_input_error(claim, opts: Options, instance: Instance):
    try:
        return S.evaluate(bound_expr(claim, opts), instance_values(instance))
    except S.UndefinedBound as exc:
        raise InputError(f"{claim.id}: {exc} on {instance.describe()}") from None


def resolve_policy(policy) -> type[EvictionPolicy]:
    if isinstance(policy, str):
        return policy_class(policy)
    return policy


def policy_name(policy) -> str:
    if isinstance(policy, str):
        return policy
    return getattr(policy, "name", None) or getattr(policy, "__name__", "custom")


def exceeds(stat, limit) -> bool:
    """stat > limit, exactly when both are exact numbers."""
    if isinstance(stat, (int, np.integer)):
        return bool(sp.Integer(int(stat)) > limit)
    return float(stat) > float(limit)


def run_misses(instance: Instance, cls, seed: int | None, evict_amount: str = "shortfall") -> tuple[int, np.ndarray]:
    result = run_policy(
        instance.workload, instance.budget, cls, batch=instance.batch, seed=seed, evict_amount=evict_amount
    )
    return result.misses, result.query_hits


def optimum_misses(instance: Instance) -> int:
    """OPT of a single-worker instance: FIF at beta = 1; at beta >= 2 the exact batched optimum
    (:func:`kvtheory.optimum.exact.solve_optimum`), FIF being only an upper bound there.

    Should a time limit stop the batched MIP, this is its incumbent, an upper bound on OPT: a ratio
    ALG / incumbent is then a lower end of ALG / OPT, so an upper bound found exceeded is exceeded
    indeed and a lower bound found realised is realised indeed.
    """
    from kvtheory.optimum.exact import solve_optimum
    from kvtheory.ratio import OPT_TIME_LIMIT

    return solve_optimum(instance.workload, instance.budget, batch=instance.batch, time_limit=OPT_TIME_LIMIT).misses


def prefix_misses(instance: Instance, hits: np.ndarray, n: int) -> int:
    """Misses of an online run over its first n queries (its decisions never depend on later ones)."""
    lengths = np.fromiter((q.length for q in instance.workload.queries[:n]), dtype=np.int64, count=n)
    return int(lengths.sum() - hits[:n].sum())


def prefix_instance(instance: Instance, n: int) -> Instance:
    return instance.with_(workload=instance.workload[:n], meta={**instance.meta, "n": n})
