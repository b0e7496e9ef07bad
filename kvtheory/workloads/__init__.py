"""Workload generators of docs/formats.md §Generators, registered by name (see :mod:`kvtheory.workloads.registry`).

Every module of this package registers its generators on import.
"""

import importlib
import pkgutil

from kvtheory.workloads.registry import GENERATORS, generate, register

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_") and _module.name != "registry":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["GENERATORS", "generate", "register"]
