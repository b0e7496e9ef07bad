"""Methods for the routing claims (8 and 9): makespans against the exact joint optimum."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import sympy as sp

from kvtheory.ratio import ratio_of
from proofs_check import symbols as S
from proofs_check.counterexamples import finish
from proofs_check.instance import Instance
from proofs_check.measuring import bound_expr, bound_or_input_error
from proofs_check.method import Family, Method, Search, Setting, run_searches
from proofs_check.results import CheckResult, Measurement, Options, merge, smaller, worse

# -- routing (claims 8 and 9) -----------------------------------------------------------------------


def _router_name(router) -> str:
    return router if isinstance(router, str) else getattr(router, "__name__", "custom")


class UpperRouting(Method):
    """makespan(router) <= f(M, rho) * OPT with OPT exact (subset DP with FIF per worker)."""

    def __init__(self, families: Sequence[Family], searches: Sequence[Search], eviction: str = "lru") -> None:
        self.families, self.searches, self.eviction = families, searches, eviction

    def default_policy(self, claim, opts):
        return opts.router if opts.router is not None else claim.policies[0]

    def measure(self, claim, instance: Instance, opts: Options, policy=None) -> Measurement:
        from proofs_check.routing import exact_optimum, route

        router = policy if policy is not None else self.default_policy(claim, opts)
        run = route(instance, router, self.eviction)
        opt, best = exact_optimum(instance)
        f = bound_or_input_error(claim, opts, instance)
        limit = f * sp.nsimplify(opt)
        alg = sp.nsimplify(run.makespan)
        violated = bool(alg > limit)
        score = float(alg / limit) if limit > 0 else (math.inf if alg > 0 else 0.0)
        note = f"routing {list(run.routing)} vs optimal {list(best)}; bound {S.show(bound_expr(claim, opts))} = {f}"
        return Measurement(
            instance,
            _router_name(router),
            run.makespan,
            opt,
            ratio_of(run.makespan, opt),
            float(f),
            violated,
            score,
            note=note,
        )

    def run(self, claim, opts: Options) -> CheckResult:
        started = time.perf_counter()
        router = self.default_policy(claim, opts)
        worst = violation = None
        tried = 0
        notes = [
            f"routers from kvtheory.cluster.routers; every worker evicts with {self.eviction}; OPT by a dynamic "
            "program over subsets of queries with FIF on each worker"
        ]
        for family in self.families:
            if not opts.wants_family(family.label):
                continue
            m = self.measure(claim, family.make(opts.seed), opts, router)
            tried += 1
            worst = worse(worst, m)
            if m.violated:
                violation = smaller(violation, m)
        found = run_searches(
            self.searches, opts, lambda inst: self.measure(claim, inst, opts, router), _router_name(router), notes
        )
        tried, worst, violation = merge((tried, worst, violation), *found)
        return finish(claim, opts, started, tried, worst, violation, notes)


class LowerRouting(Method):
    """The router's makespan over a feasible routing's (an upper bound on OPT): a lower bound on the ratio."""

    def __init__(self, settings: Sequence[Setting], eviction: str = "lru") -> None:
        self.settings, self.eviction = settings, eviction

    def default_policy(self, claim, opts):
        return opts.router if opts.router is not None else claim.policies[0]

    def measure(self, claim, instance: Instance, opts: Options, policy=None) -> Measurement:
        from proofs_check.routing import exact_optimum, route, routing_makespan

        router = policy if policy is not None else self.default_policy(claim, opts)
        run = route(instance, router, self.eviction)
        reference = instance.meta.get("reference")
        if reference is not None:
            opt, how = routing_makespan(instance, reference), "a reference routing (an upper bound on OPT)"
        else:
            opt, how = exact_optimum(instance)[0], "the exact optimum"
        ratio = ratio_of(run.makespan, opt)
        f = float(bound_or_input_error(claim, opts, instance))
        threshold = (1 - opts.margin) * f
        return Measurement(
            instance,
            _router_name(router),
            run.makespan,
            opt,
            ratio,
            f,
            ratio < threshold,
            threshold / ratio if ratio > 0 else math.inf,
            note=f"OPT from {how}; realised needs >= {threshold:.4g}",
        )

    def run(self, claim, opts: Options) -> CheckResult:
        started = time.perf_counter()
        router = self.default_policy(claim, opts)
        worst = violation = None
        tried = 0
        notes = [f"routers from kvtheory.cluster.routers; every worker evicts with {self.eviction}"]
        for setting in self.settings:
            if not opts.wants_family(setting.label):
                continue
            trajectory = []
            m = None
            for n in setting.lengths:
                m = self.measure(claim, setting.build(None, n, opts.seed), opts, router)
                trajectory.append((n, m.ratio))
                tried += 1
            m.trajectory = tuple(trajectory)
            m.note = (
                f"{setting.label}: ratio {' -> '.join(f'{r:.3g}' for _, r in trajectory)} at n = "
                + ", ".join(str(n) for n in setting.lengths)
                + f"; {m.note}"
            )
            notes.append(f"{m.policy}: {m.note}")
            worst = worse(worst, m)
            if m.violated:
                violation = worse(violation, m)
        notes.append(f"margin {opts.margin:.0%}")
        return finish(claim, opts, started, tried, worst, violation, notes)
