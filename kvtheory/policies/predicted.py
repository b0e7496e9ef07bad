"""What the policies that follow predictions share (docs/predictions.md §Policies that follow predictions): a
predictor bound to the class, so that ``NAME@PREDICTOR`` (or ``NAME@PREDICTOR=NOISE``) names a policy as any
other name does, on every command and in the claims.

``told_by(cls, "logdis", 0.5)`` is the subclass of ``cls`` that the runner serves with predictions from
``logdis`` at strength 0.5, named ``blind-oracle@logdis=0.5``; the same spec gives the same class. With a
noisy predictor a run depends on its seed, so the bound class counts as randomized.
"""

from __future__ import annotations

from functools import cache
from typing import ClassVar

from kvtheory.errors import InputError
from kvtheory.model.predictions import check_noise

SEPARATOR = "@"


class FollowsPredictions:
    """Mixin of a policy class that takes ``predictions=`` (a :class:`~kvtheory.model.predictions.Predictions`)."""

    uses_predictions: ClassVar[bool] = True
    #: the predictor and noise bound to this class (:func:`told_by`); None on the registered class itself
    predictor: ClassVar[str | None] = None
    noise: ClassVar[float | None] = None

    @classmethod
    def required(cls, predictions):
        """``predictions`` itself; an InputError naming the policy when there are none."""
        if predictions is None:
            raise InputError(f"policy {cls.name!r} follows predictions: give a predictor (--predictor NAME)")
        return predictions


@cache
def told_by(cls: type, predictor: str, noise: float | None = None) -> type:
    """The subclass of ``cls`` bound to ``predictor`` at strength ``noise`` (checked: an InputError if the
    predictor does not exist or the noise does not suit it)."""
    noise = check_noise(predictor, noise)
    label = predictor if noise is None else f"{predictor}={noise:.15g}"
    attributes = {
        "name": f"{cls.name}{SEPARATOR}{label}",
        "predictor": predictor,
        "noise": noise,
        "randomized": cls.randomized or noise is not None,
        "__module__": cls.__module__,
        "__doc__": f"{cls.name} with predictions from {label}.",
    }
    return type(f"{cls.__name__}Told", (cls,), attributes)


def parse_spec(spec: str) -> tuple[str, str, float | None]:
    """``NAME@PREDICTOR[=NOISE]`` as (name, predictor, noise); an InputError for a malformed noise."""
    name, _, told = spec.partition(SEPARATOR)
    predictor, _, strength = told.partition("=")
    if not strength:
        return name, predictor, None
    try:
        return name, predictor, float(strength)
    except ValueError:
        raise InputError(f"policy {spec!r}: the noise after '=' must be a number, got {strength!r}") from None
