"""The claims' bounds evaluated on one instance: what ``kvtheory ratio`` prints beside a measured ratio.

A claim *applies* to a single-worker instance (workload, B, beta) and a policy when the policy is among the
claim's, the claim is a ratio bound (``upper`` or ``lower``, not the equality FIF = OPT) and every one of
its named assumptions holds on the instance (:mod:`proofs_check.assumptions`, as ``kvtheory assumptions``
reports them). Its bound, a sympy expression in B, L_max, beta and k (docs/model.md §Symbols), is then
evaluated exactly at the instance's values, k = B - beta*L_max + 1 included; a bound with no value there
(H_k with k < 1) is left out.

What the value means depends on the kind: an ``upper`` bound c says ALG <= c * OPT + additive on every
instance the assumptions allow, so the measured ratio may be compared with it directly; a ``lower`` bound
c says that some instance of the claim's adversary family drives the ratio to c, not that this instance
does (e.g. claim C4's k(B+1)/(k+1) is reached by ``imbalanced``, whose every instance meets the
assumptions). ``check_finds`` says what ``kvtheory check`` finds of the claim as stated (``holds``,
``realised``, or ``violated`` when its counterexample is known): a violated bound is shown, never trusted.
"""

from __future__ import annotations

from kvtheory.model.workload import Workload
from proofs_check import symbols as S
from proofs_check.assumptions import evaluate_assumptions
from proofs_check.claims import all_claims
from proofs_check.instance import Instance
from proofs_check.measuring import instance_values


def claim_bounds(workload: Workload, budget: int, policy: str, *, batch: int = 1) -> list[dict]:
    """One ``{"claim", "kind", "bound", "value", "additive", "check_finds"}`` per claim on ``policy`` that
    applies to the instance (module docstring), in registry order; ``value`` is the bound's exact value as
    a float, ``bound`` its formula (``k``, ``2*H_k``, ``k*(B + 1)/(k + 1)``).

    >>> from kvtheory.workloads import generate
    >>> w = generate("imbalanced", {"B": 16, "k": 2, "n": 30})
    >>> [(b["claim"], b["bound"], round(b["value"], 4)) for b in claim_bounds(w, 16, "lru")]
    [('C4', 'k*(B + 1)/(k + 1)', 11.3333)]
    """
    instance = Instance(workload, budget, batch)
    values = instance_values(instance)
    found = []
    for claim in all_claims():
        if policy not in claim.policies or claim.kind == "equal":
            continue
        if not all(holds for _, holds, _ in evaluate_assumptions(claim.assumptions, instance)):
            continue
        try:
            value = S.evaluate(claim.bound, values)
        except S.UndefinedBound:
            continue
        found.append(
            {
                "claim": claim.id,
                "kind": claim.kind,
                "bound": S.show(claim.bound),
                "value": float(value),
                "additive": S.show(claim.additive),
                "check_finds": claim.expected_verdict,
            }
        )
    return found
