"""The claims of docs/claims.md as objects, in a registry keyed by id (``C1`` .. ``C9c``).

A :class:`Claim` states one bound in the symbols of docs/model.md §Symbols: its status, the named assumptions an
instance must satisfy (:mod:`proofs_check.assumptions`), the policies or routers it speaks of, the bound
as a sympy expression, whether it is an upper bound, a lower bound or an equality, its additive
constant, and the adversary family that realises it when it is a lower bound. ``method`` knows how to
check it (:mod:`proofs_check.checker`). To add a claim, build a Claim and pass it to :func:`register`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from kvtheory.errors import InputError

STATUSES = {
    "classic": "classic and proven",
    "reported": "reported by the paper",
    "ours": "ours, verified empirically",
    "conjecture": "conjecture",
}
KINDS = ("upper", "lower", "equal")


@dataclass(frozen=True, eq=False)
class Claim:
    id: str
    title: str
    statement: str
    status: str
    assumptions: tuple[str, ...]
    policies: tuple[str, ...]
    bound: sp.Expr
    kind: str
    additive: sp.Expr = sp.Integer(0)
    adversary: str | None = None
    source: str = ""
    randomized: bool = False
    method: object = None
    #: assumption name -> (instance generator, options): instances that break it, for ``--drop``
    drops: dict = field(default_factory=dict)
    #: what the check found that the statement does not say (kept next to the claim, shown by ``--json``)
    findings: tuple[str, ...] = ()
    #: the verdict the default check is known to give (None: the bound holds / is realised / is equal);
    #: ``kvtheory check`` exits 1 when a verdict differs from it, which makes the registry a regression test
    expected: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"{self.id}: status {self.status!r} is not one of {', '.join(STATUSES)}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.id}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        from proofs_check.assumptions import ASSUMPTIONS

        unknown = [a for a in self.assumptions if a not in ASSUMPTIONS]
        if unknown:
            raise ValueError(f"{self.id}: unknown assumptions {unknown}")

    @property
    def status_text(self) -> str:
        return STATUSES[self.status]

    @property
    def expected_verdict(self) -> str:
        return self.expected or {"upper": "holds", "lower": "realised", "equal": "equal"}[self.kind]

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "statement": self.statement,
            "status": self.status_text,
            "assumptions": list(self.assumptions),
            "policies": list(self.policies),
            "bound": sp.sstr(self.bound),
            "kind": self.kind,
            "additive": sp.sstr(self.additive),
            "adversary": self.adversary,
            "source": self.source,
            "randomized": self.randomized,
            "droppable": list(self.drops),
            "findings": list(self.findings),
            "expected": self.expected_verdict,
        }


CLAIMS: dict[str, Claim] = {}


def register(claim: Claim) -> Claim:
    if claim.id in CLAIMS:
        raise ValueError(f"claim {claim.id} registered twice")
    CLAIMS[claim.id] = claim
    return claim


def _load() -> None:
    from proofs_check.claims import eviction, routing  # noqa: F401, I001  (register on import, in this order)
    from proofs_check.claims import predictions, smoothness  # noqa: F401


def all_claims() -> list[Claim]:
    _load()
    return list(CLAIMS.values())


def select(ids) -> list[Claim]:
    """Claims by id, in registry order; ``C9`` selects C9a, C9b, C9c, ``3`` selects C3; no ids selects all."""
    _load()
    if not ids:
        return list(CLAIMS.values())
    chosen: list[Claim] = []
    for wanted in ids:
        key = wanted.strip().upper().replace("CLAIM", "C")
        if key[:1].isdigit():
            key = "C" + key
        matches = [c for c in CLAIMS.values() if c.id.upper() == key]
        if not matches:
            matches = [c for c in CLAIMS.values() if c.id.upper().rstrip("ABCDEFGH") == key]
        if not matches:
            raise InputError(f"unknown claim {wanted!r}; known: {', '.join(CLAIMS)}")
        chosen += [c for c in matches if c not in chosen]
    return chosen


def get(claim_id: str) -> Claim:
    found = select([claim_id])
    if len(found) != 1:
        raise InputError(f"{claim_id!r} names {len(found)} claims ({', '.join(c.id for c in found)}); name one")
    return found[0]
