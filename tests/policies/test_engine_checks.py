"""The engine owns the cache (kvtheory.policies.ledger): a user's policy is served through the engine's books,
its hits are the engine's count, and a decision that breaks the model stops the run with one line naming the
policy, the batch, the token and the rule; on the command line, exit status 2. A correct plug-in written
against the old subclass API keeps its exact misses."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import instances

import kvtheory as kv
from kvtheory.cli import main
from kvtheory.policies.ledger import CacheLedger, CheckedPolicy, ModelViolation

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_policy.py"
sys.path.insert(0, str(PLUGINS))
from legacy_mru import MostRecentLeaf as LegacyMRU  # noqa: E402

#: each wrong plug-in of tests/plugins/wrong_policies.py and the rule the engine names
WRONG = {
    "boaster": r"batch 1 \(query 0\): the policy reports 1000000 hits for query 0, the engine counts 0$",
    "hoarder": r"batch \d+ \(query \d+\): the cache holds \d+ tokens, over the budget B = 40$",
    "one-hit-too-many": r"batch 1 \(query 0\): the policy reports 1 hits for query 0, the engine counts 0$",
    "not-prefix-closed": r"batch \d+ \(query \d+\): token \d+ of query \d+: the cache is not prefix-closed",
}


@pytest.fixture
def workload_file(tmp_path):
    path = tmp_path / "w.jsonl"
    kv.write_workload(kv.generate("gsp", {"groups": 4, "prompts": 4, "lengths": [16, 32]}, seed=1), path)
    return path


@pytest.mark.parametrize("command", ["evict", "ratio"])
@pytest.mark.parametrize("policy", sorted(WRONG))
def test_each_wrong_plugin_is_refused_in_one_line(capsys, workload_file, command, policy):
    plugin = PLUGINS / "wrong_policies.py"
    argv = ["--plugin", str(plugin), command, "--workload", str(workload_file), "--budget", "40"]
    code = main([*argv, "--policy", policy, "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"kvtheory {command}: error: policy '{policy}' broke the model at ")
    assert "Traceback" not in err
    assert re.search(WRONG[policy], err.strip()), err


def test_a_correct_plugin_runs_to_the_same_misses_checked_or_not(capsys, workload_file):
    argv = ["--plugin", str(EXAMPLE), "evict", "--workload", str(workload_file), "--budget", "40"]
    code = main([*argv, "--policy", "mru-leaf", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    workload = kv.read_workload(workload_file)
    rule = kv.policy_class("mru-leaf")
    unchecked = kv.run_policy(workload, 40, rule, check=False)
    assert json.loads(out)["misses"] == kv.run_policy(workload, 40, rule).misses == unchecked.misses


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(instances(max_queries=14, max_length=6, alphabet=3, max_batch=4))
def test_the_old_subclass_api_keeps_its_exact_hits_and_equals_the_rule(instance):
    """The MRU-leaf plug-in written against the 0.1 API (tests/plugins/legacy_mru.py), checked by the engine,
    gives the hits it gave unchecked, and those of the same rule written as a priority (examples/)."""
    workload, budget, batch = instance
    sys.path.insert(0, str(EXAMPLE.parent))
    from custom_policy import MostRecentLeaf

    legacy = kv.run_policy(workload, budget, LegacyMRU, batch=batch).query_hits.tolist()
    assert legacy == kv.run_policy(workload, budget, LegacyMRU, batch=batch, check=False).query_hits.tolist()
    assert legacy == kv.run_policy(workload, budget, MostRecentLeaf, batch=batch).query_hits.tolist()


def _most_requested_first(self, leaf):
    return (-leaf.requests, leaf.edge)


def test_a_subclass_of_lfu_with_a_priority_of_its_own_is_ranked_by_it():
    """LFU-leaf is a PriorityRule whose engine is a heap by LFU's own key: a subclass that ranks by another
    priority is served by the rule's engine, with the hits of the same priority on a plain PriorityRule."""

    class FromLFU(kv.LeafLFU):
        name = "most-requested-from-lfu"
        priority = _most_requested_first

    class FromRule(kv.PriorityRule):
        name = "most-requested-from-rule"
        priority = _most_requested_first

    rng = np.random.default_rng(3)
    workload = kv.Workload.from_token_lists(
        [rng.integers(0, 3, size=int(rng.integers(1, 5))).tolist() for _ in range(40)]
    )
    runs = [kv.run_policy(workload, 8, rule, batch=2).query_hits.tolist() for rule in (FromLFU, FromRule, "lfu")]
    assert runs[0] == runs[1] != runs[2]


