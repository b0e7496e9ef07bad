"""One-pass miss-ratio curves (kvtheory/experiments/stack_mrc.py): where the one pass is chosen it equals the
per-budget runs hit for hit at every budget; where inclusion fails (token-LRU and L-LRU on trees) the
counterexamples show it and ``auto`` falls back; FIF's per-query hits never drop when B grows.

Confidence: each randomized check draws 150-300 instances (hypothesis, derandomized, so a failure
reproduces); every budget from L_max to everything-fits is compared, not a sample."""

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtheory.errors import InputError
from kvtheory.experiments.mrc import miss_ratio_curve
from kvtheory.experiments.stack_mrc import (
    identical_or_disjoint,
    one_pass_blocker,
    one_token_queries,
    prefix_nested,
    stack_hits,
)
from kvtheory.model.traces import read_workload, write_mooncake
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import run_fif
from kvtheory.simulate import run_policy
from kvtheory.testing.strategies import token_lists
from kvtheory.workloads import generate

#: the smallest inclusion failures found (stack_mrc.py's docstring traces them): queries, and the last query's
#: hits at budget B against B + 1
TOKEN_LRU_COUNTEREXAMPLE = ([[0], [1, 2, 1, 0], [0, 2], [2], [0], [1, 0], [0, 2]], 4)
LRU_COUNTEREXAMPLE = ([[0, 0, 0], [1], [0, 1], [1]], 3)


def _all_budgets(workload: Workload) -> list[int]:
    return list(range(workload.max_length, workload.trie.distinct_tokens + 2))


def _per_budget_hits(workload: Workload, budgets, policy: str) -> list[int]:
    return [run_policy(workload, b, policy, backend="python").hits for b in budgets]


@st.composite
def conversations(draw):
    """Interleaved growing conversations: each query extends its conversation's previous one (or repeats it),
    conversations start with distinct tokens. Every such workload is prefix-nested."""
    count = draw(st.integers(1, 4))
    full = [[c] + draw(st.lists(st.integers(0, 2), max_size=8)) for c in range(count)]
    reached = [0] * count
    queries = []
    for c in draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=14)):
        reached[c] = draw(st.integers(max(reached[c], 1), len(full[c])))
        queries.append(full[c][: reached[c]])
    return queries


