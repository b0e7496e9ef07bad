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
    """{name: class}, in registration order."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

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
            raise InputError(f"unknown {self.kind} {name!r}; known {self.kind}s: {', '.join(self)}") from None
