"""Searching instances for a violation: hypothesis (targeted, then shrinking) or a seeded numpy fallback.

``search(gen, options, evaluate, examples=N, seed=S)`` draws N instances from ``gen`` (see
:mod:`proofs_check.strategies`), evaluates each, steers the search towards high scores with
``hypothesis.target`` (score = how close an instance comes to breaking the bound, > 1 breaks it), and on
the first violation lets hypothesis shrink it to a minimal one: fewer and shorter queries, smaller
numbers. Evaluation must be deterministic (randomized policies run on fixed seeds), so shrinking is
sound. Without hypothesis the same generator runs on ``numpy.random.default_rng(S)`` and a violation is
shrunk greedily by deleting queries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from kvtheory.errors import InputError
from kvtheory.model.workload import Workload
from proofs_check.strategies import numpy_draws, strategy


@dataclass
class SearchOutcome:
    tried: int = 0
    worst: object = None  # the Measurement with the highest score
    violation: object = None  # the (shrunk) violating Measurement, or None
    engine: str = "hypothesis"


def hypothesis_available() -> bool:
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        return False
    return True


class _Found(Exception):
    pass


def _finite(score: float) -> float:
    if score is None or math.isnan(score):
        return 0.0
    return max(min(score, 1e12), -1e12)


def search(
    gen: Callable, options: dict, evaluate: Callable, *, examples: int, seed: int, use_hypothesis: bool = True
) -> SearchOutcome:
    outcome = SearchOutcome()

    def observe(instance):
        measurement = evaluate(instance)
        outcome.tried += 1
        if outcome.worst is None or _finite(measurement.score) > _finite(outcome.worst.score):
            outcome.worst = measurement
        return measurement

    if examples <= 0:
        return outcome
    if use_hypothesis and hypothesis_available():
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
        from hypothesis import seed as fixed_seed

        @settings(
            max_examples=examples,
            database=None,
            deadline=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            phases=(Phase.generate, Phase.target, Phase.shrink),
            verbosity=Verbosity.quiet,
            report_multiple_bugs=False,
            print_blob=False,
        )
        @fixed_seed(seed)
        @given(strategy(gen, **options))
        def probe(instance):
            measurement = observe(instance)
            target(_finite(measurement.score), label="score")
            if measurement.violated:
                outcome.violation = measurement
                raise _Found

        try:
            probe()
        except _Found:
            pass
        return outcome
    outcome.engine = "numpy"
    for instance in numpy_draws(gen, examples, seed, **options):
        measurement = observe(instance)
        if measurement.violated:
            outcome.violation = shrink_by_deletion(measurement, evaluate)
            break
    return outcome


def shrink_by_deletion(measurement, evaluate: Callable):
    """Delete queries one at a time while the instance still violates (the fallback shrinker)."""
    best = measurement
    progress = True
    while progress:
        progress = False
        queries = best.instance.workload.queries
        for j in range(len(queries)):
            if len(queries) == 1:
                break
            smaller = best.instance.with_(workload=Workload(queries[:j] + queries[j + 1 :]))
            try:
                candidate = evaluate(smaller)
            except (InputError, ValueError):
                continue
            if candidate.violated:
                best, progress = candidate, True
                break
    return best


def shrink_chunks(measurement, evaluate: Callable, seconds: float):
    """Delete runs of queries (halves, quarters, ... single ones) while the instance still violates.

    For violations found on large family instances, which hypothesis did not draw; stops after
    ``seconds`` and returns the smallest violating instance reached.
    """
    import time

    deadline = time.perf_counter() + seconds
    best = measurement
    chunk = max(1, len(best.instance.workload) // 2)
    while chunk >= 1 and time.perf_counter() < deadline:
        changed = False
        i = 0
        while i < len(best.instance.workload) and time.perf_counter() < deadline:
            queries = best.instance.workload.queries
            rest = queries[:i] + queries[i + chunk :]
            if not rest:
                i += chunk
                continue
            try:
                candidate = evaluate(best.instance.with_(workload=Workload(rest)))
            except (InputError, ValueError):
                candidate = None
            if candidate is not None and candidate.violated:
                best, changed = candidate, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return best
