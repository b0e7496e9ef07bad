"""proofs_check: the claims of docs/claims.md as code, checked and attacked.

* :mod:`proofs_check.claims` — the registry (``CLAIMS``, ``select``, ``get``); one :class:`Claim` per
  statement with its status, assumptions, policies, sympy bound, kind, additive constant and adversary.
* :mod:`proofs_check.assumptions` — named predicates over an instance returning ``(holds, detail)``.
* :mod:`proofs_check.algebra` — the algebra a reader would otherwise trust, done by sympy.
* :mod:`proofs_check.checker` — ``check_claim``, ``drop_assumption``, ``check_instance``; the parts:
  :mod:`proofs_check.results` (options, measurements, results), :mod:`proofs_check.measuring` (one
  instance: bound, costs), :mod:`proofs_check.method` (the Method base, families, searches),
  :mod:`proofs_check.methods` (one method per kind of claim), :mod:`proofs_check.counterexamples`
  (shrink, confirm, save).
* :mod:`proofs_check.search` — hypothesis-driven counterexample search with shrinking.

>>> from proofs_check import select
>>> [c.id for c in select(["C9"])]
['C9a', 'C9b', 'C9c']
"""

from proofs_check.assumptions import ASSUMPTIONS, evaluate_assumptions, get_assumption
from proofs_check.checker import check_claim, check_instance, drop_assumption
from proofs_check.claims import CLAIMS, Claim, all_claims, get, select
from proofs_check.instance import Instance
from proofs_check.results import CheckResult, Measurement, Options

__all__ = [
    "ASSUMPTIONS",
    "CLAIMS",
    "CheckResult",
    "Claim",
    "Instance",
    "Measurement",
    "Options",
    "all_claims",
    "check_claim",
    "check_instance",
    "drop_assumption",
    "evaluate_assumptions",
    "get",
    "get_assumption",
    "select",
]
