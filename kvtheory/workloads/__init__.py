"""Workload generators of docs/formats.md §Generators, registered by name (see :mod:`kvtheory.workloads.registry`).

Every module of this package registers its generators on import; so do the modules that
:func:`kvtheory.registry.add_provider` names for "generator" (the adversary families), imported at the end
of this package, so that every name is known wherever ``generate`` can be reached.
"""

import importlib
import pkgutil

from kvtheory.registry import import_providers
from kvtheory.workloads.registry import GENERATORS, generate, register

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "registry":
        importlib.import_module(f"{__name__}.{_module.name}")
import_providers("generator")

__all__ = ["GENERATORS", "generate", "register"]