@st.composite
def objects(draw):
    """Requests for objects of 1-4 tokens that share no token (identical or disjoint queries)."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=6))
    names = [[10 * o + i for i in range(size)] for o, size in enumerate(sizes)]
    return [names[o] for o in draw(st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=16))]


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True)
@given(conversations())
def test_token_lru_one_pass_equals_per_budget_runs_on_nested_workloads(queries):
    workload = Workload.from_token_lists(queries)
    assert prefix_nested(workload.trie)
    budgets = _all_budgets(workload)
    one_pass = stack_hits(workload.trie, budgets, whole_node=False).tolist()
    assert one_pass == _per_budget_hits(workload, budgets, "token-lru")


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True)
@given(objects())
def test_both_lrus_one_pass_equal_per_budget_runs_on_identical_or_disjoint_queries(queries):
    workload = Workload.from_token_lists(queries)
    assert identical_or_disjoint(workload.trie) and prefix_nested(workload.trie)
    budgets = _all_budgets(workload)
    assert stack_hits(workload.trie, budgets, whole_node=True).tolist() == _per_budget_hits(workload, budgets, "lru")
    assert stack_hits(workload.trie, budgets, whole_node=False).tolist() == _per_budget_hits(
        workload, budgets, "token-lru"
    )


@settings(max_examples=100, deadline=None, derandomize=True)
@given(token_lists(max_queries=8, max_length=4))
def test_the_conditions_are_what_they_say(queries):
    """Checked against their definitions on pairs of queries (a prefix is a shorter-or-equal leading run)."""
    workload = Workload.from_token_lists(queries)
    shares = [[a[0] == b[0] for b in queries] for a in queries]
    nested = all(not shares[s][t] or queries[t][: len(queries[s])] == queries[s] for t in range(len(queries))
                 for s in range(t))  # fmt: skip
    disjoint = all(not shares[s][t] or queries[s] == queries[t] for t in range(len(queries)) for s in range(t))
    assert prefix_nested(workload.trie) == nested and identical_or_disjoint(workload.trie) == disjoint


@pytest.mark.parametrize(("policy", "example"), [("token-lru", TOKEN_LRU_COUNTEREXAMPLE), ("lru", LRU_COUNTEREXAMPLE)])
def test_inclusion_fails_on_trees_and_auto_falls_back(policy, example):
    queries, budget = example
    workload = Workload.from_token_lists(queries)
    small, large = (run_policy(workload, b, policy).query_hits[-1] for b in (budget, budget + 1))
    assert small > large  # more cache, fewer hits for the last query: no stack algorithm
    assert one_pass_blocker(policy, workload.trie, 1, "shortfall") is not None
    budgets = _all_budgets(workload)
    assert stack_hits(workload.trie, budgets, whole_node=policy == "lru").tolist() != _per_budget_hits(
        workload, budgets, policy
    )  # so the one pass would be wrong here
    auto = miss_ratio_curve(workload, budgets, [policy], workers=1)
    assert auto["method"] == {policy: "per-budget"}
    with pytest.raises(InputError, match="not exact for"):
        miss_ratio_curve(workload, budgets, [policy], workers=1, method="one-pass")


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True)
@given(token_lists(max_queries=8, max_length=4))
def test_fif_per_query_hits_never_drop_when_the_budget_grows(queries):
    """OPT at beta = 1 is a stack algorithm on trees (stack_mrc.py's lemma): C_t(B) within C_t(B + 1)."""
    workload = Workload.from_token_lists(queries)
    previous = None
    for budget in _all_budgets(workload):
        hits = np.asarray(run_fif(workload, budget).query_hits)
        assert previous is None or (hits >= previous).all()
        previous = hits


def _flat(requests: int, pages: int, seed: int) -> Workload:
    """benchmarks/flat_trace.py's Zipf trace of one-token queries."""
    weights = 1.0 / np.arange(1, pages + 1) ** 0.9
    drawn = np.random.default_rng(seed).choice(pages, size=requests, p=weights / weights.sum())
    return Workload.from_token_lists([[int(p)] for p in drawn])


def _families(tmp_path) -> dict[str, Workload]:
    """Every workload family: the generators' (paging and trees), the flat trace, and a Mooncake-format trace."""
    path = tmp_path / "chat.jsonl"
    chat = {"conversations": "6", "turns": "1,3", "block_size": "8", "system_len": "16", "user_len": "8"}
    write_mooncake(generate("chat-blocks", chat, seed=1), path)
    found = {"flat": _flat(3000, 400, seed=0), "mooncake": read_workload(path, "mooncake", 8)}
    alone = tmp_path / "alone.jsonl"  # no system prompt: every conversation a growing chain, a nested trace
    write_mooncake(generate("chat-blocks", {**chat, "conversations": "12", "system_len": "0"}, seed=2), alone)
    found["mooncake-nested"] = read_workload(alone, "mooncake", 8)
    small = {
        "paging": {"pages": "30", "requests": "300"},
        "multiturn": {"conversations": "8", "turns": "1,4", "user_len": "6", "output_len": "4"},
        "gsp": {"groups": "3", "prompts": "4", "lengths": "6,12"},
        "longdoc": {"documents": "3", "questions": "4", "lengths": "20,40", "question_len": "4", "output_len": "3"},
    }
    for name, params in small.items():
        found[name] = generate(name, params, seed=0)
    return found


@pytest.mark.slow
def test_auto_equals_per_budget_runs_on_every_family(tmp_path):
    """``auto`` on two worker processes against every budget run serially in this process."""
    taken = set()
    for name, workload in _families(tmp_path).items():
        low, high = workload.max_length, workload.trie.distinct_tokens
        budgets = sorted({int(b) for b in np.geomspace(low, high, 6)})
        policies = ["lru", "token-lru", "fifo", "fif"]
        auto = miss_ratio_curve(workload, budgets, policies, workers=2)
        serial = miss_ratio_curve(workload, budgets, policies, workers=1, method="per-budget")
        for key in ("budgets", "misses", "hit_rate", "infeasible", "opt_status"):
            assert auto[key] == serial[key], (name, key)
        assert (auto["method"]["token-lru"] == "one-pass") == prefix_nested(workload.trie), name
        assert (auto["method"]["lru"] == "one-pass") == identical_or_disjoint(workload.trie), name
        assert auto["method"]["fifo"] == "per-budget"
        assert (auto["method"]["fif"] == "one-pass") == one_token_queries(workload.trie), name
        taken.update(name for name, how in auto["method"].items() if how == "one-pass")
        if name == "mooncake-nested":
            assert auto["method"]["token-lru"] == "one-pass"
    assert taken == {"lru", "token-lru", "fif"}  # the flat trace (at least) does take the one pass


@pytest.mark.slow
@settings(max_examples=100, deadline=None, derandomize=True)
@given(token_lists(max_queries=12, max_length=6))
def test_the_compiled_traversal_is_the_python_one(queries):
    """The same code either way (numba compiles stack_traversal as it is): the same hits on any workload."""
    trie = Workload.from_token_lists(queries).trie
    budgets = list(range(1, trie.distinct_tokens + 2))
    for whole_node in (False, True):
        python = stack_hits(trie, budgets, whole_node=whole_node, compiled=False)
        assert (stack_hits(trie, budgets, whole_node=whole_node, compiled=True) == python).all()


def test_the_command_line_names_the_method_and_refuses_an_inexact_one_pass(capsys, tmp_path):
    from cli_runner import run_cli

    path = tmp_path / "tree.jsonl"
    path.write_text("".join(f'{{"tokens": {q}}}\n' for q in LRU_COUNTEREXAMPLE[0]))
    common = ["mrc", "--workload", path, "--budgets", "3,4,5", "--policies", "lru,fif", "--json"]
    code, out, _ = run_cli(capsys, *common)
    assert code == 0 and orjson.loads(out)["method"] == {"lru": "per-budget", "fif": "per-budget"}
    code, _, err = run_cli(capsys, *common, "--method", "one-pass")
    assert code == 2 and "not exact for lru" in err and len(err.strip().splitlines()) == 1
