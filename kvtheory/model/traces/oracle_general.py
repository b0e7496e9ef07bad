"""The ``oracle-general`` format: libCacheSim's oracleGeneral binary (docs/formats.md §Flat cache traces),
read by :func:`kvtheory.model.traces.flat.read_oracle_general`."""

from __future__ import annotations

from pathlib import Path

from kvtheory.model.traces import register_format
from kvtheory.model.traces.base import BY_NAME, FALLBACK, Sample, TraceFormat
from kvtheory.model.traces.flat import read_oracle_general
from kvtheory.model.workload import Workload


@register_format
class OracleGeneralFormat(TraceFormat):
    name = "oracle-general"
    summary = "libCacheSim's oracleGeneral binary: 24-byte records, read as one-token queries"

    @classmethod
    def read(cls, path: Path, block_size: int) -> Workload:
        return read_oracle_general(path)

    @classmethod
    def detect(cls, sample: Sample) -> int:
        """A name ending in ``.oracleGeneral`` or ``.bin`` (any case); else binary content (not UTF-8, or a
        NUL byte) that does not start with a JSON object."""
        if sample.name.endswith((".oraclegeneral", ".bin")):
            return BY_NAME
        return FALLBACK if sample.first_line is None and not sample.is_text else 0
