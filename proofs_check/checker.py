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

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import sympy as sp

from kvtheory.errors import InputError
from kvtheory.model.workload import write_workload
from kvtheory.policies import EvictionPolicy, policy_class
from kvtheory.simulate import run_policy
from proofs_check import symbols as S
from proofs_check.instance import Instance
from proofs_check.search import search

VERDICTS = ("holds", "VIOLATED", "realised", "NOT REALISED", "equal", "DIFFERS")


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
    router: object = None  # override the claim's router: a name or f(j, state) -> worker
    bound: sp.Expr | None = None  # override the bound expression
    bound_scale: object = None  # multiply the bound by this (tests: 0.5 breaks an upper bound)
    sources: tuple[str, ...] | None = None  # restrict to "hypothesis", "families", or origins starting so
    out_dir: Path | None = Path("counterexamples")  # where violations are saved (None: not saved)
    use_hypothesis: bool = True
    mip: bool = True  # claim 1: also solve each instance's MIP when kvtheory.optimum.mip is there
    shrink_seconds: float = 5.0  # time to shrink a violation found on a family instance

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
            "alg": _plain(self.alg),
            "opt": _plain(self.opt),
            "ratio": _plain(self.ratio),
            "bound": _plain(self.bound),
            "statistic": _plain(self.stat),
            "seeds": list(self.seeds),
            "violated": self.violated,
            "note": self.note,
            "trajectory": [[n, _plain(r)] for n, r in self.trajectory],
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

    @property
    def ok(self) -> bool:
        return self.verdict in ("holds", "realised", "equal")

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
        }