def test_built_in_policies_are_served_unchecked_by_default_and_checked_on_request():
    workload = kv.Workload.from_token_lists([[1, 2], [1, 3], [4], [1, 2]] * 5)
    for name in kv.ONLINE_POLICIES:
        plain = kv.run_policy(workload, 4, name, seed=3)
        for backend in ("python", "compiled"):
            checked = kv.run_policy(workload, 4, name, seed=3, backend=backend, check=True)
            assert checked.query_hits.tolist() == plain.query_hits.tolist(), (name, backend)


class _Evicts:
    """A hand-driven policy object: ``serve`` applies the next planned cache and reports ``hits``."""

    whole_node = False

    def __init__(self, trie, plan):
        self.trie, self.plan, self.size = trie, list(plan), 0
        self._kept = {}

    def serve(self, batch):
        hits, self._kept = self.plan.pop(0)
        self.size = sum(self._kept.values())
        return hits

    def kept(self):
        return dict(self._kept)


class _Rule:
    name = "hand"
    whole_node = False


def _ledger_run(queries, budget, plan, amount="shortfall", rule=_Rule):
    trie = kv.Workload.from_token_lists(queries).trie
    checked = CheckedPolicy(_Evicts(trie, plan), rule, budget, amount)
    for j in range(len(queries)):
        checked.serve([j])
    return trie


def _edge(trie, tokens):
    """The trie edge whose path from the root spells ``tokens`` (ending at its last token)."""
    j = next(j for j in range(len(trie.end)) if trie.depth[trie.end[j]] == len(tokens))
    return trie.end[j]


def test_the_engine_refuses_each_rule_word_for_word():
    queries = [[1, 2], [3], [4]]
    trie = kv.Workload.from_token_lists(queries).trie
    a, b, c = (trie.end[j] for j in range(3))
    # over-evicting: [3] fits next to [1, 2] in B = 3, yet [1, 2] went
    with pytest.raises(ModelViolation) as refused:
        _ledger_run(queries, 3, [([0], {a: 2}), ([0], {b: 1})])
    assert str(refused.value) == (
        "policy 'hand' broke the model at batch 2 (query 1): 2 tokens were evicted where the shortfall of 0 "
        "tokens asks for 0: the model evicts exactly the tokens due"
    )
    # prefetch: loading [4] with [3]
    with pytest.raises(ModelViolation, match=r"batch 2 \(query 1\): token 1 of query 2: a token no query"):
        _ledger_run(queries, 4, [([0], {a: 2}), ([0], {a: 2, b: 1, c: 1})])
    # the batch not resident afterwards
    with pytest.raises(ModelViolation, match=r"batch 2 \(query 1\): token 1 of query 1: a token of the batch being"):
        _ledger_run(queries, 4, [([0], {a: 2}), ([0], {a: 2})])
    # a size that is not what the cache holds
    policy = _Evicts(trie, [([0], {a: 2})])
    policy.serve = lambda batch: [0] if not setattr(policy, "_kept", {a: 2}) else [0]
    policy.size = 5
    with pytest.raises(ModelViolation, match="the policy says it caches 5 tokens, its cache holds 2$"):
        CheckedPolicy(policy, _Rule, 4).serve([0])
    # kept() naming no edge, or more tokens than its edge holds
    with pytest.raises(ModelViolation, match=r"kept\(\) names 99, which is not an edge of the workload's trie$"):
        _ledger_run(queries, 4, [([0], {a: 2, 99: 1})])
    with pytest.raises(ModelViolation, match=r"kept\(\) says 3 tokens of an edge of 2$"):
        _ledger_run(queries, 4, [([0], {a: 3})])
    with pytest.raises(ModelViolation, match=r"serve\(\) returned 2 hit counts for 1 queries$"):
        _ledger_run(queries, 4, [([0, 0], {a: 2})])
    with pytest.raises(ModelViolation, match=r"reports True hits for query 0, the engine counts 0$"):
        _ledger_run(queries, 4, [([True], {a: 2})])


