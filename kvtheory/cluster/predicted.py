"""Policies that follow predictions on the workers of a cluster (docs/predictions.md §In a cluster).

A worker's schedule is decided online: the router sends each query to a worker as it arrives, so the true next
request of an edge on a worker is known only once the run is over. A predictor that reads the future (``oracle``,
``logdis``, ``dis``, ``bin``, ``adversarial``: each is a function of the true next request a_r) has no definition
there, and is refused. ``learned`` reads only the past: each worker runs its own
:class:`~kvtheory.model.predictions.Learner` over the batches it serves, its steps t = 1, 2, ... counting its own
batches (a worker's cache is needed again when that worker next serves the edge, whatever the others do), and
"never" is n + 1 for a trace of n queries (no worker serves more than n batches). The error eta of a run is the
sum over workers of each worker's eta against the batches it actually served.

A single worker at batch size 1 serves the trace's queries in arrival order, one per step, T = n: the same
predictions, run and eta as ``run_policy`` on the trace in that order.
"""

from __future__ import annotations

from kvtheory.errors import InputError
from kvtheory.model.predictions import OnlinePredictions, check_noise
from kvtheory.policies import PREDICTIVE_POLICIES, EvictionPolicy

#: the predictors defined on a schedule decided online
ONLINE_PREDICTORS = ("learned",)


def cluster_predictor(cls: type[EvictionPolicy], predictor: str | None, noise: float | None) -> str | None:
    """The predictor the workers running ``cls`` are told by (``predictor``, or the one bound to ``cls``), None
    for a policy that follows none; an InputError for a predictor that needs the future, a missing or second
    one, or one given to a policy that follows none."""
    if noise is not None and predictor is None:
        raise InputError("noise is the strength of a predictor: give the predictor too")
    if not cls.uses_predictions:
        if predictor is not None:
            known = ", ".join(PREDICTIVE_POLICIES)
            raise InputError(f"policy {cls.name!r} does not follow predictions; --predictor is for {known}")
        return None
    if getattr(cls, "predictor", None) is not None:
        if predictor is not None:
            raise InputError(f"policy {cls.name!r} names its predictor already; drop --predictor {predictor}")
        predictor, noise = cls.predictor, cls.noise
    if predictor is None:
        raise InputError(f"policy {cls.name!r} follows predictions: give a predictor (--predictor learned)")
    check_noise(predictor, noise)
    if predictor not in ONLINE_PREDICTORS:
        raise InputError(
            f"predictor {predictor!r} reads each worker's future requests, which the router decides online; "
            f"in a cluster only {', '.join(ONLINE_PREDICTORS)} is defined"
        )
    return predictor


def worker_policy(cls, trie, budget: int, seed, evict_amount: str, horizon: int):
    """``cls``'s policy for one worker, told by its own online predictions over at most ``horizon`` batches;
    returns (policy, predictions)."""
    predictions = OnlinePredictions(trie, horizon)
    return cls(trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions), predictions
