"""A user-written eviction policy as a rule, run through ``ratio``, ``check`` and the conformance suite
(README §Extending).

MRU-leaf evicts, one token at a time, the last token of the cached leaf requested most recently (ties: the
larger trie node id; never one on the current batch's paths). It is the classic answer to a cyclic request
pattern, where LRU misses every request, and poor on recency-friendly ones. The engine keeps the cache and
its books and serves both eviction amounts; the rule is the priority below.

From the command line (``--plugin`` imports this file first, which registers the policy):

    kvtheory --plugin examples/custom_policy.py ratio --adversary cyclic --param k=8 --param n=2000 \\
        --budget 11 --policy mru-leaf --json
    kvtheory --plugin examples/custom_policy.py check C3 --policy mru-leaf --instances 50

From Python: ``python examples/custom_policy.py``.
"""

from __future__ import annotations

import kvtheory as kv


@kv.register_policy
class MostRecentLeaf(kv.PriorityRule):
    """MRU-leaf: the leaf requested most recently goes first (ties: the larger trie node id)."""

    name = "mru-leaf"

    def priority(self, leaf: kv.LeafView) -> tuple[int, int]:
        return (-leaf.last_access, -leaf.edge)


def main() -> None:
    from kvtheory.testing import check_policy
    from proofs_check import Options, check_claim, get

    check_policy(MostRecentLeaf)  # raises AssertionError naming the rule broken, if one is
    print("mru-leaf passes check_policy")
    cyclic = kv.generate("cyclic", {"k": 8, "L": 4, "n": 2000})
    for policy in ("lru", "mru-leaf"):
        report = kv.competitive_ratio(cyclic, 11, policy)
        print(f"cyclic k=8: {policy:<9} ALG/OPT = {report.ratios[0]:.3f}")
    result = check_claim(get("C3"), Options(policy=MostRecentLeaf, instances=50, out_dir=None))
    print(f"C3 (ALG <= k*OPT + B) for mru-leaf: {result.verdict}; worst ratio {result.worst.ratio:.3f}")


if __name__ == "__main__":
    main()
