"""The streamed flat-trace kernels compiled ahead of time (kvtheory.policies.native, built by kvtheory.warmup at
install): every export serves as numba's kernel does, query for query and draw for draw; an extension built from
other sources than the current ones is never taken; with a current one, a streamed run loads no numba."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from flat_traces import random_traces, write_oracle_general
from strategies import deep_prefix_queries

from kvtheory import Workload, policy_class
from kvtheory.model.traces import flat as flat_module
from kvtheory.model.traces.flat import read_oracle_general
from kvtheory.optimum.fif import run_compiled_fif, run_fif
from kvtheory.optimum.flat_fif import jit_fif_kernels, stream_fif
from kvtheory.policies import native
from kvtheory.policies.base import EVICT_AMOUNTS
from kvtheory.policies.flat_streams import jit_kernels, stream_authors, stream_run, stream_sampler
from kvtheory.policies.radix_core import CompiledRadix


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
        native._current_extension.cache_clear()
        assert native.ahead_of_time() is None
    native._current_extension.cache_clear()


#: the kernels the whole-trie drivers take by name from kvtheory.policies.native.kernels(module)
WHOLE_TRIE = {
    "kvtheory.policies.compiled.radix": ("radix_serve", "cached_prefix_of"),  # radix_core.CompiledRadix
    "kvtheory.optimum.compiled_fif": ("fif_run",),  # optimum.fif.run_compiled_fif
    "kvtheory.experiments.compiled_stack": ("compiled_traversal",),  # experiments.stack_mrc.stack_hits
    "kvtheory.experiments.compiled_fif_stack": ("compiled_fif_traversal",),  # experiments.fif_stack.fif_stack
}


def _whole_trie_runs(trie, budget: int, batch: int, module) -> list:
    """Every whole-trie kernel's results on ``trie``, each taken from ``module(name)`` (the extension, or numba's
    module of the kernel): the radix family at both eviction amounts (hits, final cache and a cached prefix),
    FIF, and on a flat trie the one-pass traversals."""
    results = []
    for name, amount in itertools.product(("lru", "token-lru", "fifo"), EVICT_AMOUNTS):
        policy = CompiledRadix(policy_class(name), trie, budget, evict_amount=amount)
        policy._kernels = module("kvtheory.policies.compiled.radix")
        results += [policy.serve_all(batch).tolist(), policy.kept(), policy.cached_prefix(len(trie.end) - 1)]
    hits, kept = run_compiled_fif(trie, budget, batch, kernels=module("kvtheory.optimum.compiled_fif"))
    results += [hits.tolist(), kept.tolist()]
    if set(trie.parent[1:]) == {0}:  # flat
        ends, parent, edge_len = (trie.column(name) for name in ("end", "parent", "edge_len"))
        budgets = np.arange(1, budget + 1, dtype=np.int64)
        traverse = module("kvtheory.experiments.compiled_stack").compiled_traversal
        results += [traverse(ends, parent, edge_len, budgets, whole).tolist() for whole in (True, False)]
        if int(edge_len.max()) == 1:
            where = module("kvtheory.experiments.compiled_fif_stack").compiled_fif_traversal(ends, parent.size, budgets)
            results += [part.tolist() for part in where]
    return results


@pytest.mark.parametrize("seed", range(4))
def test_every_whole_trie_export_serves_as_numba_does(extension, seed):
    """On random prefix trees (deep shared stems) and flat traces, batch sizes 1-3, budgets from the longest query
    up: the same results from the extension as from numba's kernels, query for query and cache for cache."""
    rng = np.random.default_rng(seed)
    cases = [deep_prefix_queries(rng, 120), [[int(x)] for x in rng.integers(0, 40, size=300)]]
    cases.append([[int(x)] * int(rng.integers(1, 4)) for x in rng.integers(0, 30, size=200)])  # flat, long edges
    for queries, batch in itertools.product(cases, (1, 2, 3)):
        workload = Workload.from_token_lists(queries)
        longest = max(map(len, queries))
        budget = int(rng.integers(batch * longest, 4 * batch * longest + 1))
        assert _whole_trie_runs(workload.trie, budget, batch, lambda _: extension) == _whole_trie_runs(
            workload.trie, budget, batch, importlib.import_module
        )


def test_the_extension_exports_every_kernel_the_drivers_call(extension):
    whole_trie = {name for names in WHOLE_TRIE.values() for name in names}
    called = set(vars(jit_kernels())) | set(vars(jit_fif_kernels())) | whole_trie
    assert called == set(native.EXPORTS)
    assert all(callable(getattr(extension, name)) for name in native.EXPORTS)


def test_the_digest_covers_every_kernel_source():
    """Every module an export's kernel is defined in, and every module whose compiled functions the kernel's module
    holds (what the kernel can call)."""
    covered = {path.resolve() for path in native.SOURCES}
    for where, _ in native.EXPORTS.values():
        module = importlib.import_module(where.split(":")[0])
        for name, value in vars(module).items():
            source = getattr(getattr(value, "py_func", None), "__module__", None)
            if source and source.startswith("kvtheory."):
                path = Path(importlib.import_module(source).__file__).resolve()
                assert path in covered, f"{where}: {name} is defined in {path}, which the digest does not cover"
        assert Path(module.__file__).resolve() in covered
    assert Path(native.__file__).resolve() in covered


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


def _whole_trie_driver_runs(backend: str) -> list[int]:
    """The radix family, LFU-leaf and FIF through their drivers, and both one-pass curves, on ``backend``."""
    from kvtheory.experiments.fif_stack import fif_stack_hits
    from kvtheory.experiments.stack_mrc import stack_hits
    from kvtheory.simulate import run_policy

    compiled = backend == "compiled"
    tree = Workload.from_token_lists([[1, 2, 3], [1, 2, 4], [5], [1, 2, 3], [5, 6]] * 20)
    flat = Workload.from_token_lists([[x % 7] for x in range(200)] + [[x % 3] for x in range(100)])
    misses = [run_policy(tree, 4, p, backend=backend).misses for p in ("lru", "token-lru", "fifo")]
    misses += [run_policy(flat, 4, p, backend=backend).misses for p in ("lru", "lfu")]
    misses += [run_fif(w, 4, backend=backend).misses for w in (tree, flat)]
    misses += stack_hits(flat.trie, [2, 4], whole_node=True, compiled=compiled).tolist()
    return misses + fif_stack_hits(flat.trie, [2, 4], compiled=compiled).tolist()


def test_the_whole_trie_drivers_with_a_current_extension_load_no_numba():
    """Each on its compiled engine, the same results as on the Python one (the general cores of LFU-leaf and the
    samplers are not compiled ahead of time)."""
    if native.ahead_of_time() is None:
        pytest.skip("no current extension in this checkout (test_a_ci_install_builds_a_current_extension)")
    program = (
        "import json, sys\n"
        "from test_ahead_of_time import _whole_trie_driver_runs\n"
        "print(json.dumps(_whole_trie_driver_runs('compiled')))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite'))), file=sys.stderr)"
    )
    path = os.pathsep.join([str(Path(__file__).parent), str(Path(__file__).parents[1])])
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.splitlines()[-1]) == []
    assert json.loads(done.stdout) == _whole_trie_driver_runs("python")
