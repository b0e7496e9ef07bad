"""How much is evicted (docs/policies.md §How much is evicted): shortfall or allocation, through the public
API, every command that serves a workload, sweep specs and the cluster's workers, recorded in the output."""

from __future__ import annotations

import json
from functools import partial

import pytest

from kvtheory import InputError, Workload, competitive_ratio, run_policy
from kvtheory.cli import main
from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.simulation import Simulation
from kvtheory.experiments.grid import cell_id, expand
from kvtheory.experiments.mrc import miss_ratio_curve
from kvtheory.experiments.sweep import run_cell
from kvtheory.policies import ONLINE_POLICIES, EvictionPolicy, LeafLFU, LeafLRU, RandomizedLeafToken
from kvtheory.policies.base import check_evict_amount
from kvtheory.policies.compiled.authors import CompiledAuthorsRLT
from kvtheory.policies.compiled.edge_cache import CompiledLeafSampler, CompiledLFU
from kvtheory.policies.dispatch import compiled_object, per_edge_object
from kvtheory.policies.edge_cache import _MIN_BLOCK, EdgeCache
from kvtheory.policies.radix_core import CompiledRadix

#: the policies with compiled cores and both eviction amounts: every one but vllm, a block engine (vLLM's block
#: pool, tests/policies/test_vllm.py), which has no compiled core and evicts only what its allocation lacks
COMPILED = {name: cls for name, cls in ONLINE_POLICIES.items() if not cls.block_engine}

# B = 7: [7,8] misses 2 tokens and overflows by 1. L-LRU evicts [1] for the shortfall, [1] and [2] (the two
# least recent leaves) for the allocation, so [2] then hits 1 or 0.
LRU_QUERIES = [[1], [2], [3], [4], [5, 6], [7, 8], [2]]
# B = 5: [9,7,8] matches [9] and overflows by 1; every leaf is marked, so RLT starts a phase that leaves
# [1,2,3] the one candidate, losing 1 token (shortfall) or 2 (allocation): [1,2,3] then hits 2 or 1.
RLT_QUERIES = [[1, 2, 3], [9], [9, 7, 8], [1, 2, 3]]


def last_hits(queries, budget, policy, evict_amount, seed=0):
    result = run_policy(Workload.from_token_lists(queries), budget, policy, seed=seed, evict_amount=evict_amount)
    assert result.evict_amount == evict_amount
    return int(result.query_hits[-1])


def test_shortfall_is_the_default_and_lru_evicts_just_the_shortfall():
    assert last_hits(LRU_QUERIES, 7, "lru", "shortfall") == 1
    assert run_policy(Workload.from_token_lists(LRU_QUERIES), 7, "lru").evict_amount == "shortfall"


def test_lru_allocation_frees_more_than_the_shortfall():
    assert last_hits(LRU_QUERIES, 7, "lru", "allocation") == 0


@pytest.mark.parametrize("seed", range(5))
def test_rlt_shortfall(seed):
    assert last_hits(RLT_QUERIES, 5, "rlt", "shortfall", seed) == 2


@pytest.mark.parametrize("seed", range(5))
def test_rlt_allocation_frees_more_than_the_shortfall(seed):
    assert last_hits(RLT_QUERIES, 5, "rlt", "allocation", seed) == 1


def test_ratio_records_the_amount():
    workload = Workload.from_token_lists(RLT_QUERIES)
    report = competitive_ratio(workload, 5, "rlt-authors", seeds=range(3), evict_amount="allocation")
    record = report.to_dict()
    assert record["evict_amount"] == "allocation"
    assert [run.evict_amount for run in report.runs] == ["allocation"] * 3


def test_mrc_records_the_amount_and_rejects_a_bad_one():
    workload = Workload.from_token_lists(RLT_QUERIES * 3)
    result = miss_ratio_curve(workload, [5, 6], ["rlt-authors", "fif"], evict_amount="allocation", workers=1)
    assert result["evict_amount"] == "allocation"
    single = run_policy(workload, 5, "rlt-authors", seed=0, evict_amount="allocation")
    assert result["misses"]["rlt-authors"][0] == single.misses
    with pytest.raises(InputError, match="unknown eviction amount 'everything'"):
        miss_ratio_curve(workload, [5], ["lru"], evict_amount="everything", workers=1)


