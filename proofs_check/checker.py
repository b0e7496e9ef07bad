"""Checking a claim: instances that satisfy its assumptions, a measured ratio, the bound, a verdict.

Upper bounds (and the equality of claim 1) are attacked: adversary families plus a hypothesis search
(targeted towards the bound, then shrinking a violation to a minimal instance). A deterministic policy's
cost is compared with the bound exactly (sympy rationals, no tolerance). A randomized policy runs on
``seeds`` stated seeds and is declared in violation only when the one-sided Student-t *lower* confidence
bound of its mean cost, at the stated level, exceeds the bound: the violation is then significant.

Lower bounds are realised: the claim's adversary family is run at growing sequence lengths and the
bound counts as realised when the ratio at the longest length reaches (1 - margin) times the bound
(randomized: the one-sided *upper* confidence bound of the mean ratio does). A policy that stays below
is reported as a violation of the lower bound, with the instance saved.

Every violation is saved as a workload file with the command line that reproduces it.
"""

from __future__ import annotations

from proofs_check.instance import Instance
from proofs_check.results import CheckResult, Options


def check_claim(claim, opts: Options | None = None) -> CheckResult:
    return claim.method.run(claim, opts or Options())


def check_instance(claim, instance: Instance, opts: Options | None = None) -> CheckResult:
    return claim.method.replay(claim, instance, opts or Options())


def drop_assumption(claim, assumption: str, opts: Options | None = None) -> CheckResult:
    from proofs_check.assumptions import get_assumption

    return claim.method.drop(claim, get_assumption(assumption).name, opts or Options())
