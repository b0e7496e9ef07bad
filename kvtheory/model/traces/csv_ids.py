"""The ``csv`` format: CSV or plain-text object ids (docs/formats.md §Flat cache traces), read by
:func:`kvtheory.model.traces.flat.read_csv_ids`."""

from __future__ import annotations

from pathlib import Path

from kvtheory.model.traces import register_format
from kvtheory.model.traces.base import BY_NAME, FALLBACK, Sample, TraceFormat
from kvtheory.model.traces.flat import read_csv_ids
from kvtheory.model.workload import Workload


@register_format
class CsvFormat(TraceFormat):
    name = "csv"
    summary = "CSV or plain text: an object id in each line's first field, read as one-token queries"

    @classmethod
    def read(cls, path: Path, block_size: int) -> Workload:
        return read_csv_ids(path)

    @classmethod
    def detect(cls, sample: Sample) -> int:
        """A name ending in ``.csv`` or ``.txt`` (any case); else text that does not start with a JSON
        object."""
        if sample.name.endswith((".csv", ".txt")):
            return BY_NAME
        return FALLBACK if sample.first_line is None and sample.is_text else 0
