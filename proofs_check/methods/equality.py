"""Claim 1's method: FIF against independent exact optima (exhaustive search, the MIP)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from kvtheory.errors import InputError
from kvtheory.optimum.fif import run_fif
from kvtheory.ratio import ratio_of
from proofs_check.counterexamples import finish
from proofs_check.instance import Instance
from proofs_check.measuring import policy_name, resolve_policy, run_misses
from proofs_check.method import Family, Method, Search, run_searches
from proofs_check.results import CheckResult, Measurement, Options, merge, smaller, worse

# -- claim 1: FIF = the optimum ---------------------------------------------------------------------


class OptimumEquality(Method):
    """FIF's misses against an exhaustive optimum and (when installed) the MIP, instance by instance."""

    def __init__(self, families: Sequence[Family], searches: Sequence[Search]) -> None:
        self.families, self.searches = families, searches

    def default_policy(self, claim, opts):
        return opts.policy  # None: FIF itself

    def measure(self, claim, instance: Instance, opts: Options, policy=None) -> Measurement:
        from proofs_check.exhaustive import MAX_TOKEN_NODES, exhaustive_optimum, token_nodes

        w, b, beta = instance.workload, instance.budget, instance.batch
        if policy is None:
            alg, name = run_fif(w, b, batch=beta).misses, "fif"
        else:
            alg, name = (
                run_misses(instance, resolve_policy(policy), opts.seed, opts.evict_amount)[0],
                policy_name(policy),
            )
        optima, notes = [], []
        if len(token_nodes(w)[1]) <= MAX_TOKEN_NODES:
            optima.append(("exhaustive", exhaustive_optimum(w, b, beta)))
        mip = _mip_optimum(instance) if opts.mip else None
        if mip is not None:
            optima.append(mip)
        if not optima:
            raise InputError(f"{instance.describe()}: too large for an exact optimum other than FIF")
        opt = min(value for _, value in optima)
        if len({value for _, value in optima}) > 1:
            notes.append("exact methods disagree: " + ", ".join(f"{n} = {v}" for n, v in optima))
        violated = alg != opt or len({value for _, value in optima}) > 1
        notes.append(", ".join(f"{n} = {v}" for n, v in optima))
        return Measurement(
            instance,
            name,
            alg,
            opt,
            ratio_of(alg, opt),
            1.0,
            violated,
            ratio_of(alg, opt) if alg >= opt else 1 + (opt - alg),
            note="; ".join(notes),
        )

    def run(self, claim, opts: Options) -> CheckResult:
        started = time.perf_counter()
        policy = opts.policy
        worst = violation = None
        tried = 0
        notes = []
        if opts.mip and _mip_optimum(None) is None:
            notes.append("kvtheory.optimum.mip is not importable: compared with the exhaustive optimum only")
        elif opts.mip:
            notes.append("every instance: FIF vs the exhaustive optimum and vs solve_mip (CBC)")
        for family in self.families:
            if not opts.wants_family(family.label):
                continue
            m = self.measure(claim, family.make(opts.seed), opts, policy)
            tried += 1
            worst = worse(worst, m)
            if m.violated:
                violation = smaller(violation, m)
        found = run_searches(
            self.searches,
            opts,
            lambda inst: self.measure(claim, inst, opts, policy),
            policy_name(policy) if policy is not None else "fif",
            notes,
        )
        tried, worst, violation = merge((tried, worst, violation), *found)
        return finish(claim, opts, started, tried, worst, violation, notes)


def _mip_optimum(instance: Instance | None):
    """("mip", misses) from kvtheory.optimum.mip, or None when that module is missing (or not optimal)."""
    try:
        from kvtheory.optimum.mip import solve_mip
    except ImportError:
        return None
    if instance is None:
        return ("mip", None)
    result = solve_mip(instance.workload, instance.budget, batch=instance.batch)
    if result.status != "optimal":
        return None
    return ("mip", result.misses)
