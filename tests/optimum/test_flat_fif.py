"""FIF streamed over a flat trace (kvtheory.optimum.flat_fif) against the compiled FIF core on the whole trie,
hit for hit, on random oracleGeneral files read in small chunks, ties among objects never requested again
included (decided by the larger id, as the trie's node order does); and run_fif streams such a file."""

import numpy as np
from flat_traces import random_traces, write_oracle_general

from kvtheory.model.traces import flat as flat_module
from kvtheory.model.traces.flat import read_oracle_general
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import run_compiled_fif, run_fif
from kvtheory.optimum.flat_fif import stream_fif


def test_streamed_fif_equals_the_compiled_core(tmp_path, monkeypatch):
    monkeypatch.setattr(flat_module, "CHUNK_RECORDS", 89)
    path = tmp_path / "t.oracleGeneral"
    for ids, budget in random_traces(11, 25):
        write_oracle_general(path, ids)
        trie = Workload.from_token_lists([[x] for x in ids.tolist()]).trie
        expected = run_compiled_fif(trie, budget, 1)[0]
        total, hits = stream_fif(read_oracle_general(path).queries, budget, query_hits=True)
        assert hits.tolist() == expected.tolist() and total == int(expected.sum())


def test_run_fif_streams_an_oracle_general_file(tmp_path):
    ids = np.random.default_rng(2).integers(0, 200, size=1500)
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, ids)
    streamed = run_fif(read_oracle_general(path), 40, backend="compiled")
    whole = run_fif(Workload.from_token_lists([[x] for x in ids.tolist()]), 40, backend="python")
    assert streamed.query_hits is None and streamed.misses == whole.misses
