"""Compiled code without numba at run time: kernels compiled ahead of time, at install.

Loading numba and one cached kernel costs a process about 0.55 s of CPU, more than libCacheSim's C LRU takes to
serve a million requests, or kvcache-simulator to draw three miss-ratio curves of a Mooncake trace. The kernels
that serve flat traces streamed at batch size 1 (the radix family, LFU-leaf, RLT, random-leaf, rlt-authors, FIF)
and the whole-trie cores of the radix family, FIF and the one-pass miss-ratio curves
(:data:`EXPORTS`) are therefore also compiled ahead of time into one extension module,
``kvtheory/policies/compiled/_ahead`` (numba's ``pycc``, run by ``python -m kvtheory.warmup``, which ``pip install
-e .`` runs), from the very functions the just-in-time path compiles: one source, two ways of compiling it. A run
takes the extension when it is there and was built from the sources as they are now (:func:`ahead_of_time`: a
digest of every kernel source file, written beside it at build time, must match); otherwise, after an edit of a
kernel or in an installed wheel, it takes numba's kernels (:func:`kernels`), with the same results. Which one is a
fact of the installation, never of what the process has imported. The general cores of LFU-leaf, the samplers,
rlt-authors and the policies with predictions stay just-in-time: their runs are long enough to repay numba's load.

A kernel that draws takes the bit generator's ``next_uint32`` C function and state address (:func:`bit_source`);
in the extension, the function is unboxed by :func:`function_address`, so that calling it loads no numba.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib
from pathlib import Path

import numpy as np

PACKAGE = Path(__file__).resolve().parents[1]
#: the extension module and the digest of the sources it was built from
EXTENSION = "kvtheory.policies.compiled._ahead"
DIGEST_FILE = PACKAGE / "policies" / "compiled" / "_ahead.digest"
#: every file whose code the extension holds (the kernels and what they call), and this table
SOURCES = (
    *sorted((PACKAGE / "policies" / "compiled").glob("*.py")),
    PACKAGE / "optimum" / "flat_fif_kernels.py",
    PACKAGE / "optimum" / "compiled_fif.py",
    *(PACKAGE / "experiments" / name for name in ("stack_mrc.py", "compiled_stack.py")),
    *(PACKAGE / "experiments" / name for name in ("fif_stack.py", "compiled_fif_stack.py")),
    Path(__file__).resolve(),
)

_FLAT = "kvtheory.policies.compiled.flat_stream"
_FIF = "kvtheory.optimum.flat_fif_kernels"
#: name in the extension -> (the numba function compiled, its signature; ``draw`` is the bit generator's
#: ``next_uint32``). FIF's next-use array is int32 below 2**31 requests, int64 from there: one export each.
EXPORTS = {
    "dense_ids": (f"{_FLAT}:dense_ids", "i8[:, ::1](i8[::1], i8[:, ::1], i8[::1], i8[::1])"),
    "radix_chunk": (f"{_FLAT}:radix_chunk", "void(i8[::1], i8[::1], i8, b1, i8[::1], i8[::1], i8[::1], i8[::1])"),
    "lfu_chunk": (
        f"{_FLAT}:lfu_chunk",
        "i8[:, ::1](i8[::1], i8[::1], i8, i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[:, ::1])",
    ),
    "sampler_chunk": (
        "kvtheory.policies.compiled.flat_sampler:sampler_chunk",
        "void(i8[::1], i8[::1], i8[::1], i8, b1, i8[::1], i8[:, ::1], draw, i8)",
    ),
    "authors_chunk": (
        "kvtheory.policies.compiled.flat_authors:authors_chunk",
        "UniTuple(i8[::1], 2)(i8[::1], i8[::1], i8, i8[::1], i8[:, ::1], i8[::1], i8[::1], draw, i8)",
    ),
    # whole-trie cores, under their names in the numba module that :func:`kernels` falls back on: the radix
    # family's (kvtheory.policies.radix_core), FIF's (kvtheory.optimum.fif) and the one-pass miss-ratio curves'
    # (kvtheory.experiments.stack_mrc, fif_stack)
    "radix_serve": (
        "kvtheory.policies.compiled.radix:radix_serve",
        "UniTuple(i8[:, ::1], 2)(i8[:, ::1], i8[:, ::1], i8[:, ::1], i8[:, ::1], i8[::1], i8[::1], i8[::1], i8,"
        " i8[::1])",
    ),
    "cached_prefix_of": ("kvtheory.policies.compiled.radix:cached_prefix_of", "i8(i8[::1], i8[::1], i8)"),
    "fif_run": ("kvtheory.optimum.compiled_fif:fif_run", "UniTuple(i8[::1], 2)(i8[::1], i8[::1], i8[::1], i8, i8, i8)"),
    "compiled_traversal": (
        "kvtheory.experiments.compiled_stack:compiled_traversal",
        "i8[::1](i8[::1], i8[::1], i8[::1], i8[::1], b1)",
    ),
    "compiled_fif_traversal": (
        "kvtheory.experiments.compiled_fif_stack:compiled_fif_traversal",
        "UniTuple(i8[::1], 2)(i8[::1], i8, i8[::1])",
    ),
    **{
        f"next_uses_{width}": (f"{_FIF}:next_uses", f"void(i8[::1], i8, i8, i8[::1], {width}[::1])")
        for width in ("i4", "i8")
    },
    **{
        f"fif_chunk_{width}": (
            f"{_FIF}:fif_chunk",
            f"i8[:, ::1](i8[::1], i8[::1], i8, {width}[::1], i8[::1], i8, i8[::1], i8[::1], i8[::1], i8[:, ::1])",
        )
        for width in ("i4", "i8")
    },
}


def bit_source(rng: np.random.Generator) -> tuple:
    """(the bit generator's next_uint32 C function, the address of its state) for a compiled kernel, which draws
    through them as numpy's own ``rng.integers`` does (passing ``rng`` itself to a numba function costs about
    9 us a call, these two about 1 us)."""
    bits = rng.bit_generator.ctypes
    return bits.next_uint32, bits.state_address


def function_address(function) -> int:
    """The address of a ctypes C function (how the extension unboxes ``draw``, without numba)."""
    return ctypes.cast(function, ctypes.c_void_p).value


def sources_digest() -> str:
    """SHA-256 of every file in :data:`SOURCES`, names and contents."""
    digest = hashlib.sha256()
    for path in SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


#: set while :func:`just_in_time` runs: every driver then takes numba's kernels
_JUST_IN_TIME = [False]


@contextlib.contextmanager
def just_in_time():
    """numba's kernels for every run inside the block, the extension ignored (the install's warm-up, which compiles
    numba's kernels whether or not the extension is current)."""
    outside = _JUST_IN_TIME[0]
    _JUST_IN_TIME[0] = True
    try:
        yield
    finally:
        _JUST_IN_TIME[0] = outside


def kernels(module: str):
    """The extension compiled ahead of time when it is current, else the numba module ``module`` (which loads
    numba): either holds ``module``'s kernels that :data:`EXPORTS` names, under the same names."""
    return ahead_of_time() or importlib.import_module(module)


def ahead_of_time():
    """The extension module when it is built and current (its digest file names the sources as they are now),
    else None (and None inside :func:`just_in_time`)."""
    return None if _JUST_IN_TIME[0] else _current_extension()


@functools.cache
def _current_extension():
    try:
        current = DIGEST_FILE.read_text().strip() == sources_digest()
    except OSError:
        return None
    if not current:
        return None
    try:
        return importlib.import_module(EXTENSION)
    except ImportError:
        return None
