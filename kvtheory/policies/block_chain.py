"""Cache blocks named by their chain, on kvtheory's token-level trie (docs/policies.md §vllm).

With block size b, block i (from 1) of a query of L tokens holds its tokens (i - 1) b + 1 .. i b, for
i <= floor(L / b) (the full blocks; the partial last block is never named). vLLM keys such a block by a hash of
its tokens chained to its parent block's hash, so two queries' block i have the same key exactly when their
first i b tokens agree. On the trie that key is the token node at depth i b on the query's path: the pair
``(u, i b)`` where u is the radix edge holding that token. A set of such keys need not be prefix-closed; a
block is **reachable** when it and every block before it on its chain are in the set.
"""

from __future__ import annotations

from collections.abc import Collection

from kvtheory.model.trie import PrefixTrie

#: a block's key: (radix edge holding the block's last token, that token's depth)
BlockKey = tuple[int, int]


def chain_keys(trie: PrefixTrie, node: int, block_size: int) -> list[BlockKey]:
    """The keys of the full blocks on the root path of trie node ``node``, first block first:
    ``[(u_i, i b) for i = 1 .. floor(depth(node) / b)]``.

    >>> trie = PrefixTrie([[1, 2, 3, 4, 5], [1, 2, 3, 9]])
    >>> chain_keys(trie, trie.end[0], 2) == [(trie.parent[trie.end[0]], 2), (trie.end[0], 4)]
    True
    """
    depth, b = trie.depth, block_size
    keys: list[BlockKey] = []
    for u in trie.node_path(node):
        top = depth[trie.parent[u]]
        first = (top // b + 1) * b
        keys.extend((u, d) for d in range(first, depth[u] + 1, b))
    return keys


def parent_key(trie: PrefixTrie, key: BlockKey, block_size: int) -> BlockKey | None:
    """The key of the block before ``key`` on its chain, None for a first block."""
    u, d = key
    if d == block_size:
        return None
    return trie.edge_holding(u, d - block_size), d - block_size


def reachable(trie: PrefixTrie, cached: Collection[BlockKey], block_size: int) -> set[BlockKey]:
    """The keys of ``cached`` whose whole chain (every block before them) is in ``cached``."""
    found: set[BlockKey] = set()
    for key in sorted(cached, key=lambda k: k[1]):  # parents first
        parent = parent_key(trie, key, block_size)
        if parent is None or parent in found:
            found.add(key)
    return found


def covered_tokens(trie: PrefixTrie, keys: Collection[BlockKey]) -> dict[int, int]:
    """The token nodes on the root paths of the blocks ``keys`` (each block's tokens and all before them), as
    {radix edge v: tokens of v covered, counted from the edge's head}: a prefix-closed cache in the form of
    :meth:`~kvtheory.policies.EvictionPolicy.kept`."""
    depth, parent, edge_len = trie.depth, trie.parent, trie.edge_len
    kept: dict[int, int] = {}
    for u, d in keys:
        kept[u] = max(kept.get(u, 0), d - depth[parent[u]])
        v = parent[u]
        while v and kept.get(v, 0) != edge_len[v]:
            kept[v] = edge_len[v]
            v = parent[v]
    return kept
