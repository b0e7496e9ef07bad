"""Workload generators of MODEL.md §4, registered by name (see :mod:`kvtheory.workloads.registry`)."""

from kvtheory.workloads.registry import GENERATORS, generate, register

__all__ = ["GENERATORS", "generate", "register"]
