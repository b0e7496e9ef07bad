"""The streamed flat-trace kernels compiled ahead of time (kvtheory.policies.native, built by kvtheory.warmup at
install): every export serves as numba's kernel does, query for query and draw for draw; an extension built from
other sources than the current ones is never taken; with a current one, a streamed run loads no numba."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from flat_traces import random_traces, write_oracle_general

from kvtheory.model.traces import flat as flat_module
from kvtheory.model.traces.flat import read_oracle_general
from kvtheory.optimum.flat_fif import jit_fif_kernels, stream_fif
from kvtheory.policies import native
from kvtheory.policies.flat_streams import jit_kernels, stream_authors, stream_run, stream_sampler


@pytest.fixture(scope="module")
def extension(tmp_path_factory):
    """The installed extension when it is current, else one built here (about 10 s) and loaded from its file."""
    current = native.ahead_of_time()
    if current is not None:
        return current
    from kvtheory.warmup import build_ahead_of_time

    path = build_ahead_of_time(str(tmp_path_factory.mktemp("ahead")))
    spec = importlib.util.spec_from_file_location("built_here._ahead", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_ci_install_builds_a_current_extension():
    """`pip install -e .` (what CI runs) builds it; elsewhere (a wheel, an edited kernel) its absence is allowed."""
    if os.environ.get("CI") != "true" and native.ahead_of_time() is None:
        pytest.skip("no current extension in this checkout (python -m kvtheory.warmup builds it)")
    assert native.ahead_of_time() is not None


def _streamed_hits(columns, budget: int, seed: int, kernels, fif_kernels) -> list[list[int]]:
    """Every query's hits of each streamed run (the radix family with and without refresh, LFU-leaf, RLT,
    random-leaf, rlt-authors, FIF) on ``kernels``."""
    hits = [
        stream_run(columns.id_chunks(), budget, "radix", refresh=refresh, query_hits=True, kernels=kernels)[1]
        for refresh in (True, False)
    ]
    hits.append(stream_run(columns.id_chunks(), budget, "lfu", query_hits=True, kernels=kernels)[1])
    for marking in (True, False):
        run = stream_sampler(columns.id_chunks(), budget, marking=marking, seed=seed, query_hits=True, kernels=kernels)
        hits.append(run[1])
    hits.append(stream_authors(columns.id_chunks(), budget, seed=seed, query_hits=True, kernels=kernels)[1])
    hits.append(stream_fif(columns, budget, query_hits=True, kernels=fif_kernels)[1])
    return [run.tolist() for run in hits]


@pytest.mark.parametrize("seed", [0, 1])
def test_every_export_serves_as_numba_does(tmp_path, monkeypatch, extension, seed):
    monkeypatch.setattr(flat_module, "CHUNK_RECORDS", 97)
    jit, fif_jit = jit_kernels(), jit_fif_kernels()
    path = tmp_path / "t.oracleGeneral"
    for ids, budget in random_traces(seed, 8):
        write_oracle_general(path, ids)
        columns = read_oracle_general(path).queries
        assert _streamed_hits(columns, budget, seed, extension, extension) == _streamed_hits(
            columns, budget, seed, jit, fif_jit
        )


def test_the_wide_fif_exports_equal_the_narrow_ones(extension):
    """The int64 next-use exports (from 2**31 requests on) on a trace small enough for both widths."""
    nodes = np.array([1, 2, 3, 1, 4, 2, 5, 1, 3, 2], dtype=np.int64)
    results = []
    for width, dtype in (("i4", np.int32), ("i8", np.int64)):
        next_use = np.empty(nodes.size, dtype=dtype)
        getattr(extension, f"next_uses_{width}")(nodes, 0, nodes.size, np.zeros(6, dtype=np.int64), next_use)
        hits = np.empty(nodes.size, dtype=np.int64)
        rows = np.zeros((2, 6), dtype=np.int64)
        heap = np.empty((4, 3), dtype=np.int64)
        state = np.zeros(1, dtype=np.int64)
        getattr(extension, f"fif_chunk_{width}")(nodes, nodes, 0, next_use, hits, 2, state, rows[0], rows[1], heap)
        results.append((next_use.tolist(), hits.tolist()))
    assert results[0] == results[1] and sum(results[0][1]) > 0


def test_a_kernel_error_is_the_same_one_line(tmp_path, extension):
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, np.array([3, 1, 2]))
    for kernels in (extension, jit_kernels()):
        with pytest.raises(RuntimeError, match="^nothing left to evict: the batch footprint exceeds the budget$"):
            stream_authors(read_oracle_general(path).queries.id_chunks(), 0, seed=0, kernels=kernels)


def test_an_extension_built_from_other_sources_is_not_taken(tmp_path, monkeypatch):
    digest = tmp_path / "_ahead.digest"
    monkeypatch.setattr(native, "DIGEST_FILE", digest)
    for written in (None, "0" * 64, native.sources_digest()[::-1]):
        if written is not None:
            digest.write_text(written + "\n")
        native.ahead_of_time.cache_clear()
        assert native.ahead_of_time() is None
    native.ahead_of_time.cache_clear()


def test_the_extension_exports_every_kernel_the_drivers_call(extension):
    called = set(vars(jit_kernels())) | set(vars(jit_fif_kernels()))
    assert called == set(native.EXPORTS)
    assert all(callable(getattr(extension, name)) for name in native.EXPORTS)


def test_the_digest_covers_every_kernel_source():
    compiled = {path.name for path in native.SOURCES if path.parent.name == "compiled"}
    assert {"flat_stream.py", "flat_sampler.py", "flat_authors.py", "sampler.py", "flat.py"} <= compiled
    assert {"flat_fif_kernels.py", "native.py"} <= {path.name for path in native.SOURCES}


def test_a_streamed_evict_with_a_current_extension_loads_no_numba(tmp_path):
    if native.ahead_of_time() is None:
        pytest.skip("no current extension in this checkout (test_a_ci_install_builds_a_current_extension)")
    path = tmp_path / "t.oracleGeneral"
    write_oracle_general(path, np.random.default_rng(0).integers(0, 50, size=2000))
    program = (
        "import json, sys\nfrom kvtheory.cli import main\n"
        f"main(['evict', '--policy', 'rlt-authors', '--workload', {str(path)!r}, '--budget', '10', '--json',"
        " '--backend', 'compiled'])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite'))), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.splitlines()[-1]) == []
    assert json.loads(done.stdout)["misses"] > 0
