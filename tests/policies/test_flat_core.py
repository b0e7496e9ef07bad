"""The compiled cores on flat workloads against the per-edge Python policies, hit for hit: every query one radix
edge off the root, edges of one to three tokens, batch sizes 1 to 3, budgets from the footprint up, with
evictions (one-token queries at batch size 1 take the streamed cores: tests/policies/test_flat_stream.py). FIF's
core: tests/optimum/test_compiled_fif.py."""

import numpy as np
import pytest

from kvtheory import Workload
from kvtheory.errors import InputError
from kvtheory.model import workload as workload_module
from kvtheory.model.trie import PrefixTrie
from kvtheory.model.workload import read_workload
from kvtheory.policies import policy_class
from kvtheory.policies.dispatch import compiled_object
from kvtheory.simulate import drive, run_policy


def _flat_instances(seed: int, count: int, max_edge: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        pages = int(rng.integers(2, 12))
        lengths = rng.integers(1, max_edge + 1, size=pages)
        edges = [[p * 100 + i for i in range(int(lengths[p]))] for p in range(pages)]
        queries = [edges[int(rng.integers(0, pages))] for _ in range(int(rng.integers(1, 60)))]
        batch = int(rng.integers(1, 4))
        need = batch * max(len(q) for q in queries)
        yield Workload.from_token_lists(queries), int(rng.integers(need, need + 8)), batch


def _per_edge_hits(workload, budget, name, batch, seed=None):
    cls = policy_class(name)
    return drive(workload, budget, cls(workload.trie, budget, seed=seed), name, batch, seed).query_hits


@pytest.mark.parametrize(("name", "max_edge"), [("lru", 3), ("token-lru", 1), ("fifo", 1), ("lfu", 3)])
def test_radix_core_matches_per_edge_policy(name, max_edge):
    evicted_somewhere = False
    for workload, budget, batch in _flat_instances(7, 150, max_edge):
        assert set(workload.trie.parent[1:]) == {0}  # flat: every edge off the root
        assert compiled_object(policy_class(name), workload.trie, budget) is not None
        fast = run_policy(workload, budget, name, batch=batch, backend="compiled")
        slow = _per_edge_hits(workload, budget, name, batch)
        assert fast.query_hits.tolist() == slow.tolist()
        evicted_somewhere |= workload.trie.distinct_tokens > budget
    assert evicted_somewhere


@pytest.mark.parametrize("name", ["rlt", "random-leaf"])
def test_sampler_core_matches_per_edge_policy_draw_for_draw(name):
    for index, (workload, budget, batch) in enumerate(_flat_instances(13, 150, 3)):
        assert compiled_object(policy_class(name), workload.trie, budget, seed=index) is not None
        fast = run_policy(workload, budget, name, batch=batch, seed=index, backend="compiled")
        slow = _per_edge_hits(workload, budget, name, batch, seed=index)
        assert fast.query_hits.tolist() == slow.tolist()


def test_sampler_core_matches_on_long_runs_with_many_phases():
    rng = np.random.default_rng(17)
    pages = rng.zipf(1.3, size=3000) % 200
    workload = Workload.from_token_lists([[int(p)] for p in pages])
    for name in ("rlt", "random-leaf"):
        for budget in (5, 40):
            fast = run_policy(workload, budget, name, seed=budget, backend="compiled")
            assert fast.query_hits.tolist() == _per_edge_hits(workload, budget, name, 1, seed=budget).tolist()


def test_one_token_trie_is_the_general_construction():
    rng = np.random.default_rng(3)
    for _ in range(100):
        arrays = [np.array([x], dtype=np.int64) for x in rng.integers(-5, 20, size=int(rng.integers(1, 30)))]
        fast = PrefixTrie(arrays)
        general = PrefixTrie.__new__(PrefixTrie)
        general._build_sorted(arrays)
        for name in ("parent", "depth", "edge_len", "children", "end", "tin", "tout"):
            assert getattr(fast, name) == getattr(general, name)


def test_bulk_reader_reads_as_the_checked_reader(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    bulk_used = 0
    for trial in range(150):
        lines = []
        for _ in range(int(rng.integers(1, 8))):
            if rng.random() < 0.15:
                lines.append("")
            else:
                digits = 10 ** int(rng.integers(1, 19))
                tokens = rng.integers(0, digits, size=int(rng.integers(1, 4)))
                lines.append('{"tokens":[' + ",".join(str(int(x)) for x in tokens) + "]}")
        if rng.random() < 0.2:  # a line the bulk reader must leave to the checked one
            lines.append(
                rng.choice(['{"tokens": [1]}', '{"tokens":[01]}', '{"tokens":[]}', '{"tokens":[1],"arrival":2}'])
            )
        path = tmp_path / f"w{trial}.jsonl"
        path.write_text("\n".join(lines) + ("\n" if rng.random() < 0.5 else ""))
        bulk_used += workload_module._read_plain(path.read_bytes(), path) is not None

        def outcome(path=path):
            try:
                w = read_workload(path)
            except InputError as exc:
                return str(exc)
            return [q.tokens.tolist() for q in w], w.lines, w.source

        fast = outcome()
        with monkeypatch.context() as patched:
            patched.setattr(workload_module, "_read_plain", lambda data, path: None)
            assert outcome() == fast
    assert bulk_used > 50
