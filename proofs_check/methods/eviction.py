"""Methods for bounds on one worker: upper bounds attacked by searches, lower bounds realised by adversaries."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from kvtheory.errors import InputError
from kvtheory.ratio import ratio_of
from kvtheory.stats import lower_confidence_bound, upper_confidence_bound
from proofs_check import symbols as S
from proofs_check.counterexamples import finish, save_counterexample
from proofs_check.instance import Instance
from proofs_check.measuring import (
    bound_expr,
    bound_or_input_error,
    exceeds,
    instance_values,
    optimum_misses,
    policy_name,
    prefix_instance,
    prefix_misses,
    resolve_policy,
    run_misses,
)
from proofs_check.method import Family, Method, Search, Setting, run_searches
from proofs_check.results import CheckResult, Measurement, Options, merge, smaller, worse

# -- upper bounds on one worker ---------------------------------------------------------------------


class UpperEviction(Method):
    """ALG <= f(k, B, ...) * OPT + c against the exact optimum, on families and a hypothesis search."""

    def __init__(self, families: Sequence[Family], searches: Sequence[Search], *, footprint_fallback=False, exact=None):
        self.families, self.searches = families, searches
        self.footprint_fallback = footprint_fallback
        #: a proofs_check.exact.ExactCheck: the bound on every sequence of a family of small universes
        self.exact = exact

    def measure(self, claim, instance: Instance, opts: Options, policy=None, seeds: int | None = None) -> Measurement:
        cls = resolve_policy(policy if policy is not None else claim.policies[0])
        opt = optimum_misses(instance)
        if cls.randomized:
            seed_list = opts.seed_list(seeds)
            values = [run_misses(instance, cls, s, opts.evict_amount)[0] for s in seed_list]
            stat = lower_confidence_bound(values, opts.level) if len(values) > 1 else values[0]
            alg = float(np.mean(values))
        else:
            seed_list = [opts.seed]
            alg = stat = run_misses(instance, cls, opts.seed, opts.evict_amount)[0]
        expr = bound_expr(claim, opts)
        note, undefined = "", False
        try:
            f = S.evaluate(expr, instance_values(instance))
        except S.UndefinedBound as exc:
            if not self.footprint_fallback:
                raise InputError(f"{claim.id}: {exc} on {instance.describe()}") from None
            undefined = True
            kf = instance.footprint_slack
            f = S.evaluate(expr, instance_values(instance, kf))
            note = f"{exc}; compared with k_F = B - F_max + 1 = {kf}"
        c = S.evaluate(claim.additive, instance_values(instance, max(instance.k, 1)))
        limit = f * opt + c
        violated = exceeds(stat, limit)
        score = float(stat) / float(limit) if limit > 0 else (math.inf if stat > 0 else 0.0)
        bound_ratio = float(limit) / opt if opt else math.inf
        if cls.randomized:
            note = (note + "; " if note else "") + (
                f"mean {alg:.4g}, {int(opts.level * 100)}% lower confidence bound {float(stat):.4g} vs "
                f"{float(limit):.4g}"
            )
        return Measurement(
            instance,
            policy_name(policy if policy is not None else claim.policies[0]),
            alg,
            opt,
            ratio_of(alg, opt),
            bound_ratio,
            violated,
            score,
            stat,
            tuple(seed_list),
            note,
            undefined,
        )

    def run(self, claim, opts: Options) -> CheckResult:
        started = time.perf_counter()
        policies = self.policies(claim, opts)
        worst = violation = None
        tried = 0
        notes = []
        for policy in policies:
            cls = resolve_policy(policy)
            for family in self.families:
                if not opts.wants_family(family.label):
                    continue
                m = self.measure(claim, family.make(opts.seed), opts, policy, family.seeds)
                tried += 1
                worst = worse(worst, m)
                if m.violated:
                    violation = smaller(violation, m)
            found = run_searches(
                self.searches,
                opts,
                lambda inst, p=policy: self.measure(claim, inst, opts, p),
                policy_name(policy),
                notes,
            )
            tried, worst, violation = merge((tried, worst, violation), *found)
            if cls.randomized:
                notes.append(f"{policy_name(policy)}: {self.seeds_note(cls, opts)}")
        used = [f.label for f in self.families if opts.wants_family(f.label)]
        if used:
            notes.append("families: " + "; ".join(used))
        result = finish(claim, opts, started, tried, worst, violation, notes)
        if self.exact is not None and self.exact.wanted(opts):
            self._exact(claim, opts, policies, result)
            result.seconds = time.perf_counter() - started
        return result

    def seeds_note(self, cls, opts: Options) -> str:
        """How a randomized policy's runs on one instance are compared with the bound."""
        return (
            f"{opts.seeds} seeds {opts.seed}..{opts.seed + opts.seeds - 1} per instance; violation = one-sided "
            f"{int(opts.level * 100)}% lower confidence bound of E[ALG] above the bound"
        )

    def _exact(self, claim, opts: Options, policies, result: CheckResult) -> None:
        """The exact step (proofs_check.exact): ``verified`` when the bound holds on every sequence of the
        family up to the horizon and nothing sampled broke it; an exact counterexample makes it VIOLATED."""
        from proofs_check.exact import counterexample

        rows, notes, complete = self.exact.run(claim, opts, policies)
        result.exact = rows
        result.notes += notes
        if not rows:
            return
        failed = [row for row in rows if not row.holds]
        worst_row = max(rows, key=lambda row: row.ratio / row.f if row.f else math.inf)
        horizons = "/".join(map(str, sorted({row.horizon for row in rows})))
        result.notes.append(
            f"exact: {len(rows)} (universe, B, L_max, policy) settings of the universes "
            f"{', '.join(dict.fromkeys(row.universe for row in rows))}, every sequence of up to {horizons} queries "
            f"at batch {self.exact.batch}; largest worst ratio against f: {worst_row.ratio} vs {worst_row.f} "
            f"({worst_row.policy} on {worst_row.universe}, B = {worst_row.budget})"
        )
        for row in rows:
            extra = "" if row.excess is None else f", max ALG - f*OPT = {row.excess} vs c = {row.c}"
            result.notes.append(
                f"exact: {row.policy} on {row.universe} B={row.budget} L_max={row.length} H={row.horizon}: worst "
                f"ratio {row.ratio} ({row.alg}/{row.opt} on {list(row.sequence)}) vs f = {row.f}{extra}: "
                + ("holds" if row.holds else "VIOLATED")
            )
        if failed:
            row = min(failed, key=lambda r: (len(r.sequence), r.universe))
            m = counterexample(row, self.exact.family[row.universe])
            result.notes.append(m.note)
            if result.counterexample is None:
                result.verdict = "VIOLATED"
                result.counterexample = m
                result.saved, result.command = save_counterexample(claim, m, opts, None)
        elif result.verdict == "holds" and complete:
            result.verdict = "verified"


