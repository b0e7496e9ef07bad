"""Every loop of every compiled (numba) kernel is bounded by a step limit derived from its input, and ends in
an internal error naming the kernel instead of looping forever (issue 25): a kernel holds the GIL, so
neither pytest-timeout nor a Ctrl-C could stop it.

Every ``while`` loop spends a step counter or advances the variable its test bounds (checked on the source),
each family's limit is shown firing on a corrupted input (a trie whose parent array has a cycle, a treap
that loops on itself, a bit source stuck on a rejected draw), and two known endless-loop mutants (the radix
core's ``run <= tokens`` made ``run < tokens``, which sends ``cut_tail`` past the root; the LFU core's
stale heap entry left on the heap) run in a subprocess and end in the internal error."""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kvtheory
from kvtheory import Workload
from kvtheory.experiments import fif_stack
from kvtheory.optimum import compiled_fif, flat_fif_kernels
from kvtheory.policies.compiled import (
    authors,
    edge_cache,
    flat_authors,
    flat_sampler,
    flat_stream,
    heap,
    marking,
    predictive,
    radix,
    switch,
)
from kvtheory.policies.compiled.radix_layout import T_PARENT
from kvtheory.policies.radix_core import CompiledRadix

KERNEL_MODULES = (radix, authors, heap, flat_stream, edge_cache, predictive, marking, compiled_fif, flat_fif_kernels)
KERNEL_MODULES += (switch, flat_sampler, flat_authors, fif_stack)


def _nested():
    return Workload.from_token_lists([[1, 2, 3], [1, 2, 4], [5]])


def _cyclic(parent: np.ndarray, v: int) -> None:
    """Make trie node ``v`` its own parent: a walk up from it never reaches the root."""
    parent[v] = v


def _counted(loop: ast.While) -> bool:
    """The loop spends a step counter: it opens with ``if rounds_left == 0: raise ...`` and ``rounds_left -= 1``,
    or runs ``while rounds_left > 0`` and opens with ``rounds_left -= 1``."""
    first = loop.body[0]
    spends = ast.unparse(first) == "rounds_left -= 1"
    if ast.unparse(loop.test) == "rounds_left > 0":
        return spends
    return (
        isinstance(first, ast.If)
        and ast.unparse(first.test) == "rounds_left == 0"
        and isinstance(first.body[0], ast.Raise)
        and len(loop.body) > 1
        and ast.unparse(loop.body[1]) == "rounds_left -= 1"
    )


def _advancing(loop: ast.While) -> bool:
    """The loop runs while ``x < y`` and adds 1 to x at its top level before any ``continue``: at most y - x
    rounds, whatever the body does."""
    bounded = {
        compare.left.id
        for compare in ast.walk(loop.test)
        if isinstance(compare, ast.Compare)
        and isinstance(compare.left, ast.Name)
        and isinstance(compare.ops[0], ast.Lt)
        and isinstance(compare.comparators[0], ast.Name)
    }
    for statement in loop.body:
        if ast.unparse(statement) in {f"{name} += 1" for name in bounded}:
            return True
        if any(isinstance(node, ast.Continue) for node in ast.walk(statement)):
            return False
    return False


@pytest.mark.parametrize("module", KERNEL_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_every_kernel_loop_is_bounded(module):
    """A ``for`` runs over a range; a ``while`` spends a step counter derived from its input (raising past it),
    or advances the variable its test bounds by one every round."""
    tree = ast.parse(Path(module.__file__).read_text())
    unbounded = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.While) and not (_counted(node) or _advancing(node))
    ]
    assert unbounded == [], f"{module.__name__} has while loops without a step limit at lines {unbounded}"


@pytest.mark.parametrize(
    ("source", "bounded"),
    [
        ("while v != 0:\n    v = parent[v]", False),
        ("while taken < block:\n    if x:\n        continue\n    taken += 1", False),
        ("while taken < block:\n    taken += 1\n    if x:\n        continue", True),
        ("while v != 0:\n    if rounds_left == 0:\n        raise RuntimeError('x')\n    rounds_left -= 1", True),
        ("while v != 0:\n    rounds_left -= 1\n    v = parent[v]", False),
        ("while rounds_left > 0:\n    rounds_left -= 1", True),
    ],
)
def test_the_boundedness_rule_tells_the_loops_apart(source, bounded):
    loop = ast.parse(source).body[0]
    assert (_counted(loop) or _advancing(loop)) is bounded


