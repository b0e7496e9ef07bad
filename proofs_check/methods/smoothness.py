"""Smoothness bounds (docs/claims.md §P8, §P9): ALG <= f * OPT + c where f depends on the error eta of the
predictions the policy is told (docs/predictions.md §Requests and predictions) as well as on the instance, checked
against the exact optimum on the families and searches of :class:`~proofs_check.methods.eviction.UpperEviction`.

A policy told by a noisy predictor (``NAME@PREDICTOR=NOISE``) gets other predictions under each seed s, so each
seed gives its own pair (ALG_s, eta_s) and its own limit l_s = f(eta_s, OPT, k, B) * OPT + c. The bound says
E[ALG | predictions] <= l(predictions) for every set of predictions, hence:

- a policy that draws no random numbers of its own (blind-oracle) is deterministic once told its predictions: the
  bound is violated when ALG_s > l_s on some seed s, compared exactly (eta_s as the exact rational of its float);
  the measurement is the seed with the largest ALG_s / l_s, and a violation names that one seed;
- a policy that draws its own (predictive-marker): if the bound holds for every set of predictions, the mean of
  D_s = ALG_s - l_s over predictor draws and coins is <= 0, so the bound is violated when the one-sided Student-t
  lower confidence bound of the mean of D_s, at the level, exceeds 0 (with a predictor that draws nothing,
  l_s is one number and this is UpperEviction's test).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from kvtheory.errors import InputError
from kvtheory.ratio import ratio_of
from kvtheory.simulate import run_policy
from kvtheory.stats import lower_confidence_bound
from proofs_check import symbols as S
from proofs_check.instance import Instance
from proofs_check.measuring import bound_expr, exceeds, instance_values, optimum_misses, policy_name, resolve_policy
from proofs_check.methods.eviction import UpperEviction
from proofs_check.results import Measurement, Options


def draws_its_own(cls) -> bool:
    """Whether the policy draws random numbers of its own: a noisy predictor alone makes the class bound to it
    randomized (:func:`kvtheory.policies.predicted.told_by`), its base tells whether the policy is."""
    base = cls.__bases__[0] if getattr(cls, "noise", None) is not None else cls
    return bool(base.randomized)


class SmoothEviction(UpperEviction):
    """ALG <= f(eta, OPT, k, B) * OPT + c, eta the error of the run's own predictions (module docstring)."""

    def measure(self, claim, instance: Instance, opts: Options, policy=None, seeds: int | None = None) -> Measurement:
        policy = policy if policy is not None else claim.policies[0]
        cls = resolve_policy(policy)
        if not getattr(cls, "uses_predictions", False):
            raise InputError(f"{claim.id}: {policy_name(policy)!r} follows no predictions; name one as NAME@PREDICTOR")
        opt = optimum_misses(instance)
        seed_list = opts.seed_list(seeds) if cls.randomized else [opts.seed]
        values = instance_values(instance)
        expr = bound_expr(claim, opts)
        try:
            c = S.evaluate(claim.additive, values)
        except S.UndefinedBound as exc:
            raise InputError(f"{claim.id}: {exc} on {instance.describe()}") from None
        limits: dict[float, sp.Expr] = {}

        def limit(eta: float) -> sp.Expr:
            if eta not in limits:
                at = {**values, S.eta: sp.Rational(eta), S.OPT: sp.Integer(opt)}
                try:
                    limits[eta] = S.evaluate(expr, at) * opt + c
                except S.UndefinedBound as exc:
                    raise InputError(f"{claim.id}: {exc} on {instance.describe()}") from None
            return limits[eta]

        runs = []
        for s in seed_list:
            result = run_policy(
                instance.workload, instance.budget, cls, batch=instance.batch, seed=s, evict_amount=opts.evict_amount
            )
            runs.append((s, result.misses, result.eta, limit(result.eta)))
        name = policy_name(policy)
        if draws_its_own(cls):
            return self._mean(instance, name, opt, runs, opts)
        return self._worst(instance, name, opt, runs)

    def seeds_note(self, cls, opts: Options) -> str:
        seeds = f"{opts.seeds} seeds {opts.seed}..{opts.seed + opts.seeds - 1} per instance"
        if draws_its_own(cls):
            return (
                f"{seeds}; violation = one-sided {int(opts.level * 100)}% lower confidence bound of "
                "E[ALG - (f(eta) OPT + c)] above 0, each seed at its own eta"
            )
        return (
            f"{seeds}, a predictor draw each; violation = some seed's ALG above f(eta) OPT + c at its own eta, exactly"
        )

    @staticmethod
    def _worst(instance: Instance, name: str, opt: int, runs: list) -> Measurement:
        """The seed with the largest ALG_s / l_s; violated exactly when its ALG_s > l_s."""
        s, alg, eta, lim = max(runs, key=lambda run: run[1] / float(run[3]) if run[3] > 0 else math.inf)
        score = alg / float(lim) if lim > 0 else (math.inf if alg > 0 else 0.0)
        note = f"eta = {eta:.6g}, eta / OPT = {eta / opt:.4g}, limit {float(lim):.6g}"
        if len(runs) > 1:
            note = f"the worst of {len(runs)} predictor draws (seeds {runs[0][0]}..{runs[-1][0]}): seed {s}, " + note
        bound_ratio = float(lim) / opt if opt else math.inf
        return Measurement(
            instance, name, alg, opt, ratio_of(alg, opt), bound_ratio, exceeds(alg, lim), score, alg, (s,), note
        )

    @staticmethod
    def _mean(instance: Instance, name: str, opt: int, runs: list, opts: Options) -> Measurement:
        """Violated when the lower confidence bound of the mean of ALG_s - l_s exceeds 0."""
        seeds = tuple(run[0] for run in runs)
        algs = np.array([run[1] for run in runs], dtype=np.float64)
        lims = np.array([float(run[3]) for run in runs])
        etas = np.array([run[2] for run in runs])
        gap = lower_confidence_bound(algs - lims, opts.level) if len(runs) > 1 else float(algs[0] - lims[0])
        mean_limit = float(lims.mean())
        stat = mean_limit + gap
        score = stat / mean_limit if mean_limit > 0 else (math.inf if stat > 0 else 0.0)
        note = (
            f"mean {algs.mean():.4g}, mean limit {mean_limit:.4g}, eta {etas.min():.6g}..{etas.max():.6g} "
            f"(eta / OPT up to {etas.max() / opt:.4g}), {int(opts.level * 100)}% lower confidence bound of "
            f"E[ALG - limit] {gap:.4g}"
        )
        return Measurement(
            instance,
            name,
            float(algs.mean()),
            opt,
            ratio_of(float(algs.mean()), opt),
            mean_limit / opt if opt else math.inf,
            bool(gap > 0),
            score,
            stat,
            seeds,
            note,
        )
