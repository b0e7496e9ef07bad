"""One registry for every workload generator and adversary family, by name.

Generators register themselves on import (the ``register`` decorator): :mod:`kvtheory.workloads` imports
its generator modules and then :mod:`adversaries` (named to it by the public API, ``kvtheory/__init__.py``,
which any import of a kvtheory module runs first: :func:`kvtheory.registry.add_provider`), so every name is
known before ``generate`` runs, and this module imports nothing above it.

A generator is a plain function ``f(*, seed: int, **params) -> Workload`` whose keyword parameters all
have defaults; the annotations of those defaults tell the command line how to parse ``key=value``
(``int``, ``float``, ``str``, ``bool``, or ``list[int]``/``list[float]`` written as ``1,2,3`` or
``[1, 2, 3]``; see :func:`kvtheory.params.parse_value`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kvtheory.errors import InputError
from kvtheory.model.workload import Workload
from kvtheory.params import parse_value


@dataclass(frozen=True)
class Generator:
    name: str
    function: Callable[..., Workload]
    kind: str  # "workload" or "adversary"

    @property
    def summary(self) -> str:
        return (inspect.getdoc(self.function) or "").splitlines()[0]

    def parameters(self) -> dict[str, inspect.Parameter]:
        return {n: p for n, p in inspect.signature(self.function).parameters.items() if n != "seed"}


GENERATORS: dict[str, Generator] = {}


def register(name: str, kind: str = "workload") -> Callable:
    """Decorator: make ``function`` reachable as ``kvtheory generate NAME``."""

    def decorate(function: Callable[..., Workload]) -> Callable[..., Workload]:
        if name in GENERATORS:
            raise ValueError(f"generator {name!r} registered twice")
        GENERATORS[name] = Generator(name, function, kind)
        return function

    return decorate


#: the parameter through which a generator is built for a budget (the adversary families' B)
BUDGET_PARAMETER = "B"
#: the parameter that, in a family taking B too, is the slack k = B - L_max + 1 the instance is built for
SLACK_PARAMETER = "k"


def as_text(value: object) -> str:
    """A Python value as the text ``key=value`` would carry it (a list as ``1,2,3``), so that one parser
    checks it: a value of the wrong kind (``turns=2.5`` for a list of counts) is an InputError, never a
    TypeError deep in a generator, and a single count stands for a one-element list."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def generate(
    name: str, params: Mapping[str, object] | None = None, *, seed: int = 0, budget: int | None = None
) -> Workload:
    """Run generator ``name`` with ``params`` (each value parsed by its parameter's annotation, a Python
    value through :func:`as_text`).

    ``budget``: the budget B the workload will be served with. A generator with a budget parameter ``B``
    (the adversary families) is then built for it: ``B`` follows ``budget`` unless ``params`` sets it, and
    a ``B`` in ``params`` that differs from ``budget`` is an InputError (an instance built for one budget
    and served with another is not the adversary its docstring describes). When the family takes the slack
    ``k`` too and ``params`` sets it, the instance must have it: k = B - L_max + 1, else an InputError (the
    star families derive k from B, so a k that the budget contradicts would be silently replaced).

    >>> len(generate("paging", {"pages": "3", "requests": "10"}, seed=1))
    10
    >>> generate("imbalanced", {"k": "2", "n": "3"}, budget=16).max_length   # B = 16: L_max = B - k + 1
    15
    """
    if name not in GENERATORS:
        raise InputError(f"unknown generator {name!r}; known: {', '.join(sorted(GENERATORS))}")
    generator = GENERATORS[name]
    accepted = generator.parameters()
    hints = typing.get_type_hints(generator.function)
    kwargs = {}
    for key, value in (params or {}).items():
        if key not in accepted:
            raise InputError(f"{name} takes no parameter {key!r}; it takes: {', '.join(accepted)}")
        kwargs[key] = parse_value(key, as_text(value), hints.get(key, str))
    if budget is None or BUDGET_PARAMETER not in accepted:
        return generator.function(seed=seed, **kwargs)
    given = kwargs.get(BUDGET_PARAMETER)
    if given is not None and given != budget:
        raise InputError(
            f"{name}: parameter B={given} differs from the budget {budget}; give one of them, or the same value"
        )
    kwargs[BUDGET_PARAMETER] = budget
    workload = generator.function(seed=seed, **kwargs)
    slack = kwargs.get(SLACK_PARAMETER)
    if slack is not None and SLACK_PARAMETER in accepted and budget - workload.max_length + 1 != slack:
        raise InputError(
            f"{name}: parameter k={slack} does not match the budget {budget}: the instance built for B = {budget} "
            f"has k = B - L_max + 1 = {budget - workload.max_length + 1}; give k or the budget, not both"
        )
    return workload
