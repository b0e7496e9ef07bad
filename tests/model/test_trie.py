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


@settings(deadline=EXAMPLE_DEADLINE)
@given(token_lists(max_queries=12, max_length=6))
@example([[1, 2, 3], [1, 2], [1]])  # one-token edges: every depth is an edge's last token
@example([[5, 6, 7, 8]])  # one long edge: every depth lies in it
def test_edge_holding_finds_the_edge_of_every_depth_and_refuses_depths_off_the_path(sequences):
    """edge_holding(v, d) is the node u of v's root path with depth[parent[u]] < d <= depth[u], checked
    against the path spelled out token by token; d = 0 and d = depth[v] + 1 are refused (no walk up past
    the root)."""
    import pytest

    trie = PrefixTrie(sequences)
    for j in range(len(sequences)):
        end = trie.end[j]
        holder = [u for u in trie.path(j) for _ in range(trie.edge_len[u])]  # holder[d - 1]: edge of token d
        assert [trie.edge_holding(end, d) for d in range(1, trie.depth[end] + 1)] == holder
        for d in (0, -1, trie.depth[end] + 1):
            with pytest.raises(ValueError, match=f"holds the token at depth {d}$"):
                trie.edge_holding(end, d)