def _plain(value):
    if value is None:
        return None
    if isinstance(value, (sp.Basic, Fraction, np.floating, np.integer)):
        value = float(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


# ---------------------------------------------------------------------------------------------------
# helpers


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


def _bound_or_input_error(claim, opts: Options, instance: Instance):
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


def ratio_of(alg, opt) -> float:
    if opt == 0:
        return 1.0 if alg == 0 else math.inf
    return float(alg) / float(opt)


def _exceeds(stat, limit) -> bool:
    """stat > limit, exactly when both are exact numbers."""
    if isinstance(stat, (int, np.integer)):
        return bool(sp.Integer(int(stat)) > limit)
    return float(stat) > float(limit)


def run_misses(instance: Instance, cls, seed: int | None) -> tuple[int, np.ndarray]:
    result = run_policy(instance.workload, instance.budget, cls, batch=instance.batch, seed=seed)
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


# ---------------------------------------------------------------------------------------------------
# saving counterexamples


def save_counterexample(claim, measurement: Measurement, opts: Options, dropped: str | None = None):
    """Write the instance as a workload file; return (path, command line reproducing it)."""
    if opts.out_dir is None:
        return None, reproduce_command(claim, measurement, "<not saved>")
    out = Path(opts.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tag = f"-without-{dropped}" if dropped else ""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in measurement.policy)
    path = out / f"{claim.id}{tag}-{safe}.jsonl"
    write_workload(measurement.instance.workload, path)
    return path, reproduce_command(claim, measurement, str(path))


def reproduce_command(claim, m: Measurement, path: str) -> str:
    inst = m.instance
    batch = f" --batch {inst.batch}" if inst.batch != 1 else ""
    if inst.workers > 1:
        return (
            f"kvtheory check {claim.id} --workload {path} --budget {inst.budget} --workers {inst.workers} "
            f"--a-cached {inst.a_cached} --a-miss {inst.a_miss}" + (f" --router {m.policy}" if m.policy else "")
        )
    if claim.kind == "equal":
        return (
            f"kvtheory opt --workload {path} --budget {inst.budget}{batch} --solver fif  "
            f"# compare: kvtheory opt --workload {path} --budget {inst.budget}{batch}  (the exact optimum)"
        )
    seeds = ""
    if m.seeds and len(m.seeds) > 1:
        seeds = f" --seed {m.seeds[0]} --seeds {len(m.seeds)}"
    elif m.seeds:
        seeds = f" --seed {m.seeds[0]}"
    return f"kvtheory ratio --workload {path} --budget {inst.budget}{batch} --policy {m.policy}{seeds}"


def _smaller(a: Measurement | None, b: Measurement) -> Measurement:
    """The smaller instance (fewer tokens, then fewer queries) of two violations."""
    if a is None:
        return b
    key = lambda m: (m.instance.workload.total_tokens, len(m.instance.workload))  # noqa: E731
    return b if key(b) < key(a) else a


def _worse(a: Measurement | None, b: Measurement) -> Measurement:
    if a is None:
        return b
    return b if _score(b) > _score(a) else a


def _score(m: Measurement) -> float:
    return -math.inf if m.score is None or math.isnan(m.score) else m.score


def finish(claim, opts: Options, started: float, tried: int, worst, violation, notes, dropped=None) -> CheckResult:
    notes = list(notes)
    if violation is not None and claim.kind != "lower":
        violation = _shrink_and_confirm(claim, opts, violation, notes)
    ok_word = {"upper": "holds", "lower": "realised", "equal": "equal"}[claim.kind]
    bad_word = {"upper": "VIOLATED", "lower": "NOT REALISED", "equal": "DIFFERS"}[claim.kind]
    result = CheckResult(
        claim,
        bad_word if violation else ok_word,
        tried,
        worst,
        violation,
        notes=list(notes),
        dropped=dropped,
        bound_text=bound_text(claim, opts),
    )
    if violation is not None:
        result.saved, result.command = save_counterexample(claim, violation, opts, dropped)
    result.seconds = time.perf_counter() - started
    return result


def _shrink_and_confirm(claim, opts: Options, violation: Measurement, notes: list) -> Measurement | None:
    """Shrink a family's violation; re-measure a randomized one on fresh seeds before reporting it.

    A search looks at many instances and the shrinker at many candidates, each compared at a 95% level,
    so a randomized violation is only reported once it holds again on 2 x ``seeds`` seeds never used in
    the search (``seed + 100000`` on): the confirmation is a single test at the stated level.
    """
    from proofs_check.search import shrink_chunks

    def measure(inst, o=opts):
        return claim.method.measure(claim, inst, o, violation.policy_obj)

    original = violation
    if violation.instance.origin != "hypothesis" and opts.shrink_seconds > 0:
        before = len(violation.instance.workload)
        violation = shrink_chunks(violation, measure, opts.shrink_seconds)
        if len(violation.instance.workload) < before:
            notes.append(
                f"counterexample shrunk from {before} to {len(violation.instance.workload)} queries "
                f"(from {violation.instance.origin})"
            )
    if len(violation.seeds) <= 1:
        return violation
    fresh = replace(opts, seed=opts.seed + 100_000, seeds=2 * len(violation.seeds))
    for candidate in (violation, original) if violation is not original else (violation,):
        confirmed = measure(candidate.instance, fresh)
        if confirmed.violated:
            notes.append(
                f"violation confirmed on {len(confirmed.seeds)} fresh seeds {confirmed.seeds[0]}..{confirmed.seeds[-1]}"
            )
            return confirmed
    notes.append(f"a candidate violation ({violation.instance.describe()}) did not hold on fresh seeds: not reported")
    return None


# ---------------------------------------------------------------------------------------------------
# methods


class Method:
    """How one claim is checked; subclasses fill in ``run`` and ``measure``."""

    def __init_subclass__(cls, **kwargs) -> None:
        # every measurement remembers the policy object it was measured with (to re-measure when shrinking)
        super().__init_subclass__(**kwargs)
        original = cls.__dict__.get("measure")
        if original is not None:

            def measure(self, claim, instance, opts, policy=None, *args, _original=original, **kw):
                m = _original(self, claim, instance, opts, policy, *args, **kw)
                m.policy_obj = policy
                return m

            measure.__doc__ = original.__doc__
            cls.measure = measure

    def run(self, claim, opts: Options) -> CheckResult:
        raise NotImplementedError

    def measure(self, claim, instance: Instance, opts: Options, policy=None) -> Measurement:
        raise NotImplementedError

    def policies(self, claim, opts: Options) -> list:
        """The policies to check: the one given in ``opts``, else those the claim speaks of."""
        return [opts.policy] if opts.policy is not None else list(claim.policies)

    def default_policy(self, claim, opts: Options):
        return opts.policy if opts.policy is not None else claim.policies[0]

    def replay(self, claim, instance: Instance, opts: Options) -> CheckResult:
        """The claim on one given instance (``kvtheory check CLAIM --workload FILE``)."""
        started = time.perf_counter()
        opts = replace(opts, shrink_seconds=0, out_dir=None)  # the instance is the user's: keep it as it is
        m = self.measure(claim, instance, opts, self.default_policy(claim, opts))
        result = finish(claim, opts, started, 1, m, m if m.violated else None, [])
        if result.counterexample is not None:
            result.command = reproduce_command(claim, result.counterexample, instance.origin or "<workload>")
        return result

    def drop(self, claim, assumption: str, opts: Options) -> CheckResult:
        """Search instances that break ``assumption`` (and keep the others)."""
        if assumption not in claim.drops:
            known = ", ".join(claim.drops) or "none"
            raise InputError(f"{claim.id} has no search without {assumption!r}; droppable here: {known}")
        started = time.perf_counter()
        spec = claim.drops[assumption]
        notes: list[str] = []
        state = (0, None, None)
        policies = self.policies(claim, opts)
        undefined = 0
        for policy in policies:

            def evaluate(inst, policy=policy):
                nonlocal undefined
                m = self.measure(claim, inst, opts, policy)
                undefined += m.undefined
                return m

            for family in spec.families:
                m = evaluate(family.make(opts.seed))
                state = _merge(state, 1, m, m if m.violated else None)
            if spec.families:
                notes.append(f"{policy_name(policy)}: families " + "; ".join(f.label for f in spec.families))
            state = _merge(state, *run_searches(spec.searches, opts, evaluate, policy_name(policy), notes))
        if undefined:
            notes.append(
                f"the bound as stated is undefined on {undefined} of the instances tried (k < 1); "
                "those were compared with the footprint slack k_F = B - F_max + 1 instead"
            )
        return finish(claim, opts, started, *state, notes, dropped=assumption)


@dataclass
class Drop:
    """How to search without one assumption: searches and families whose instances break it."""

    searches: Sequence = ()
    families: Sequence = ()


@dataclass
class Search:
    """A hypothesis search: instances drawn by ``gen(draw, **options)`` (see proofs_check.strategies)."""

    label: str
    gen: Callable
    options: dict


def run_searches(searches, opts: Options, evaluate: Callable, name: str, notes: list):
    """Run every wanted search; return (tried, worst, violation)."""
    tried, worst, violation = 0, None, None
    if not opts.wants("hypothesis"):
        return tried, worst, violation
    for item in searches:
        outcome = search(
            item.gen,
            item.options,
            evaluate,
            examples=opts.instances,
            seed=opts.seed,
            use_hypothesis=opts.use_hypothesis,
        )
        tried += outcome.tried
        if outcome.worst is not None:
            worst = _worse(worst, outcome.worst)
        if outcome.violation is not None:
            violation = _smaller(violation, outcome.violation)
        notes.append(f"{name}: {outcome.tried} {item.label} instances by {outcome.engine} (seed {opts.seed})")
    return tried, worst, violation


def _merge(state, tried, worst, violation):
    t, w, v = state
    if worst is not None:
        w = _worse(w, worst)
    if violation is not None:
        v = _smaller(v, violation)
    return t + tried, w, v


@dataclass
class Family:
    """A named source of instances: ``make(seed)`` builds one."""

    label: str
    make: Callable[[int], Instance]
    seeds: int | None = None  # randomized policies: override the number of seeds (big instances)


@dataclass
class Setting:
    """A lower-bound experiment: ``build(policy_cls, n, seed)`` makes the instance for length n."""

    label: str
    build: Callable[[type, int, int], Instance]
    lengths: tuple[int, ...]
    random_family: bool = False  # the sequence itself is random (seeds vary it)


# ---------------------------------------------------------------------------------------------------
# entry points


def check_claim(claim, opts: Options | None = None) -> CheckResult:
    return claim.method.run(claim, opts or Options())


def check_instance(claim, instance: Instance, opts: Options | None = None) -> CheckResult:
    return claim.method.replay(claim, instance, opts or Options())


def drop_assumption(claim, assumption: str, opts: Options | None = None) -> CheckResult:
    from proofs_check.assumptions import get_assumption

    return claim.method.drop(claim, get_assumption(assumption).name, opts or Options())