# -- lower bounds on one worker ---------------------------------------------------------------------


class LowerEviction(Method):
    """Run the adversary at growing lengths; realised when the final ratio reaches (1 - margin) * bound."""

    def __init__(self, settings: Sequence[Setting]) -> None:
        self.settings = settings

    def _one(self, claim, setting: Setting, cls, opts: Options) -> Measurement:
        n_max = setting.lengths[-1]
        randomized = cls.randomized or setting.random_family
        seeds = list(range(opts.seed, opts.seed + (opts.lower_seeds if randomized else 1)))
        per_length: dict[int, list[float]] = {n: [] for n in setting.lengths}
        biggest = None
        for s in seeds:
            instance = setting.build(cls, n_max, s)
            biggest = biggest or instance
            misses, hits = run_misses(instance, cls, s, opts.evict_amount)
            for n in setting.lengths:
                alg = misses if n == n_max else prefix_misses(instance, hits, n)
                sub = instance if n == n_max else prefix_instance(instance, n)
                opt = optimum_misses(sub)
                per_length[n].append(ratio_of(alg, opt))
        ratios = per_length[n_max]
        mean = float(np.mean(ratios))
        stat = upper_confidence_bound(ratios, opts.level) if len(ratios) > 1 else ratios[0]
        f = S.evaluate(bound_expr(claim, opts), instance_values(biggest))
        threshold = (1 - opts.margin) * float(f)
        violated = stat < threshold
        trajectory = tuple((n, float(np.mean(per_length[n]))) for n in setting.lengths)
        note = (
            f"{setting.label}: ratio {' -> '.join(f'{r:.3g}' for _, r in trajectory)} at n = "
            + ", ".join(str(n) for n in setting.lengths)
            + f"; realised needs >= {threshold:.4g}"
        )
        if len(ratios) > 1:
            note += (
                f" ({len(ratios)} seeds {seeds[0]}..{seeds[-1]}, {int(opts.level * 100)}% upper confidence "
                f"bound {stat:.4g})"
            )
        return Measurement(
            biggest,
            policy_name(cls),
            mean,
            None,
            mean,
            float(f),
            violated,
            threshold / stat if stat > 0 else math.inf,
            stat,
            tuple(seeds),
            note,
            False,
            trajectory,
        )

    def measure(self, claim, instance: Instance, opts: Options, policy=None) -> Measurement:
        cls = resolve_policy(policy if policy is not None else claim.policies[0])
        seeds = opts.seed_list(opts.lower_seeds) if cls.randomized else [opts.seed]
        opt = optimum_misses(instance)
        ratios = [ratio_of(run_misses(instance, cls, s, opts.evict_amount)[0], opt) for s in seeds]
        stat = upper_confidence_bound(ratios, opts.level) if len(ratios) > 1 else ratios[0]
        f = bound_or_input_error(claim, opts, instance)
        threshold = (1 - opts.margin) * float(f)
        return Measurement(
            instance,
            policy_name(cls),
            float(np.mean(ratios)) * opt,
            opt,
            float(np.mean(ratios)),
            float(f),
            stat < threshold,
            threshold / stat if stat > 0 else math.inf,
            stat,
            tuple(seeds),
            f"one instance: realised needs >= {threshold:.4g}",
        )

    def run(self, claim, opts: Options) -> CheckResult:
        started = time.perf_counter()
        policies = self.policies(claim, opts)
        worst = violation = None
        tried = 0
        notes = []
        for policy in policies:
            cls = resolve_policy(policy)
            for setting in self.settings:
                if not opts.wants_family(setting.label):
                    continue
                m = self._one(claim, setting, cls, opts)
                tried += len(m.seeds) * len(setting.lengths)
                worst = worse(worst, m)
                notes.append(f"{m.policy}: {m.note}")
                if m.violated:
                    violation = worse(violation, m)
        notes.append(f"margin {opts.margin:.0%}")
        return finish(claim, opts, started, tried, worst, violation, notes)
