"""Workload generators of docs/formats.md §Generators: determinism, structure, orders, and string parameters."""

from __future__ import annotations

import inspect
import typing
from collections import defaultdict

import numpy as np
import pytest

import adversaries  # noqa: F401  (registers random-tree)
from kvtheory.errors import InputError
from kvtheory.workloads import GENERATORS, generate

# Small settings for every generator, so each test runs in milliseconds.
SMALL = {
    "gsp": {"groups": 5, "prompts": 4, "lengths": [8, 12, 16]},
    "multiturn": {"conversations": 5, "turns": [1, 2, 3], "user_len": 6, "output_len": 2, "system_len": 3},
    "longdoc": {"documents": 4, "questions": 3, "lengths": [10, 20], "question_len": 4},
    "paging": {"pages": 5, "requests": 40},
    "heavytail": {"queries": 50, "groups": 4, "prefix_len": 8, "mean_len": 16},
    "random-tree": {"queries": 20, "max_length": 5, "alphabet": 3},
}


def lcp(a: np.ndarray, b: np.ndarray) -> int:
    m = min(a.size, b.size)
    differ = np.flatnonzero(a[:m] != b[:m])
    return int(differ[0]) if differ.size else m


def by_first_token(workload) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = defaultdict(list)
    for j, q in enumerate(workload):
        groups[int(q.tokens[0])].append(j)
    return groups


# ---------------------------------------------------------------- every generator


def test_expected_generators_are_registered():
    assert set(SMALL) <= set(GENERATORS)
    assert GENERATORS["random-tree"].kind == "adversary"


@pytest.mark.parametrize("name", sorted(SMALL))
def test_signature_docstring_and_defaults(name):
    generator = GENERATORS[name]
    assert generator.summary and "\n" not in generator.summary
    hints = typing.get_type_hints(generator.function)
    for key, parameter in generator.parameters().items():
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        assert parameter.default is not inspect.Parameter.empty, key
        assert hints[key] in (int, float, str, bool, list[int], list[float]), key


@pytest.mark.parametrize("name", sorted(SMALL))
def test_deterministic_under_seed(name):
    first = generate(name, SMALL[name], seed=7)
    again = generate(name, SMALL[name], seed=7)
    assert first == again
    assert all(q.tokens.dtype == np.int64 for q in first)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_different_seeds_differ(name):
    assert generate(name, SMALL[name], seed=1) != generate(name, SMALL[name], seed=2)


@pytest.mark.parametrize("name", ["gsp", "multiturn", "longdoc", "heavytail"])
def test_poisson_arrivals_and_output_len(name):
    workload = generate(name, SMALL[name], seed=3)
    arrivals = np.array([q.arrival for q in workload])
    assert arrivals[0] == 0.0 and np.all(np.diff(arrivals) > 0)
    assert {q.output_len for q in workload} == {SMALL[name].get("output_len", 4)}


def test_rate_inf_puts_every_arrival_at_zero():
    workload = generate("gsp", {**SMALL["gsp"], "rate": "inf"}, seed=0)
    assert {q.arrival for q in workload} == {0.0}


def test_poisson_rate_matches_mean_gap():
    workload = generate("gsp", {"groups": 64, "prompts": 64, "lengths": [4], "rate": 12.0}, seed=5)
    gaps = np.diff([q.arrival for q in workload])
    assert abs(gaps.mean() - 1 / 12) < 0.1 / 12


# ---------------------------------------------------------------- gsp


def check_gsp_structure(workload, groups, prompts, lengths, ratio, separator=(271,)):
    assert len(workload) == groups * prompts
    members = by_first_token(workload)
    assert len(members) == groups  # distinct first tokens: groups share no token node
    seen_lengths = []
    for indices in members.values():
        assert len(indices) == prompts
        total = workload[indices[0]].length - len(separator)
        system = min(max(round(ratio * total), 1), total - 1)
        shared = system + len(separator)  # system prompt, then the separator
        matrix = np.stack([workload[j].tokens for j in indices])  # equal lengths within a group
        assert np.all(matrix[:, :shared] == matrix[0, :shared])
        assert np.all(matrix[:, system:shared] == list(separator))
        assert len(set(matrix[:, shared].tolist())) == prompts  # questions diverge at once
        seen_lengths.append(total)
    expected = [lengths[g % len(lengths)] for g in range(groups)]
    assert sorted(seen_lengths) == sorted(expected)


@pytest.mark.parametrize("order", ["random", "grouped", "round-robin"])
def test_gsp_structure(order):
    params = {**SMALL["gsp"], "order": order, "prefix_ratio": 0.4}
    workload = generate("gsp", params, seed=11)
    check_gsp_structure(workload, 5, 4, [8, 12, 16], 0.4)


