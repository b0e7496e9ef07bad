"""Named plug-ins: a class registers itself under its ``name`` with a decorator, and is looked up by it.

Eviction policies (:data:`kvtheory.policies.ONLINE_POLICIES`) and routers
(:data:`kvtheory.cluster.routers.ROUTERS`) are kept this way, so adding one is one file:

>>> shapes = Registry("shape")
>>> @shapes.register
... class Square:
...     name = "square"
>>> shapes.lookup("square") is Square
True
>>> shapes.lookup("circle")
Traceback (most recent call last):
...
kvtheory.errors.InputError: unknown shape 'circle'; known shapes: square
"""

from __future__ import annotations

import importlib

from kvtheory.errors import InputError

#: kind of plug-in -> modules still to import before one of that kind is looked up (:func:`add_provider`)
_PROVIDERS: dict[str, list[str]] = {}


def add_provider(kind: str, module: str) -> None:
    """Have ``module`` imported (by name) by :func:`import_providers` for ``kind``: how a module that
    registers plug-ins from a layer above their registry becomes known to it, wired by the one layer
    that knows both (``kvtheory/__init__.py`` names ``adversaries`` for the workload generators), with
    no import going up."""
    _PROVIDERS.setdefault(kind, []).append(module)


def import_providers(kind: str) -> None:
    """Import, once, every module :func:`add_provider` named for ``kind``."""
    for module in _PROVIDERS.pop(kind, []):
        importlib.import_module(module)


class Registry(dict):
    """{name: class}, in registration order. ``kind`` names one entry in messages, ``plural`` several
    (default: English's regular plural of ``kind``: "policy" -> "policies", "router" -> "routers").

    >>> Registry("policy").plural, Registry("router").plural, Registry("index", plural="indices").plural
    ('policies', 'routers', 'indices')
    """

    def __init__(self, kind: str, plural: str | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.plural = plural or _plural(kind)

    def register(self, cls: type) -> type:
        """Class decorator: make ``cls`` known under ``cls.name`` (a name may be taken once)."""
        if cls.name in self:
            raise ValueError(f"{self.kind} {cls.name!r} registered twice")
        self[cls.name] = cls
        return cls

    def lookup(self, name: str) -> type:
        """The class registered under ``name``; InputError naming the known ones otherwise."""
        try:
            return self[name]
        except KeyError:
            raise self.unknown(name) from None

    def unknown(self, name: str, also=()) -> InputError:
        """The error for a name that is not registered, listing every accepted name: the registered ones,
        then ``also`` (names the caller accepts besides them, e.g. ``fif`` and ``opt`` beside the policies)."""
        return InputError(f"unknown {self.kind} {name!r}; known {self.plural}: {', '.join([*self, *also])}")


def _plural(noun: str) -> str:
    """The regular English plural: a consonant + y takes -ies, s/x/z/ch/sh take -es, others -s."""
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"
