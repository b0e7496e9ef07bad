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

from kvtheory.errors import InputError


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