def test_radix_walk_up_a_cyclic_trie_is_an_internal_error():
    trie = _nested().trie
    policy = CompiledRadix(kvtheory.policy_class("token-lru"), trie, 4)
    _cyclic(policy._trie[T_PARENT], trie.end[0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel load_path of the compiled radix core"):
        policy.serve([0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel cached_prefix_of of the compiled cores"):
        policy.cached_prefix(0)


def test_lfu_walk_up_a_cyclic_trie_is_an_internal_error():
    trie = _nested().trie
    policy = edge_cache.CompiledLFU(kvtheory.policy_class("lfu"), trie, 4)
    _cyclic(policy._state.parent, trie.end[1])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel run_batches of the compiled edge-cache core"):
        policy.serve([1])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel cached_prefix_of of the compiled cores"):
        policy.cached_prefix(1)


def test_sampler_walk_up_a_cyclic_trie_is_an_internal_error():
    trie = _nested().trie
    policy = edge_cache.CompiledLeafSampler(kvtheory.policy_class("rlt"), trie, 4, seed=0, min_block=64)
    _cyclic(policy._state.parent, trie.end[0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel run_batches of the compiled edge-cache core"):
        policy.serve([0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel cached_prefix_of of the compiled cores"):
        policy.cached_prefix(0)


def test_predictive_marker_walk_up_a_cyclic_trie_is_an_internal_error():
    workload = _nested()
    told = kvtheory.predict(workload.trie, [[0], [1], [2]], "oracle")
    rule = kvtheory.policy_class("predictive-marker")
    policy = predictive.CompiledPredictiveMarker(rule, workload.trie, 4, predictions=told)
    _cyclic(policy._parent, workload.trie.end[0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel serve_batches of the compiled predictive-marker"):
        policy.serve([0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel cached_prefix_of of the compiled cores"):
        policy.cached_prefix(0)


@pytest.mark.parametrize("name", ["guard", "lnonmarker"])
def test_guard_and_lnonmarker_walk_up_a_cyclic_trie_is_an_internal_error(name):
    workload = _nested()
    told = kvtheory.predict(workload.trie, [[0], [1], [2]], "oracle")
    rule = kvtheory.policy_class(name)
    policy = rule.compiled_told(workload.trie, 4, told)
    _cyclic(policy._parent, workload.trie.end[0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel serve_batches of the compiled guard/lnonmarker"):
        policy.serve([0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel cached_prefix_of of the compiled cores"):
        policy.cached_prefix(0)


def test_bo_rlt_switch_walk_up_a_cyclic_trie_is_an_internal_error():
    workload = _nested()
    told = kvtheory.predict(workload.trie, [[0], [1], [2]], "oracle")
    policy = kvtheory.policy_class("bo-rlt-switch").compiled_told(workload.trie, 4, told)
    _cyclic(policy._parent, workload.trie.end[0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel serve_batches of the compiled bo-rlt-switch"):
        policy.serve([0])
    with pytest.raises(RuntimeError, match=r"^internal error: kernel cached_prefix_of of the compiled cores"):
        policy.cached_prefix(0)


def test_sampler_draw_from_a_stuck_bit_source_is_an_internal_error():
    """A bit source stuck at 0 is rejected for ever below 3 (Lemire's threshold is 1 there)."""
    from numba import cfunc, types

    @cfunc(types.uint32(types.voidptr))
    def stuck(state):
        return 0

    with pytest.raises(RuntimeError, match=r"^internal error: kernel bounded_draw of the compiled edge-cache core"):
        edge_cache.bounded_draw(stuck.ctypes, 0, 3)


def test_authors_treap_walk_on_a_looping_treap_is_an_internal_error():
    """A treap whose root is its own right child (node 0, all zero) and holds no candidate."""
    nodes = np.zeros((8, authors.TREE_ROWS + len(authors._ROWS)), dtype=np.int64).T  # node-major, as in the core
    scalars = np.zeros(authors.N_SCALARS, dtype=np.int64)
    scalars[authors.C_TREAP] = 0
    assert authors._candidate(nodes, scalars, 0) == -1  # the descent's own answer: past its limit
    lists = np.zeros((6, 8), dtype=np.int64)
    scalars[authors.C_EVICTION] = 1  # no slot of this eviction is set: the slot is the candidate's
    with pytest.raises(RuntimeError, match=r"^internal error: kernel _candidate of the compiled rlt-authors core"):
        authors._slot(lists, scalars, nodes, 0)


def test_streamed_authors_fenwick_update_at_a_corrupted_stamp_is_an_internal_error():
    """Stamp 0 (no node's): its lowest bit is 0, so the update's index never moves."""
    fenwick = np.zeros(9, dtype=np.int64)
    with pytest.raises(RuntimeError, match=r"^internal error: kernel _add of the streamed rlt-authors core"):
        flat_authors._add(fenwick, 0, 1)


def test_fif_walk_up_a_cyclic_trie_is_an_internal_error():
    trie = _nested().trie
    parent = np.asarray(trie.parent, dtype=np.int64)
    _cyclic(parent, trie.end[2])
    depth = np.asarray(trie.depth, dtype=np.int64)
    ends = np.asarray(trie.end, dtype=np.int64)
    with pytest.raises(RuntimeError, match=r"^internal error: kernel _occurrences of the compiled FIF core"):
        compiled_fif.fif_run(parent, depth, ends, 4, 1, 3)


# -- mutants that looped forever before the step limits -------------------------------------------------
def _mutant_source(module, functions: tuple[str, ...], old: str, new: str) -> str:
    """A module that takes every name of ``module`` and redefines ``functions`` (their source, ``old``
    replaced by ``new`` once): its kernels call the mutated ones, everything else is the real module's."""
    parts = [f"from {module.__name__} import *  # noqa: F403\nimport {module.__name__} as _real\n"]
    parts.append("globals().update({k: v for k, v in vars(_real).items() if not k.startswith('__')})\n")
    for name in functions:
        parts.append("\n\n" + inspect.getsource(getattr(module, name).py_func))
    source = "".join(parts)
    assert source.count(old) == 1, f"the mutation's text {old!r} is not once in {functions}"
    return source.replace(old, new)


MUTANTS = {
    "radix_run_lt": (radix, ("_evict", "radix_serve"), "if whole or run <= tokens:", "if whole or run < tokens:"),
    "lfu_stale_kept": (
        edge_cache,
        ("_lfu_evict", "run_batches"),
        "            heap_pop(heap[0], heap[1], counters)\n            continue",
        "            continue",
    ),
}

DRIVER = textwrap.dedent(
    """
    import numpy as np

    import kvtheory
    from kvtheory import Workload
    from kvtheory.policies.radix_core import CompiledRadix

    import radix_run_lt
    import lfu_stale_kept
    from kvtheory.policies.compiled.edge_cache import CompiledLFU

    def report(run):
        try:
            run()
        except RuntimeError as exc:
            print(str(exc).splitlines()[0])
        else:
            print("no error")

    def radix_mutant():  # token-LRU on [[0], [1, 0]] at B = 2: the leaf [0] is cut to nothing
        trie = Workload.from_token_lists([[0], [1, 0]]).trie
        p = CompiledRadix(kvtheory.policy_class("token-lru"), trie, 2)
        ends = np.asarray(trie.end, dtype=np.int64)
        radix_run_lt.radix_serve(p._trie, p._state, p._nodes, p._heap, p._scalars, p._path, ends, 1,
                                 np.zeros(ends.size, dtype=np.int64))

    def lfu_mutant():  # LFU-leaf on [[1], [1], [2]] at B = 1: the hit leaves a stale entry on the heap's top
        trie = Workload.from_token_lists([[1], [1], [2]]).trie
        p = CompiledLFU(kvtheory.policy_class("lfu"), trie, 1)
        ends = np.asarray(trie.end, dtype=np.int64)
        lfu_stale_kept.run_batches(ends, 1, np.zeros(ends.size, dtype=np.int64), *p._state.arrays(), 1, *p._bits,
                                   lfu_stale_kept.LFU, False, 1)

    report(radix_mutant)
    report(lfu_mutant)
    """
)


def _mutant_folder() -> Path:
    """The mutants' modules, in a folder named after the kernels' sources, so numba's cache of them (next to
    them) is reused from run to run and never outlives a change of the real modules they call into."""
    digest = hashlib.sha256()
    for module in KERNEL_MODULES:
        digest.update(Path(module.__file__).read_bytes())
    folder = Path(tempfile.gettempdir()) / f"kvtheory-step-limit-mutants-{digest.hexdigest()[:16]}"
    folder.mkdir(exist_ok=True)
    for name, (module, functions, old, new) in MUTANTS.items():
        path = folder / f"{name}.py"
        source = _mutant_source(module, functions, old, new)
        if not path.exists() or path.read_text() != source:  # rewritten, its cache would be stale
            temporary = folder / f"{name}.{os.getpid()}.tmp"
            temporary.write_text(source)
            os.replace(temporary, path)
    return folder


@pytest.mark.slow
def test_endless_loop_mutants_end_in_an_internal_error():
    folder = _mutant_folder()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=150, cwd=folder
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a mutant kernel hung: its loop has no step limit")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "internal error: kernel cut_tail of the compiled radix core exceeded its step limit of one step per trie node",
        "internal error: kernel _lfu_evict of the compiled edge-cache core exceeded its step limit of heap entries + "
        "tokens + 1 rounds",
    ]
