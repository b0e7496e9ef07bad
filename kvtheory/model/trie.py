"""The static prefix trie of a query universe, compressed to radix edges.

Every cache state of docs/model.md §Cache is a prefix-closed set of token nodes of the queries seen. Compress the
trie of all queries of a workload so that a node stands where two queries diverge or a query ends: then
each radix edge e (from parent(e) to e) is a chain of ``edge_len[e]`` token nodes that no query enters
or leaves in the middle. Every query is a root path of whole edges, and any prefix-closed cache keeps,
on each edge, a prefix of its tokens (``kept[e]`` of them, counted from the edge's head). Policies and
optima therefore work per edge, never per token: this is what lets simulation cost grow with radix
edges rather than tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ROOT = 0


def _sort_key(tokens: np.ndarray) -> bytes:
    """Bytes whose lexicographic order is the lexicographic order of the int64 token sequence."""
    flipped = tokens.astype(np.int64, copy=False).view(np.uint64) ^ np.uint64(1 << 63)
    return flipped.astype(">u8").tobytes()


def _common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    m = min(a.size, b.size)
    differ = np.flatnonzero(a[:m] != b[:m])
    return int(differ[0]) if differ.size else m


#: Neighbours whose shorter sequence has more tokens than this are compared one pair at a time (a slice compare
#: costs a few microseconds a pair, the batched gather ten nanoseconds or so a token): see _adjacent_common_prefixes.
SHORT_PAIR = 256


def _adjacent_common_prefixes(tokens: np.ndarray, offsets: np.ndarray, order: list[int], chunk: int = 1 << 20) -> list:
    """The common prefix of sequences ``order[i]`` and ``order[i + 1]`` for every i (a list of ints), sequence j
    being ``tokens[offsets[j]:offsets[j + 1]]``: :func:`_common_prefix` of every pair, those whose shorter
    sequence has at most :data:`SHORT_PAIR` tokens together, in numpy passes over at most about ``chunk``
    compared token pairs each, the others one by one."""
    sequence = np.asarray(order, dtype=np.int64)
    first, second = sequence[:-1], sequence[1:]
    sizes = np.diff(offsets)
    shorter = np.minimum(sizes[first], sizes[second])  # the tokens compared in each pair
    lcps = np.zeros(first.size, dtype=np.int64)  # a pair with an empty sequence shares nothing
    for i in np.flatnonzero(shorter > SHORT_PAIR).tolist():
        a, b = int(first[i]), int(second[i])
        lcps[i] = _common_prefix(tokens[offsets[a] : offsets[a + 1]], tokens[offsets[b] : offsets[b + 1]])
    pairs = np.flatnonzero((shorter > 0) & (shorter <= SHORT_PAIR))
    reach = np.cumsum(shorter[pairs])
    start = 0
    while start < pairs.size:
        done = int(reach[start - 1]) if start else 0
        stop = max(int(np.searchsorted(reach, done + chunk, side="right")), start + 1)
        which = pairs[start:stop]
        compared = shorter[which]
        heads = np.cumsum(compared) - compared  # where each pair's run starts in this pass
        k = np.arange(int(compared.sum()), dtype=np.int64) - np.repeat(heads, compared)  # the offset in the pair
        differ = (
            tokens[np.repeat(offsets[first[which]], compared) + k]
            != tokens[np.repeat(offsets[second[which]], compared) + k]
        )
        # the first differing offset of each pair, or its whole shorter length when none differs
        lcps[which] = np.minimum.reduceat(np.where(differ, k, np.repeat(compared, compared)), heads)
        start = stop
    return lcps.tolist()


class PrefixTrie:
    """Compressed trie over token sequences; node 0 is the root (the empty prefix, depth 0).

    Attributes: ``parent[v]``, ``depth[v]`` (tokens from the root to v), ``edge_len[v]`` =
    depth[v] - depth[parent[v]], ``children[v]``, ``end[j]`` (node where sequence j ends) and
    ``path(j)`` (the nodes of sequence j from the root's child down to ``end[j]``).

    >>> trie = PrefixTrie([[1, 2, 3], [1, 2, 4], [1, 2]])
    >>> [trie.depth[v] for v in trie.path(0)]
    [2, 3]
    >>> trie.distinct_tokens
    4
    """

    def __init__(self, sequences: Sequence) -> None:
        arrays = [np.asarray(s, dtype=np.int64) for s in sequences]
        if not arrays:
            raise ValueError("a trie needs at least one sequence")
        if all(a.size == 1 for a in arrays):
            self._one_token_sequences(np.concatenate(arrays))
        else:
            self._build_sorted(arrays)

    def _build_sorted(self, arrays: list[np.ndarray]) -> None:
        """The general construction: the sequences in sorted order and their common prefixes, to
        :meth:`_build`. Short sequences (:data:`SHORT_PAIR` tokens or fewer on average) have their sort keys
        (:func:`_sort_key`) cut from one key of all of them, and the common prefixes of neighbours found together
        (:func:`_adjacent_common_prefixes`); longer ones are keyed and compared one by one."""
        sizes = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
        if int(sizes.sum()) > SHORT_PAIR * sizes.size or any(a.ndim != 1 for a in arrays):
            # long sequences (one key and one gather of all their tokens would cost more than they save), or
            # not sequences of tokens: keyed and compared one by one
            keys = [_sort_key(a) for a in arrays]
            order = sorted(range(len(arrays)), key=keys.__getitem__)
            lcps = [_common_prefix(arrays[a], arrays[b]) for a, b in zip(order, order[1:])]
            self._build(order, [int(a.size) for a in arrays], lcps)
            return
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        tokens = np.concatenate(arrays)
        key = _sort_key(tokens)
        bounds = (offsets * 8).tolist()  # 8 bytes a token
        keys = [key[a:b] for a, b in zip(bounds, bounds[1:])]
        order = sorted(range(len(arrays)), key=keys.__getitem__)
        lcps = _adjacent_common_prefixes(tokens, offsets, order)
        self._build(order, sizes.tolist(), lcps)

    @classmethod
    def of_one_token_queries(cls, tokens: np.ndarray) -> PrefixTrie:
        """The trie of the one-token sequences (t_1), ..., (t_n), straight from the int64 array of the t_j:
        the same trie as ``PrefixTrie([[t] for t in tokens])``, without a Python object per sequence.

        >>> PrefixTrie.of_one_token_queries(np.array([7, 3, 7])).end
        [2, 1, 2]
        """
        trie = cls.__new__(cls)
        trie._one_token_sequences(np.asarray(tokens, dtype=np.int64))
        return trie

    @classmethod
    def from_blocks(cls, block_ids: Sequence[Sequence[int]], lengths: Sequence[int], block_size: int) -> PrefixTrie:
        """The trie of block sequences, without expanding them to tokens (docs/formats.md §Mooncake traces).

        Sequence j is ``block_ids[j]`` (ids h_1..h_n), ``lengths[j]`` tokens long: every block holds
        ``block_size`` tokens but the last, which holds the rest. Block h is one fixed run of ``block_size``
        tokens, and a shorter last block holds a head of it; so two sequences share exactly
        min(c * block_size, L_a, L_b) leading tokens, c being their common leading ids. The result equals
        the trie of the expanded token sequences (block h at offset i as token h * block_size + i, for
        non-negative ids), node for node.

        >>> trie = PrefixTrie.from_blocks([[7, 8], [7, 9], [7]], [4, 3, 1], block_size=2)
        >>> expanded = PrefixTrie([[14, 15, 16, 17], [14, 15, 18], [14]])
        >>> (trie.parent, trie.depth, trie.end) == (expanded.parent, expanded.depth, expanded.end)
        True
        """
        if not block_ids:
            raise ValueError("a trie needs at least one sequence")
        firsts = cls._one_token_blocks(block_ids, lengths)
        if firsts is not None:  # every sequence one token: token h_1 * block_size of its first block
            trie = cls.__new__(cls)
            trie._one_token_sequences(firsts)
            return trie
        order = sorted(range(len(block_ids)), key=lambda j: (block_ids[j], lengths[j]))
        lcps = []
        for a, b in zip(order, order[1:]):
            ids_a, ids_b = block_ids[a], block_ids[b]
            common = 0
            for x, y in zip(ids_a, ids_b):
                if x != y:
                    break
                common += 1
            lcps.append(min(common * block_size, lengths[a], lengths[b]))
        trie = cls.__new__(cls)
        trie._build(order, [int(n) for n in lengths], lcps)
        return trie

    @classmethod
    def from_block_columns(cls, ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, block_size: int):
        """:meth:`from_blocks` of sequences held as columns: sequence j is ids ``ids[offsets[j]:offsets[j + 1]]``,
        ``lengths[j]`` tokens long. The same trie, node for node: the sequences are sorted by byte keys of their
        ids (:func:`_sort_key`, the order of the id tuples), then by length, and neighbours' common ids found in
        numpy passes (:func:`_adjacent_common_prefixes`), without a Python int per id.

        >>> a = PrefixTrie.from_block_columns(np.array([7, 8, 7, 9, 7]), np.array([0, 2, 4, 5]), np.array([4, 3, 1]), 2)
        >>> b = PrefixTrie.from_blocks([[7, 8], [7, 9], [7]], [4, 3, 1], block_size=2)
        >>> (a.parent, a.depth, a.end) == (b.parent, b.depth, b.end)
        True
        """
        ids, offsets = np.asarray(ids, dtype=np.int64), np.asarray(offsets, dtype=np.int64)
        sizes = lengths.tolist()
        key = _sort_key(ids)
        bounds = (offsets * 8).tolist()  # 8 bytes an id
        keys = [(key[a:b], n) for a, b, n in zip(bounds, bounds[1:], sizes)]
        order = sorted(range(len(sizes)), key=keys.__getitem__)
        common = _adjacent_common_prefixes(ids, offsets, order)
        lcps = [min(c * block_size, sizes[a], sizes[b]) for c, a, b in zip(common, order, order[1:])]
        trie = cls.__new__(cls)
        trie._build(order, sizes, lcps)
        return trie

    @staticmethod
    def _one_token_blocks(block_ids: Sequence[Sequence[int]], lengths: Sequence[int]) -> np.ndarray | None:
        """The first ids h_1 of the sequences, as int64, when every sequence is one token long (and has an id);
        else None. Two such sequences share their token exactly when their first ids are equal, and they sort as
        those ids do (h * block_size + 0 is increasing in h): the trie of the one-token sequences of the h_1."""
        ones = lengths.count(1) == len(lengths) if isinstance(lengths, list) else all(n == 1 for n in lengths)
        if not ones or min(map(len, block_ids)) == 0:
            return None
        try:
            firsts = np.array([ids[0] for ids in block_ids])
        except OverflowError:
            return None
        # not a float, a bool, beyond int64 (object) or a nested sequence
        return firsts if firsts.dtype == np.int64 and firsts.ndim == 1 else None

    def _build(self, order: list[int], lengths: list[int], lcps: list[int]) -> None:
        """Assemble the compressed trie from the sequences in lexicographic ``order``, their ``lengths`` and
        the longest common prefix ``lcps[i]`` of ``order[i]`` and ``order[i + 1]``."""
        parent = [-1]
        depth = [0]
        stack = [ROOT]
        end = [0] * len(lengths)
        previous = None
        for position, j in enumerate(order):
            lcp = 0 if previous is None else lcps[position - 1]
            if previous is not None and lcp == lengths[previous] == lengths[j]:
                end[j] = end[previous]
                continue
            popped = None
            while depth[stack[-1]] > lcp:
                popped = stack.pop()
            if depth[stack[-1]] < lcp:
                split = len(parent)
                parent.append(stack[-1])
                depth.append(lcp)
                parent[popped] = split
                stack.append(split)
            leaf = len(parent)
            parent.append(stack[-1])
            depth.append(lengths[j])
            stack.append(leaf)
            end[j] = leaf
            previous = j
        self.parent = parent
        self.depth = depth
        self.edge_len = [0] + [depth[v] - depth[parent[v]] for v in range(1, len(parent))]
        self.children: list[list[int]] = [[] for _ in parent]
        for v in range(1, len(parent)):
            self.children[parent[v]].append(v)
        self.end = end
        self._paths: dict[int, tuple[int, ...]] = {}
        self._euler()

    def _one_token_sequences(self, tokens: np.ndarray) -> None:
        """The same trie as the general construction when every sequence is one token: the root and one
        leaf per distinct token, numbered in token order (the sorted order the construction walks)."""
        distinct, inverse = np.unique(tokens, return_inverse=True)
        leaves = distinct.size
        self.parent = [-1] + [ROOT] * leaves
        self.depth = [0] + [1] * leaves
        self.edge_len = list(self.depth)
        self.children = [list(range(1, leaves + 1))] + [[] for _ in range(leaves)]
        self.end = (inverse.reshape(-1) + 1).tolist()
        self._paths = {}
        # _euler's preorder, computed at once: the root, then its children from the last to the first
        leaf_tin = leaves + 1 - np.arange(1, leaves + 1)
        self.tin = [0, *leaf_tin.tolist()]
        self.tout = [leaves + 1, *(leaf_tin + 1).tolist()]

    def _euler(self) -> None:
        tin = [0] * len(self.parent)
        tout = [0] * len(self.parent)
        clock = 0
        stack = [(ROOT, False)]
        while stack:
            node, done = stack.pop()
            if done:
                tout[node] = clock
                continue
            tin[node] = clock
            clock += 1
            stack.append((node, True))
            stack.extend((child, False) for child in self.children[node])
        self.tin = tin
        self.tout = tout

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    @property
    def distinct_tokens(self) -> int:
        """Number of distinct token nodes: the sum of all edge lengths."""
        return sum(self.edge_len)

    @property
    def sequence_tokens(self) -> int:
        """Tokens of all the sequences, repeats counted: the sum of the depths of their end nodes."""
        return int(self.column("depth")[self.column("end")].sum())

    def column(self, name: str) -> np.ndarray:
        """The int64 array of the list ``name`` (``parent``, ``depth``, ``edge_len``, ``tin``, ``tout``, ``end``),
        made on first use and shared by every later caller over this trie (the runs of a miss-ratio curve): a
        caller reads it and never writes to it."""
        columns = self.__dict__.setdefault("_columns", {})
        if name not in columns:
            columns[name] = np.asarray(getattr(self, name), dtype=np.int64)
        return columns[name]

    def is_ancestor(self, a: int, b: int) -> bool:
        """True when node a is b or an ancestor of b."""
        return self.tin[a] <= self.tin[b] and self.tout[b] <= self.tout[a]

    def edge_holding(self, node: int, d: int) -> int:
        """The node u on the root path of ``node`` whose edge holds the token at depth d, that is
        depth[parent[u]] < d <= depth[u], for 1 <= d <= depth[node] (ValueError otherwise). The walk up
        ends at a child of the root at the latest, whatever d is.

        >>> trie = PrefixTrie([[1, 2, 3], [1, 2, 4]])
        >>> [trie.edge_holding(trie.end[0], d) == trie.end[0] for d in (1, 2, 3)]
        [False, False, True]
        """
        depth, parent = self.depth, self.parent
        if not 1 <= d <= depth[node]:
            raise ValueError(f"no edge above node {node} (depth {depth[node]}) holds the token at depth {d}")
        while depth[parent[node]] >= d:
            node = parent[node]
        return node

    def node_path(self, node: int) -> tuple[int, ...]:
        """Nodes from the root's child down to ``node`` (the root itself excluded)."""
        path = self._paths.get(node)
        if path is None:
            nodes = []
            v = node
            while v != ROOT:
                nodes.append(v)
                v = self.parent[v]
            path = tuple(reversed(nodes))
            self._paths[node] = path
        return path

    def path(self, j: int) -> tuple[int, ...]:
        """The radix path of sequence j."""
        return self.node_path(self.end[j])

    def length(self, j: int) -> int:
        return self.depth[self.end[j]]