def test_every_worker_of_the_cluster_gets_the_amount():
    workload = Workload.from_token_lists(RLT_QUERIES * 4)
    cluster = Cluster.uniform(3, 5)
    simulation = Simulation(
        workload, cluster, "round-robin", "rlt-authors", rate=float("inf"), evict_amount="allocation"
    )
    assert [w.policy.evict_amount for w in simulation.workers] == ["allocation"] * 3
    record = simulation.run().to_dict()
    assert record["evict_amount"] == "allocation"


# -- sweep specs ----------------------------------------------------------------------------------------
SPEC = {
    "policies": ["rlt-authors"],
    "policy_seeds": 2,
    "budget": "k + L - 1",
    "grid": [{"family": "cyclic", "params": {"k": 3, "L": 2, "n": 30}}],
}


def test_a_spec_without_the_key_keeps_its_cell_ids():
    (cell,) = expand(SPEC)
    assert "evict_amount" not in cell
    assert cell["id"] == cell_id({key: value for key, value in cell.items() if key != "id"})
    (same,) = expand({**SPEC, "evict_amount": "shortfall"})
    assert same == cell


def test_evict_amount_is_an_axis_and_recorded():
    cells = expand({**SPEC, "evict_amount": ["shortfall", "allocation"]})
    assert [c.get("evict_amount") for c in cells] == [None, "allocation"]
    records = [run_cell(cell) for cell in cells]
    assert [r["evict_amount"] for r in records] == ["shortfall", "allocation"]
    assert all("error" not in r for r in records)


@pytest.mark.parametrize("value", ["everything", ["shortfall", 3], []])
def test_a_bad_amount_in_a_spec_is_an_input_error(value):
    with pytest.raises(InputError, match="evict_amount must be one of shortfall, allocation"):
        expand({**SPEC, "evict_amount": value})


# -- the command line -----------------------------------------------------------------------------------
@pytest.fixture
def workload_file(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(json.dumps({"tokens": t}) for t in RLT_QUERIES * 2) + "\n")
    return path


