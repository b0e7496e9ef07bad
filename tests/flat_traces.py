"""Flat traces as oracleGeneral files, for the tests of the streamed engines (tests/policies/test_flat_stream.py,
tests/optimum/test_flat_fif.py)."""

import numpy as np

from kvtheory.model.traces.flat import ORACLE_GENERAL


def write_oracle_general(path, ids) -> None:
    """An oracleGeneral file of the requests ``ids`` (int64; stored as the same 64 bits, unsigned)."""
    rows = np.zeros(len(ids), dtype=ORACLE_GENERAL)
    rows["time"] = np.arange(len(ids))
    rows["id"] = np.asarray(ids, dtype=np.int64).view(np.uint64)
    rows.tofile(path)


def random_traces(seed: int, count: int):
    """(ids, budget): up to 4,000 requests over up to 3,000 objects (negative ids and the extreme int64 ones
    too), budgets from 1 to 1,500 (the heap's first 1,024 rows overflow)."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        pages = int(rng.integers(1, 3000))
        ids = rng.integers(-pages, pages, size=int(rng.integers(1, 4000)))
        if trial % 4 == 0:
            ids[::5] = np.iinfo(np.int64).min
            ids[1::7] = np.iinfo(np.int64).max
        yield ids.astype(np.int64), int(rng.integers(1, 1500))
