"""A user-written eviction policy, run through ``ratio`` and ``check`` (README §Extending).

MRU-leaf evicts, one token at a time, the last token of the cached leaf that was requested most
recently (never one on the current batch's paths). It is the classic answer to a cyclic request
pattern, where LRU misses every request, and poor on recency-friendly ones.

From the command line (``--plugin`` imports this file first, which registers the policy):

    kvtheory --plugin examples/custom_policy.py ratio --adversary cyclic --param k=8 --param n=2000 \\
        --budget 11 --policy mru-leaf --json
    kvtheory --plugin examples/custom_policy.py check C3 --policy mru-leaf --instances 50

From Python: ``python examples/custom_policy.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import kvtheory as kv


@kv.register_policy
class MostRecentLeaf(kv.EvictionPolicy):
    """MRU-leaf: the cache as tokens kept per radix edge (a prefix of each edge's tokens); to make room,
    remove the last token of the cached leaf edge whose latest request is the most recent (ties: the
    larger trie node id), skipping the current batch's edges."""

    name = "mru-leaf"

    def __init__(self, trie: kv.PrefixTrie, budget: int, *, seed: int | None = None) -> None:
        super().__init__(trie, budget, seed=seed)
        self._kept: dict[int, int] = {}  # edge -> tokens cached, counted from its head
        self._used: dict[int, int] = {}  # edge -> the last step whose batch contained it
        self._step = 0

    def cached_prefix(self, j: int) -> int:
        return sum(self._kept.get(v, 0) for v in self.trie.path(j))

    def kept(self) -> dict[int, int]:
        return dict(self._kept)

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie = self.trie
        self._step += 1
        hits = [self.cached_prefix(j) for j in batch]
        on_paths = {v for j in batch for v in trie.path(j)}
        missing = sum(trie.edge_len[v] - self._kept.get(v, 0) for v in on_paths)
        while self.size + missing > self.budget:
            parents = {trie.parent[v] for v in self._kept}
            leaves = [v for v in self._kept if v not in parents and v not in on_paths]
            victim = max(leaves, key=lambda v: (self._used[v], v))
            self._kept[victim] -= 1
            self.size -= 1
            if self._kept[victim] == 0:
                del self._kept[victim]
        for v in on_paths:
            self.size += trie.edge_len[v] - self._kept.get(v, 0)
            self._kept[v] = trie.edge_len[v]
            self._used[v] = self._step
        return hits


def main() -> None:
    from proofs_check import Options, check_claim, get

    cyclic = kv.generate("cyclic", {"k": 8, "L": 4, "n": 2000})
    for policy in ("lru", "mru-leaf"):
        report = kv.competitive_ratio(cyclic, 11, policy)
        print(f"cyclic k=8: {policy:<9} ALG/OPT = {report.ratios[0]:.3f}")
    result = check_claim(get("C3"), Options(policy=MostRecentLeaf, instances=50, out_dir=None))
    print(f"C3 (ALG <= k*OPT + B) for mru-leaf: {result.verdict}; worst ratio {result.worst.ratio:.3f}")


if __name__ == "__main__":
    main()