COMMANDS = {
    "evict": ["evict", "--budget", 5, "--policy", "rlt-authors"],
    "ratio": ["ratio", "--budget", 5, "--policy", "rlt-authors"],
    "ratio --workers": ["ratio", "--budget", 5, "--workers", 2, "--router", "round-robin", "--eviction", "rlt"],
    "mrc": ["mrc", "--budgets", "5,6", "--policies", "rlt-authors,lru", "--workers", 1],
    "route": [
        "route",
        "--budget",
        5,
        "--workers",
        2,
        "--router",
        "round-robin",
        "--eviction",
        "rlt-authors",
        "--rate",
        "inf",
    ],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_serving_command_records_the_amount(command, workload_file, capsys):
    argv = [*COMMANDS[command], "--workload", workload_file, "--evict-amount", "allocation", "--json"]
    assert main([str(a) for a in argv]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["evict_amount"] == "allocation"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_amount_is_one_line_and_exit_2(command, workload_file, capsys):
    argv = [*COMMANDS[command], "--workload", workload_file, "--evict-amount", "most"]
    with pytest.raises(SystemExit) as stopped:
        main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err.count("\n") == 1 and "argument --evict-amount: invalid choice: 'most'" in err


@pytest.mark.parametrize("evict_amount, misses", [("shortfall", 11), ("allocation", 16)])
def test_check_measures_the_policy_with_the_amount(evict_amount, misses, tmp_path, capsys):
    # RLT_QUERIES three times over at B = 5: rlt-authors misses 11 tokens evicting the shortfall, 16 the
    # allocation (every seed), as `kvtheory evict` counts them
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps({"tokens": t}) for t in RLT_QUERIES * 3) + "\n")
    argv = ["check", "C5", "--workload", path, "--budget", 5, "--policy", "rlt-authors", "--seeds", 3]
    assert main([str(a) for a in [*argv, "--evict-amount", evict_amount, "--json"]]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["worst"]["alg"] == misses
    evicted = run_policy(Workload.from_token_lists(RLT_QUERIES * 3), 5, "rlt-authors", evict_amount=evict_amount)
    assert evicted.misses == misses
    with pytest.raises(SystemExit) as stopped:
        main([str(a) for a in [*argv, "--evict-amount", "most"]])
    assert stopped.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_demo_passes_the_amount_to_every_policy(capsys):
    from kvtheory.experiments.demo import Scenario, demo_table, run_scenario

    scenario = Scenario("tiny", "random-tree", {"queries": 30, "max_length": 6, "alphabet": 2}, 8)
    result = run_scenario(scenario, seeds=2, evict_amount="allocation")
    assert {run.evict_amount for report in result.reports for run in report.runs} == {"allocation"}
    assert "online policies evict the allocation" in demo_table(result)
    with pytest.raises(SystemExit) as stopped:
        main(["demo", "--evict-amount", "most"])
    assert stopped.value.code == 2 and capsys.readouterr().err.count("\n") == 1


class _KeepsNothing(EvictionPolicy):
    """A user's policy written against the interface only, with no ``evict_amount`` argument."""

    name = "keeps-nothing"

    def __init__(self, trie, budget, *, seed=None):
        super().__init__(trie, budget, seed=seed)
        self.seed = seed

    def serve(self, batch):
        return [0] * len(batch)

    def cached_prefix(self, j):
        return 0

    def kept(self):
        return {}


def test_a_users_policy_is_created_by_the_base_class_with_the_shortfall_by_default():
    """``EvictionPolicy.create`` (the cluster's workers are made with it) hands the policy its trie, budget
    and seed and defaults to the shortfall, which a policy without an ``evict_amount`` argument runs; the
    allocation is refused by name."""
    trie = Workload.from_token_lists([[1, 2]]).trie
    policy = _KeepsNothing.create(trie, 3, seed=5)
    assert type(policy) is _KeepsNothing and (policy.trie, policy.budget, policy.seed) == (trie, 3, 5)
    policy = per_edge_object(_KeepsNothing, trie, 4)  # its own default is the shortfall too
    assert (policy.trie, policy.budget, policy.seed, policy.evict_amount) == (trie, 4, None, "shortfall")
    with pytest.raises(InputError, match=r"^policy 'keeps-nothing' does not take an eviction amount \(evict_amount\)$"):
        _KeepsNothing.create(trie, 3, evict_amount="allocation")


# B = 4, one query a batch: every online policy's hits differ between the two amounts (seed 0)
SEPARATING_QUERIES = [[3, 1], [1, 2, 1], [1], [3, 1, 2], [1, 2, 3], [3], [2]]


class _EdgeCacheWithoutInit(EdgeCache):
    """A user's policy on the per-edge cache that keeps EdgeCache's constructor."""

    name = "edge-cache-without-init"

    def serve(self, batch):
        return [0] * len(batch)


def test_every_entry_point_defaults_to_the_shortfall():
    """Left out, the eviction amount is the shortfall at every entry point: each policy class, its
    ``create`` and ``per_edge_object``, and each compiled core's object, made without one, say so and serve the
    shortfall's hits; each whole run (the cores' ``serve_all``) gives them.
    On this workload the two amounts give different hits for every policy."""
    workload = Workload.from_token_lists(SEPARATING_QUERIES)
    trie, budget, n = workload.trie, 4, len(SEPARATING_QUERIES)

    def hits(name, amount):
        return run_policy(workload, budget, name, seed=0, evict_amount=amount).query_hits.tolist()

    def served(policy):
        assert policy.evict_amount == "shortfall", policy
        return [policy.serve([j])[0] for j in range(n)]

    shortfall = {name: hits(name, "shortfall") for name in COMPILED}
    for name, cls in COMPILED.items():
        assert shortfall[name] != hits(name, "allocation"), name
        for make in (cls, cls.create, partial(per_edge_object, cls)):
            assert served(make(trie, budget, seed=0)) == shortfall[name], (name, make)
        compiled = compiled_object(cls, trie, budget, seed=0).serve_all(1)
        assert compiled is not None and compiled.tolist() == shortfall[name], name
    cores = {
        "lru": lambda: CompiledRadix(LeafLRU, trie, budget),
        "lfu": lambda: CompiledLFU(LeafLFU, trie, budget),
        "rlt": lambda: CompiledLeafSampler(RandomizedLeafToken, trie, budget, seed=0, min_block=_MIN_BLOCK),
        "rlt-authors": lambda: CompiledAuthorsRLT(trie, budget, seed=0),
    }
    for name, core in cores.items():
        assert served(core()) == shortfall[name], name
        assert core().serve_all(1).tolist() == shortfall[name], name
    policy = _EdgeCacheWithoutInit(trie, budget)
    assert policy.evict_amount == "shortfall" and policy.tokens_to_free(1, 3) == 1


def test_an_unknown_amount_is_refused_with_the_known_ones():
    with pytest.raises(InputError, match=r"^unknown eviction amount 'everything'; known: shortfall, allocation$"):
        check_evict_amount("everything")
