"""Who requests which radix edge when: the data the batched optima are built from.

Steps t = 0..S-1 serve batches Q_t. Edge v of the workload's :class:`PrefixTrie` is requested at step t
when some query of Q_t contains it; its multiplicity m_t(v) is the number of queries of Q_t that do
(repeats count again). A token of v missing before step t costs m_t(v) misses: every one of those
queries prefills it. Every query containing a child contains its parent, so m_t(child) <= m_t(parent)
and R(child) is a subset of R(parent).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kvtheory.model.trie import PrefixTrie


def edge_requests(trie: PrefixTrie, steps: Sequence[Sequence[int]]) -> dict[int, list[tuple[int, int]]]:
    """{edge v: [(t, m_t(v)) for each step t whose batch contains v, t increasing]}.

    >>> trie = PrefixTrie([[1, 2], [1, 3]])
    >>> requests = edge_requests(trie, [[0, 1], [1]])
    >>> requests[trie.path(0)[0]]   # the shared token (1): twice at step 0, once at step 1
    [(0, 2), (1, 1)]
    """
    requests: dict[int, list[tuple[int, int]]] = {}
    for t, step in enumerate(steps):
        for v, m in Counter(v for j in step for v in trie.path(j)).items():
            requests.setdefault(v, []).append((t, m))
    return requests
