"""What checking a claim produces: options, one measurement per instance, the result of a check.

A :class:`Measurement` is one instance under one policy (or router); a check keeps the worst one seen
and the smallest violation (:func:`worse`, :func:`smaller`, :func:`merge`), and a :class:`CheckResult`
reports them with the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import sympy as sp

from proofs_check.instance import Instance

VERDICTS = ("verified", "holds", "VIOLATED", "realised", "NOT REALISED", "equal", "DIFFERS")


@dataclass
class Options:
    """How hard and how to check. Defaults are what ``kvtheory check`` uses."""

    instances: int = 100  # hypothesis examples per policy (upper bounds and equalities)
    seed: int = 0  # hypothesis seed; first seed of randomized runs
    seeds: int = 10  # runs per instance of a randomized policy (upper bounds)
    lower_seeds: int = 8  # runs per length of a randomized family or policy (lower bounds)
    level: float = 0.95  # one-sided confidence level
    margin: float = 0.10  # lower bounds: realised when ratio >= (1 - margin) * bound
    policy: object = None  # override the claim's policies: an EvictionPolicy class or a name
    evict_amount: str = "shortfall"  # how much the online policies measured evict: shortfall or allocation
    router: object = None  # override the claim's router: a name or f(j, state) -> worker
    bound: sp.Expr | None = None  # override the bound expression
    bound_scale: object = None  # multiply the bound by this (tests: 0.5 breaks an upper bound)
    sources: tuple[str, ...] | None = None  # restrict to "hypothesis", "families", or origins starting so
    out_dir: Path | None = Path("counterexamples")  # where violations are saved (None: not saved)
    use_hypothesis: bool = True
    mip: bool = True  # claim 1: also solve each instance's MIP when kvtheory.optimum.mip is there
    shrink_seconds: float = 5.0  # time to shrink a violation found on a family instance
    exact_horizon: int | None = None  # exact verification (proofs_check.exact): horizon (None: the method's)

    def seed_list(self, count: int | None = None) -> list[int]:
        return list(range(self.seed, self.seed + (self.seeds if count is None else count)))

    def wants(self, source: str) -> bool:
        if self.sources is None:
            return True
        return any(source == s or source.startswith(s) for s in self.sources)

    def wants_family(self, label: str) -> bool:
        """Whether the adversary family ``label`` is to be run (all families, or this one by name)."""
        return self.wants("families") or self.wants(label)


@dataclass
class Measurement:
    """One instance under one policy (or router): costs, ratio, the bound there, and the verdict."""

    instance: Instance
    policy: str
    alg: object  # misses or makespan (mean over seeds for a randomized policy)
    opt: object  # the optimum (an upper bound on it for routing lower bounds)
    ratio: float
    bound: float | None  # the bound as a ratio on this instance: f + c/OPT (upper), f (lower), 1 (equal)
    violated: bool
    score: float  # > 1 means violated; the search climbs it
    stat: object = None  # the compared statistic (confidence bound) when randomized
    seeds: tuple[int, ...] = ()
    note: str = ""
    undefined: bool = False
    trajectory: tuple = ()  # lower bounds: (n, ratio) at growing lengths
    policy_obj: object = field(default=None, repr=False)  # the policy/router as given (class, name, callable)

    def to_dict(self) -> dict:
        return {
            "policy": self.policy,
            "instance": self.instance.describe(),
            "origin": self.instance.origin,
            "alg": plain(self.alg),
            "opt": plain(self.opt),
            "ratio": plain(self.ratio),
            "bound": plain(self.bound),
            "statistic": plain(self.stat),
            "seeds": list(self.seeds),
            "violated": self.violated,
            "note": self.note,
            "trajectory": [[n, plain(r)] for n, r in self.trajectory],
        }


@dataclass
class CheckResult:
    claim: object
    verdict: str
    tried: int
    worst: Measurement | None
    counterexample: Measurement | None = None
    saved: Path | None = None
    command: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    dropped: str | None = None
    bound_text: str = ""
    exact: list | None = None  # exact verification's rows (proofs_check.exact.Row), when it ran

    @property
    def ok(self) -> bool:
        return self.verdict in ("verified", "holds", "realised", "equal")

    def to_dict(self) -> dict:
        return {
            "claim": self.claim.id,
            "status": self.claim.status_text,
            "kind": self.claim.kind,
            "bound": self.bound_text,
            "dropped": self.dropped,
            "verdict": self.verdict,
            "instances": self.tried,
            "worst": None if self.worst is None else self.worst.to_dict(),
            "counterexample": None if self.counterexample is None else self.counterexample.to_dict(),
            "saved": None if self.saved is None else str(self.saved),
            "command": self.command,
            "notes": self.notes,
            "seconds": round(self.seconds, 2),
            "exact": None if self.exact is None else [row.to_dict() for row in self.exact],
        }


def plain(value):
    """A number as JSON can hold it: exact integers as int, inf/nan as text."""
    if value is None:
        return None
    if isinstance(value, (sp.Basic, Fraction, np.floating, np.integer)):
        value = float(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def smaller(a: Measurement | None, b: Measurement) -> Measurement:
    """The smaller instance (fewer tokens, then fewer queries) of two violations."""
    if a is None:
        return b
    key = lambda m: (m.instance.workload.total_tokens, len(m.instance.workload))  # noqa: E731
    return b if key(b) < key(a) else a


def worse(a: Measurement | None, b: Measurement) -> Measurement:
    if a is None:
        return b
    return b if score_of(b) > score_of(a) else a


def score_of(m: Measurement) -> float:
    return -math.inf if m.score is None or math.isnan(m.score) else m.score


def merge(state, tried, worst, violation):
    t, w, v = state
    if worst is not None:
        w = worse(w, worst)
    if violation is not None:
        v = smaller(v, violation)
    return t + tried, w, v
