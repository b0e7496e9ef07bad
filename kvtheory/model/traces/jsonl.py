"""The ``kvtheory`` format: JSON Lines of token lists (docs/formats.md §Workload files), read by
:func:`kvtheory.model.workload.read_workload`."""

from __future__ import annotations

from pathlib import Path

from kvtheory.model import workload as jsonl
from kvtheory.model.traces import register_format
from kvtheory.model.traces.base import BY_SHAPE, Sample, TraceFormat
from kvtheory.model.workload import Workload


@register_format
class KvtheoryFormat(TraceFormat):
    name = "kvtheory"
    summary = 'kvtheory JSON Lines: one {"tokens": [...]} per query'

    @classmethod
    def read(cls, path: Path, block_size: int) -> Workload:
        return jsonl.read_workload(path)

    @classmethod
    def detect(cls, sample: Sample) -> int:
        """Any file whose first line is a JSON object (a more specific JSON format outranks it)."""
        return BY_SHAPE if sample.first_line is not None else 0
