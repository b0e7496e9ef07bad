"""The compressed prefix trie: token nodes, radix edges and paths are those of the plain token trie."""

from hypothesis import example, given, settings
from strategies import EXAMPLE_DEADLINE, token_lists

from kvtheory import PrefixTrie


def _token_nodes(sequences):
    return {tuple(s[:i]) for s in sequences for i in range(1, len(s) + 1)}


@settings(deadline=EXAMPLE_DEADLINE)
@given(token_lists(max_queries=12, max_length=6))
@example([[1, 2], [1, 2]])  # equal queries
@example([[1, 2, 3], [1, 2], [1]])  # each query a prefix of the one before: no branch, three ends
@example([[1], [1, 2, 3]])  # a query extends an earlier one
@example([[0]])
def test_trie_counts_exactly_the_distinct_token_nodes(sequences):
    trie = PrefixTrie(sequences)
    assert trie.distinct_tokens == len(_token_nodes(sequences))


@settings(deadline=EXAMPLE_DEADLINE)
@given(token_lists(max_queries=12, max_length=6))
@example([[1, 2], [1, 2]])
@example([[1, 2, 3], [1, 2], [1]])
@example([[1], [1, 2, 3]])
@example([[0]])
def test_paths_spell_each_query_and_nodes_sit_only_at_branches_or_ends(sequences):
    trie = PrefixTrie(sequences)
    ends = {trie.end[j] for j in range(len(sequences))}
    for j, tokens in enumerate(sequences):
        path = trie.path(j)
        assert trie.depth[path[-1]] == len(tokens)
        assert sum(trie.edge_len[v] for v in path) == len(tokens)
        for a, b in zip(path, path[1:]):
            assert trie.parent[b] == a and trie.is_ancestor(a, b) and not trie.is_ancestor(b, a)
    for v in range(1, trie.n_nodes):
        assert trie.edge_len[v] >= 1
        assert v in ends or len(trie.children[v]) >= 2


def test_identical_queries_share_their_end_node():
    trie = PrefixTrie([[1, 2], [3], [1, 2]])
    assert trie.end[0] == trie.end[2] != trie.end[1]


def test_negative_and_huge_token_ids_sort_correctly():
    sequences = [[-5, 1], [2**62, 3], [-5, 2], [0]]
    trie = PrefixTrie(sequences)
    assert trie.distinct_tokens == len(_token_nodes(sequences))
