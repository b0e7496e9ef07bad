"""One registry for every workload generator and adversary family, by name.

Generators register themselves on import (the ``register`` decorator): :mod:`kvtheory.workloads` imports
its generator modules, and the public API (``import kvtheory``, which any import of a kvtheory module
runs first) imports :mod:`adversaries`, so every name is known before ``generate`` runs, and this module
imports nothing above it.

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


def generate(name: str, params: Mapping[str, object] | None = None, *, seed: int = 0) -> Workload:
    """Run generator ``name`` with ``params`` (strings are parsed by the parameter's annotation).

    >>> len(generate("paging", {"pages": "3", "requests": "10"}, seed=1))
    10
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
        kwargs[key] = parse_value(key, value, hints.get(key, str)) if isinstance(value, str) else value
    return generator.function(seed=seed, **kwargs)
