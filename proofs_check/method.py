"""The base of every checking method, and what a claim hands it: families, searches, settings, drops.

A :class:`Method` knows how to ``run`` a claim (its families and searches), ``measure`` one instance,
``replay`` a given instance and ``drop`` an assumption; :mod:`proofs_check.methods` holds one per kind of
claim (equality, upper and lower bounds on one worker, routing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kvtheory.errors import InputError
from proofs_check.counterexamples import finish, reproduce_command
from proofs_check.instance import Instance
from proofs_check.measuring import policy_name
from proofs_check.results import CheckResult, Measurement, Options, merge, smaller, worse
from proofs_check.search import search


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
            result.command = reproduce_command(
                claim, result.counterexample, instance.origin or "<workload>", opts.evict_amount
            )
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
                state = merge(state, 1, m, m if m.violated else None)
            if spec.families:
                notes.append(f"{policy_name(policy)}: families " + "; ".join(f.label for f in spec.families))
            state = merge(state, *run_searches(spec.searches, opts, evaluate, policy_name(policy), notes))
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
            worst = worse(worst, outcome.worst)
        if outcome.violation is not None:
            violation = smaller(violation, outcome.violation)
        notes.append(f"{name}: {outcome.tried} {item.label} instances by {outcome.engine} (seed {opts.seed})")
    return tried, worst, violation


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
