"""Block caches on the cluster's workers (docs/cluster.md §Blocks in the cluster).

At block size b > 1 (docs/model.md §Blocks) every worker's cache holds whole blocks of b tokens, and every
worker's budget B (tokens) must be a multiple of b. The simulation stays on the token-level workload (arrivals,
routing, prompt lengths L_j and the cost model are in tokens); each worker's policy is built here and answers the
engine and an oracle router in tokens:

* a section-1 policy (lru, rlt, ...; lru at b is SGLang's page_size = b) runs unchanged on the block-level
  workload of :func:`~kvtheory.model.blocks.block_workload` with B / b slots, exactly as ``run_policy(...,
  block_size=b)`` runs it: query j is the block-level query of its n_j = floor(L_j / b) full blocks, and it hits
  h_j = b x its block hits tokens. A query without a full block (L_j < b) is not served to the policy: it hits
  nothing and leaves the cache as it was, as serving it would;
* a block engine (``block_engine``, vllm) is built on the token-level trie with ``block_size=b`` and gives its
  hits in tokens itself: whole blocks, at most floor((L_j - 1) / b) of them (vLLM's last-token rule).

The engine charges a_cached h_j + a_miss (L_j - h_j): L_j - h_j are the tokens recomputed, the partial last
block included. A batch fits a worker when its blocks fit the B / b slots: the union of its full-block chains
(its footprint on the block-level trie) for a section-1 policy; sum_j ceil(L_j / b) for a block engine, the
blocks vLLM allocates to a batch that shares nothing (a bound: an admitted batch's allocation never fails).
At b = 1 none of this runs: the policies are built on the token trie as they always were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kvtheory.cluster.cluster import Cluster
from kvtheory.errors import InputError
from kvtheory.model.batches import footprint
from kvtheory.model.blocks import block_budget, block_workload
from kvtheory.model.workload import Workload
from kvtheory.policies.ledger import served_checked


def whole_blocks(cluster: Cluster, block_size: int) -> Cluster:
    """``cluster`` with every worker's budget rounded down to whole blocks, b x floor(B / b) (vLLM's pool of a
    memory's floor(B / b) blocks): for a budget the cost model derives, where a user's B must be a multiple."""
    return Cluster(tuple(replace(w, budget=block_size * (w.budget // block_size)) for w in cluster.workers))


class BlockLevelPolicy:
    """A section-1 policy over the block-level workload, seen in tokens: ``serve`` and ``cached_prefix`` take the
    token-level queries' indices and answer b x the block-level answers (0 for a query without a full block)."""

    def __init__(self, policy, index: Sequence[int], block_size: int) -> None:
        self.policy = policy
        self.index = index
        self.block_size = block_size

    def serve(self, batch: Sequence[int]) -> list[int]:
        index, b = self.index, self.block_size
        inner = [index[j] for j in batch if index[j] >= 0]
        got = iter(self.policy.serve(inner) if inner else ())
        return [b * next(got) if index[j] >= 0 else 0 for j in batch]

    def cached_prefix(self, j: int) -> int:
        i = self.index[j]
        return self.block_size * self.policy.cached_prefix(i) if i >= 0 else 0


class _Empty:
    """The block-level cache of a workload without a single full block: it never holds anything."""

    def serve(self, batch: Sequence[int]) -> list[int]:
        return [0] * len(batch)

    def cached_prefix(self, j: int) -> int:
        return 0


class BlockCaches:
    """How every worker of one run holds its cache at block size b > 1 for the policy class ``rule``."""

    def __init__(self, workload: Workload, block_size: int, rule: type) -> None:
        self.workload = workload
        self.block_size = b = int(block_size)
        self.rule = rule
        self.lengths = [q.length for q in workload]
        self.view = None if rule.block_engine else block_workload(workload, b)
        if self.view is not None:
            self.index = [-1] * len(workload)
            for i, j in enumerate(self.view.served.tolist()):
                self.index[j] = i

    def check(self, cluster: Cluster) -> None:
        """InputError unless every worker's B is a multiple of b and holds every query's blocks (any router may
        send any query anywhere): its n_j full blocks (a block engine: its ceil(L_j / b) allocated ones)."""
        b = self.block_size
        need = [-(-n // b) if self.view is None else n // b for n in self.lengths]
        longest = max(range(len(need)), key=need.__getitem__)
        for i, w in enumerate(cluster.workers):
            slots = block_budget(w.budget, b)
            if need[longest] > slots:
                what = "allocates" if self.view is None else "has"
                raise InputError(
                    f"{self.workload.where(longest)}: query {what} {need[longest]} blocks of b = {b} tokens, more "
                    f"than worker {i}'s B / b = {w.budget} / {b} = {slots}"
                )

    def policy(self, budget: int, seed: int | None, evict_amount: str):
        """A worker's policy of ``budget`` tokens, answering in tokens (served through the engine's checks as
        :func:`~kvtheory.policies.ledger.served_checked` decides)."""
        rule, b = self.rule, self.block_size
        if self.view is None:
            made = rule(self.workload.trie, budget, seed=seed, evict_amount=evict_amount, block_size=b)
            return served_checked(made, rule, budget, evict_amount)
        if self.view.workload is None:
            return _Empty()
        slots = budget // b
        made = rule.create(self.view.workload.trie, slots, seed=seed, evict_amount=evict_amount)
        return BlockLevelPolicy(served_checked(made, rule, slots, evict_amount), self.index, b)

    def fits(self, batch: Sequence[int], budget: int) -> bool:
        """Whether ``batch``'s blocks fit B / b slots (see the module)."""
        b = self.block_size
        if self.view is None:
            return sum(-(-self.lengths[j] // b) for j in batch) <= budget // b
        inner = [self.index[j] for j in batch if self.index[j] >= 0]
        if not inner:
            return True
        trie = self.view.workload.trie
        return footprint(trie, [trie.path(i) for i in inner]) <= budget // b
