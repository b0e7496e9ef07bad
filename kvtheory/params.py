"""Values of ``key=value`` parameters from the command line and sweep specs, parsed by their kind.

One parser for generator parameters (``--param``, kind from the generator's annotations) and router
options (``--router-opt``, kind from the option's default).

>>> parse_value("lengths", "[16, 32]", list[int]), parse_value("lengths", "16,32", list[int])
([16, 32], [16, 32])
>>> parse_value("grouped", "yes", bool), parse_value("rate", "2", None), parse_value("rate", "2.5", None)
(True, 2, 2.5)
>>> parse_value("k", "x", int)
Traceback (most recent call last):
...
kvtheory.errors.InputError: parameter k='x' is not a valid int
"""

from __future__ import annotations

import typing

from kvtheory.errors import InputError

TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


def parse_value(key: str, text: str, kind, *, what: str = "parameter") -> object:
    """``text`` as a value of ``kind``: int, float, str, bool (true/false, 1/0, yes/no), ``list[int]`` or
    ``list[float]`` (written ``1,2,3`` or ``[1, 2, 3]``), or None for a number (int when integral)."""
    text = text.strip()
    try:
        if typing.get_origin(kind) in (list, tuple):
            (item,) = set(typing.get_args(kind)) - {Ellipsis}
            inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
            return [item(part.strip()) for part in inner.split(",") if part.strip()]
        if kind is bool:
            if text.lower() not in TRUE + FALSE:
                raise ValueError
            return text.lower() in TRUE
        if kind is None:
            return int(text) if text.lstrip("+-").isdigit() else float(text)
        return kind(text)
    except (TypeError, ValueError):
        name = "number" if kind is None else getattr(kind, "__name__", str(kind))
        raise InputError(f"{what} {key}={text!r} is not a valid {name}") from None
