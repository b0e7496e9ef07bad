"""Constructed worst-case request sequences for each bound of docs/claims.md, and random prefix-tree
generators. Every module here registers its families in :mod:`kvtheory.workloads.registry`, so each is
reachable as ``kvtheory generate NAME``."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