def test_allocation_asks_for_the_whole_allocation_or_everything_off_the_paths():
    queries = [[1, 2], [3, 4], [5, 6]]
    trie = kv.Workload.from_token_lists(queries).trie
    a, b, c = (trie.end[j] for j in range(3))
    # B = 4: [5, 6] overflows by 2 and allocates 2 -> 2 tokens due under both amounts
    _ledger_run(queries, 4, [([0], {a: 2}), ([0], {a: 2, b: 2}), ([0], {a: 2, c: 2})], "allocation")
    # B = 5: [3, 4] fits; [5, 6] overflows by 1, allocates 2: the shortfall frees 1, the allocation 2
    _ledger_run(queries, 5, [([0], {a: 2}), ([0], {a: 2, b: 2}), ([0], {a: 1, b: 2, c: 2})], "shortfall")
    _ledger_run(queries, 5, [([0], {a: 2}), ([0], {a: 2, b: 2}), ([0], {b: 2, c: 2})], "allocation")
    with pytest.raises(ModelViolation, match="1 tokens were evicted where the allocation of 2 tokens asks for 2"):
        _ledger_run(queries, 5, [([0], {a: 2}), ([0], {a: 2, b: 2}), ([0], {a: 1, b: 2, c: 2})], "allocation")


def test_a_whole_node_policy_may_free_less_than_one_more_node_than_due():
    """L-LRU frees whole leaf nodes until the batch fits: at least the tokens due, and fewer than due plus the
    longest chain of evicted tokens (its last node was needed)."""

    class WholeNode(_Rule):
        whole_node = True

    queries = [[1, 2, 3], [4], [5, 6]]
    trie = kv.Workload.from_token_lists(queries).trie
    a, b, c = (trie.end[j] for j in range(3))
    # B = 5, [5, 6] overflows by 1: evicting [1, 2, 3] (3 tokens) is one node, allowed
    _ledger_run(queries, 5, [([0], {a: 3}), ([0], {a: 3, b: 1}), ([0], {b: 1, c: 2})], rule=WholeNode)
    # evicting both [1, 2, 3] and [4] frees a node more than needed
    with pytest.raises(ModelViolation, match="4 tokens were evicted where the shortfall of 1 tokens asks for 1"):
        _ledger_run(queries, 5, [([0], {a: 3}), ([0], {a: 3, b: 1}), ([0], {c: 2})], rule=WholeNode)


def test_a_wrong_plugin_is_refused_in_the_cluster_too():
    sys.path.insert(0, str(PLUGINS))
    import importlib

    wrong = importlib.import_module("wrong_policies")
    from kvtheory.cluster.cluster import Cluster
    from kvtheory.cluster.simulation import simulate

    workload = kv.generate("gsp", {"groups": 4, "prompts": 4, "lengths": [16, 32]}, seed=1)
    cluster = Cluster.uniform(2, 40, a_miss=1e-4, a_cached=1e-5, decode_base=1e-2)
    for engine in ("batch", "continuous"):
        with pytest.raises(ModelViolation, match="^policy 'hoarder' broke the model at batch"):
            simulate(workload, cluster, "round-robin", wrong.Hoarder, engine=engine)
    run = simulate(workload, cluster, "round-robin", LegacyMRU)
    assert np.all(run.hits >= 0)


def test_the_ledger_counts_hits_from_the_cache_it_accepted():
    trie = kv.Workload.from_token_lists([[1, 2, 3], [1, 2, 4], [1, 5]]).trie
    ledger = CacheLedger(trie, 10, "hand")
    ledger.kept = {v: trie.edge_len[v] for v in trie.path(0)}
    assert [ledger.hits(j) for j in range(3)] == [3, 2, 1]
