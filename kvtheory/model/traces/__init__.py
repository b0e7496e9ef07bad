"""Reading workloads in every supported format (docs/formats.md §Trace formats), chosen by ``format`` or
detected from the file.

Formats register as policies do: each module of this package that defines a format decorates its
:class:`~kvtheory.model.traces.base.TraceFormat` subclass with :func:`register_format`, and importing this
package imports every module in it, so a new format is one new file here (or, outside the package, a
class decorated with :func:`register_format` in any module the user imports, e.g. with ``--plugin``).
``--format`` choices, detection and the format list of the docs all come from :data:`TRACE_FORMATS`.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from kvtheory.errors import InputError
from kvtheory.model.traces.base import DEFAULT_BLOCK_SIZE, Sample, TraceFormat
from kvtheory.model.workload import Workload
from kvtheory.registry import Registry

#: every trace format by name: ``--format NAME`` (``auto`` is not a format: it asks for detection)
TRACE_FORMATS: Registry = Registry("format")
register_format = TRACE_FORMATS.register

#: the modules of the formats that came before the registry, imported first so that ``--format`` lists them in
#: the order it always had (auto, kvtheory, mooncake, oracle-general, csv); every other module follows by name
_FIRST = ("jsonl", "mooncake", "oracle_general", "csv_ids")
for _name in sorted(
    (m.name for m in pkgutil.iter_modules(__path__)),
    key=lambda n: (n not in _FIRST, _FIRST.index(n) if n in _FIRST else 0, n),
):
    importlib.import_module(f"{__name__}.{_name}")

from kvtheory.model.traces.mooncake import write_mooncake  # noqa: E402


def format_names() -> tuple[str, ...]:
    """The ``--format`` choices: ``auto`` and every registered format, in registration order (read at call
    time, so a format registered later, by a plug-in, is a choice too)."""
    return ("auto", *TRACE_FORMATS)


def __getattr__(name: str):
    """``FORMATS``: :func:`format_names` as it is now (the name older callers import)."""
    if name == "FORMATS":
        return format_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def format_class(name: str) -> type[TraceFormat]:
    """The format registered as ``name``; InputError listing every accepted name (``auto`` included)."""
    if name not in TRACE_FORMATS:
        raise InputError(f"unknown format {name!r}; known formats: {', '.join(format_names())}")
    return TRACE_FORMATS[name]


def detect_format(path: str | Path) -> str:
    """The format of a file: the registered format whose :meth:`TraceFormat.detect` scores the file's name and
    first 64 KiB highest (the first registered among equals; see :mod:`kvtheory.model.traces.base`)."""
    sample = Sample.of(path)
    best, best_score = None, 0
    for name, cls in TRACE_FORMATS.items():
        score = cls.detect(sample)
        if score > best_score:
            best, best_score = name, score
    if best is None:
        raise InputError(f"{sample.path}: no known format recognises this file; give --format")
    return best


def default_block_size(format: str, path: str | Path | None = None) -> int:
    """The tokens per hash id a format reads by default: its own ``block_size`` (16 for ``bailian``), or
    :data:`DEFAULT_BLOCK_SIZE` (512) for the others; ``auto`` first detects the format of ``path``."""
    if format == "auto":
        format = detect_format(path)
    return format_class(format).block_size or DEFAULT_BLOCK_SIZE


def read_workload(path: str | Path, format: str = "kvtheory", block_size: int | None = None) -> Workload:
    """Read a workload file in ``format`` (one of :func:`format_names`; ``auto`` detects it, as the command
    line does by default).

    ``block_size`` is the tokens per hash id of a block trace; ``None`` takes the format's default
    (:func:`default_block_size`). Every reader raises InputError naming the file and, for text formats, the
    line of the first error.
    """
    cls = TRACE_FORMATS[detect_format(path)] if format == "auto" else format_class(format)
    if block_size is None:
        block_size = cls.block_size or DEFAULT_BLOCK_SIZE
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise InputError(f"--hash-block-size must be a positive integer, got {block_size!r}")
    return cls.read(Path(path), block_size)


__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "TRACE_FORMATS",
    "Sample",
    "TraceFormat",
    "default_block_size",
    "detect_format",
    "format_class",
    "format_names",
    "read_workload",
    "register_format",
    "write_mooncake",
]
