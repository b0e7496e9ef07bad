"""Switching the compiled cores off in this process, where numba is loaded (tests/conftest.py), so that a test
reaches the per-edge path a short run takes in a fresh process."""

from __future__ import annotations

import contextlib
import sys
from unittest import mock

from kvtheory.policies import compiled


@contextlib.contextmanager
def per_edge_paths():
    """``core_pays_off`` answers False in every module that consults it, as in a short run without numba."""
    consulting = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("kvtheory") and getattr(module, "core_pays_off", None) is compiled.core_pays_off
    ]
    with contextlib.ExitStack() as stack:
        for module in consulting:
            stack.enter_context(mock.patch.object(module, "core_pays_off", lambda *args, **kwargs: False))
        yield