def test_gsp_separator_is_a_parameter():
    bare = generate("gsp", {**SMALL["gsp"], "separator": ""}, seed=3)
    check_gsp_structure(bare, 5, 4, [8, 12, 16], 0.5, separator=())
    double = generate("gsp", {**SMALL["gsp"], "separator": "7,9"}, seed=3)
    check_gsp_structure(double, 5, 4, [8, 12, 16], 0.5, separator=(7, 9))
    with pytest.raises(InputError, match="separator"):
        generate("gsp", {**SMALL["gsp"], "separator": "5", "vocab": "4"})


def test_gsp_orders():
    params = SMALL["gsp"]
    grouped = generate("gsp", {**params, "order": "grouped"}, seed=4)
    robin = generate("gsp", {**params, "order": "round-robin"}, seed=4)
    shuffled = generate("gsp", {**params, "order": "random"}, seed=4)
    heads = lambda w: [int(q.tokens[0]) for q in w]  # noqa: E731
    g, p = 5, 4
    # grouped: query i is prompt i mod P of group i // P, groups in index order (lengths cycle).
    assert [q.length for q in grouped] == [[9, 13, 17][(i // p) % 3] for i in range(g * p)]
    assert all(heads(grouped)[i] == heads(grouped)[(i // p) * p] for i in range(g * p))
    # round-robin: query i is prompt i // G of group i mod G.
    assert heads(robin) == [heads(grouped)[(i % g) * p] for i in range(g * p)]
    assert [q.tokens.tolist() for q in robin] == [grouped[(i % g) * p + i // g].tokens.tolist() for i in range(g * p)]
    # random: a permutation of the same prompts; arrivals do not depend on the order.
    as_set = lambda w: sorted(tuple(q.tokens.tolist()) for q in w)  # noqa: E731
    assert as_set(shuffled) == as_set(grouped) == as_set(robin)
    assert [q.tokens.tolist() for q in shuffled] != [q.tokens.tolist() for q in grouped]
    assert [q.arrival for q in shuffled] == [q.arrival for q in grouped] == [q.arrival for q in robin]


def test_gsp_paper_size_totals():
    workload = generate("gsp", {}, seed=0)
    assert len(workload) == 128 * 32
    assert workload.total_tokens == 12_812_288 + 128 * 32  # one separator token per prompt
    assert 12.0e6 <= workload.total_tokens <= 13.5e6
    assert {q.output_len for q in workload} == {4}
    members = by_first_token(workload)
    assert len(members) == 128
    distinct = 0
    for indices in members.values():
        matrix = np.stack([workload[j].tokens for j in indices])
        shared = int(np.flatnonzero(np.any(matrix != matrix[0], axis=0))[0])
        assert shared == (matrix.shape[1] - 1) // 2 + 1  # half the group length, then the separator
        distinct += shared + len(indices) * (matrix.shape[1] - shared)
    assert distinct == 6_606_336 + 128


def test_gsp_rejects_bad_parameters():
    with pytest.raises(InputError):
        generate("gsp", {"order": "sideways"})
    with pytest.raises(InputError):
        generate("gsp", {"prefix_ratio": "1.5"})
    with pytest.raises(InputError):
        generate("gsp", {"lengths": "1"})
    with pytest.raises(InputError):
        generate("gsp", {"rate": "0"})
    with pytest.raises(InputError):
        generate("gsp", {"groups": "5", "vocab": "3"})


# ---------------------------------------------------------------- multiturn


@pytest.mark.parametrize("order", ["random", "grouped", "round-robin"])
def test_multiturn_turns_extend_history(order):
    params = {**SMALL["multiturn"], "order": order}
    workload = generate("multiturn", params, seed=9)
    system_len, user_len, output_len = 3, 6, 2
    assert len(workload) == 1 + 2 + 3 + 1 + 2
    system = workload[0].tokens[:system_len]
    conversations: dict[int, list[int]] = defaultdict(list)
    for j, q in enumerate(workload):
        assert np.array_equal(q.tokens[:system_len], system)  # the shared system prompt
        conversations[int(q.tokens[system_len])].append(j)
    assert sorted(len(v) for v in conversations.values()) == [1, 1, 2, 2, 3]
    for indices in conversations.values():
        # indices are in arrival order: each turn extends the previous turn of its conversation.
        for turn, j in enumerate(indices, start=1):
            assert workload[j].length == system_len + turn * user_len + (turn - 1) * output_len
            if turn > 1:
                previous = workload[indices[turn - 2]].tokens
                assert np.array_equal(workload[j].tokens[: previous.size], previous)
    if order == "round-robin":
        assert [workload[j].length for j in range(5)] == [9] * 5  # first turns of all conversations first


def test_multiturn_conversations_share_only_the_system_prompt():
    workload = generate("multiturn", {**SMALL["multiturn"], "order": "grouped", "turns": [1]}, seed=2)
    for a in range(len(workload)):
        for b in range(a + 1, len(workload)):
            assert lcp(workload[a].tokens, workload[b].tokens) == 3


# ---------------------------------------------------------------- longdoc


@pytest.mark.parametrize("mode", ["cycle", "random"])
def test_longdoc_structure(mode):
    params = {**SMALL["longdoc"], "lengths_mode": mode, "order": "round-robin"}
    workload = generate("longdoc", params, seed=5)
    assert len(workload) == 4 * 3
    documents = by_first_token(workload)
    assert len(documents) == 4
    doc_lens = []
    for indices in documents.values():
        doc_len = workload[indices[0]].length - 4
        assert doc_len in (10, 20)
        doc_lens.append(doc_len)
        for a in indices:
            assert workload[a].length == doc_len + 4
            for b in indices:
                if a != b:
                    assert lcp(workload[a].tokens, workload[b].tokens) == doc_len
    if mode == "cycle":
        assert sorted(doc_lens) == [10, 10, 20, 20]
    # round-robin over documents: four consecutive queries are four different documents.
    assert len({int(q.tokens[0]) for q in workload[:4]}) == 4


# ---------------------------------------------------------------- paging


@pytest.mark.parametrize("distribution", ["uniform", "zipf"])
def test_paging_is_depth_one(distribution):
    workload = generate("paging", {"pages": "6", "requests": "500", "distribution": distribution}, seed=3)
    assert len(workload) == 500
    assert all(q.length == 1 for q in workload)
    pages = np.array([int(q.tokens[0]) for q in workload])
    assert pages.min() >= 0 and pages.max() < 6
    counts = np.bincount(pages, minlength=6)
    if distribution == "zipf":
        assert counts[0] == counts.max() and counts[0] > 2 * counts[5]
    else:
        assert counts.min() > 0


def test_paging_registry_example_and_errors():
    assert len(generate("paging", {"pages": "3", "requests": "10"}, seed=1)) == 10
    with pytest.raises(InputError):
        generate("paging", {"distribution": "normal"})


# ---------------------------------------------------------------- heavy tails


def tail_ratio(distribution: str) -> float:
    workload = generate("heavytail", {"distribution": distribution, "queries": 2000}, seed=1)
    lengths = np.array([q.length for q in workload])
    return lengths.max() / np.median(lengths)


def test_heavytail_pareto_has_a_much_heavier_tail_than_uniform():
    uniform, lognormal, pareto = tail_ratio("uniform"), tail_ratio("lognormal"), tail_ratio("pareto")
    assert uniform < 2.0
    assert pareto > 10 * uniform
    assert lognormal > 2 * uniform


@pytest.mark.parametrize("distribution", ["pareto", "lognormal", "uniform"])
def test_heavytail_shared_prefix_structure(distribution):
    workload = generate("heavytail", {**SMALL["heavytail"], "distribution": distribution}, seed=8)
    assert len(workload) == 50
    groups = by_first_token(workload)
    assert len(groups) <= 4
    for indices in groups.values():
        for a in indices:
            assert workload[a].length >= 9
            for b in indices:
                if a < b:
                    assert lcp(workload[a].tokens, workload[b].tokens) == 8


# ---------------------------------------------------------------- random-tree


def test_random_tree_is_small_and_shares_prefixes():
    workload = generate("random-tree", {"queries": "30", "max_length": "4", "alphabet": "2"}, seed=0)
    assert len(workload) == 30
    assert all(1 <= q.length <= 4 and set(q.tokens.tolist()) <= {0, 1} for q in workload)
    assert workload.trie.distinct_tokens < workload.total_tokens  # prefixes are shared
    assert len({tuple(q.tokens.tolist()) for q in workload}) < 30  # and some queries repeat


# ---------------------------------------------------------------- string parameters


def test_generate_parses_string_parameters():
    workload = generate(
        "gsp",
        {
            "groups": "2",
            "prompts": "3",
            "lengths": "8,16",
            "prefix_ratio": "0.25",
            "rate": "inf",
            "order": "round_robin",
        },
        seed=1,
    )
    assert [q.length for q in workload] == [9, 17] * 3  # + the separator
    assert lcp(workload[0].tokens, workload[2].tokens) == 2 + 1
    assert lcp(workload[1].tokens, workload[3].tokens) == 4 + 1
    turns = generate("multiturn", {"conversations": "1", "turns": "3", "user_len": "2", "output_len": "0"}, seed=1)
    assert [q.length for q in turns] == [2, 4, 6]
    with pytest.raises(InputError):
        generate("gsp", {"groups": "many"})
    with pytest.raises(InputError):
        generate("gsp", {"colour": "red"})


def test_generate_checks_python_values_as_it_parses_strings():
    """A Python value goes through the same parser: one count is a one-element list, a wrong kind is refused."""
    one = generate("multiturn", {"conversations": 1, "turns": 3, "user_len": 2, "output_len": 0}, seed=1)
    listed = generate("multiturn", {"conversations": 1, "turns": [3], "user_len": 2, "output_len": 0}, seed=1)
    assert [q.length for q in one] == [q.length for q in listed] == [2, 4, 6]
    for params in ({"turns": 2.5}, {"groups": 2.5}, {"turns": [1, "x"]}):
        name = "gsp" if "groups" in params else "multiturn"
        with pytest.raises(InputError, match="is not a valid"):
            generate(name, params)
