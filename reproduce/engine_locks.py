"""What the continuous engine's way of protecting running requests costs (docs/cluster.md §Engines).

    python reproduce/engine_locks.py --seeds 15              # Table 1's setting, ~10 minutes on 2 cores
    python reproduce/engine_locks.py --seeds 2 --quick       # scaled-down gsp

The engine (kvtheory/cluster/engines.py) keeps running requests' prompts from being evicted by serving
them in the same batch as any admission that evicts, since the eviction-policy interface protects only
the paths of the batch being served. That is exact for the radix policies (tests/cluster/test_engines.py checks
L-LRU, token-LRU and FIFO-leaf hit for hit), but it touches the samplers' and LFU's bookkeeping (marks,
counts). Here each of rlt, rlt-authors, lfu and random-leaf also runs as a subclass with a true lock: the
running requests' paths are skipped by eviction without being served. Both variants run on the same workload,
arrivals and seeds (paper-size gsp, 4 x Llama-3.1-8B on L40, 12 q/s, output 4, lbgr router); printed:
per seed and variant the hit rate and p50 latency/TTFT, and per policy the mean paired difference
(served - locked) with its 95% t-interval.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys

from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.costmodel import cost_model_by_name
from kvtheory.cluster.engines import ContinuousWorker
from kvtheory.cluster.simulation import simulate
from kvtheory.policies import policy_class
from kvtheory.policies.ledger import CheckedPolicy
from kvtheory.stats import summarize
from kvtheory.workloads import generate

METRICS = ("hit_rate", "latency_p50", "ttft_p50")


class HeldSampler:
    """A leaf-token sampler (rlt, random-leaf) whose eviction never draws from the paths of ``held``."""

    held: list[int] = []
    _held_nodes: frozenset[int] | set[int] = frozenset()

    def _evict(self, tokens, overflow, on_paths):
        nodes = {v for j in self.held for v in self.trie.path(j)} - set(on_paths)
        self._held_nodes = nodes
        for v in nodes:
            self._leave_pool(v)
        try:
            super()._evict(tokens, overflow, on_paths)
        finally:
            self._held_nodes = frozenset()
            for v in sorted(nodes):  # back to the candidates if they are unmarked cached leaves
                if not self._marked[v] and self._kept[v] > 0 and self._cached_children[v] == 0:
                    self._join_pool(v)

    def _join_pool(self, v):
        if v not in self._held_nodes:
            super()._join_pool(v)


class HeldLFU:
    """LFU-leaf whose eviction skips the paths of ``held`` (their counts untouched): their entries leave the
    eviction heap for the eviction and go back after it."""

    held: list[int] = []

    def _evict(self, tokens, *rest):
        held = {v for j in self.held for v in self.trie.path(j)}
        heap = self._heap
        aside = [entry for entry in heap if -entry[2] in held]
        if aside:
            heap[:] = [entry for entry in heap if -entry[2] not in held]
            heapq.heapify(heap)
        try:
            super()._evict(tokens, *rest)
        finally:
            for entry in aside:
                heapq.heappush(heap, entry)


class HeldAuthors:
    """rlt-authors whose ``evict(k)`` also treats the paths of ``held`` as locked (as their engine's lock_ref)."""

    held: list[int] = []

    def _evict(self, tokens, locked):
        extra = set()
        for j in self.held:
            node = self._descend(self.trie.path(j))[0]
            while node is not self._root and node not in extra:
                extra.add(node)
                node = node.parent
        return super()._evict(tokens, locked | extra)


HELD = {"lfu": HeldLFU, "rlt-authors": HeldAuthors}


def serve_with_locks(self, new, matched):
    """ContinuousWorker._serve with a true lock: the admitted requests alone, the running ones held. The
    cluster serves each worker's policy through a CheckedPolicy (its ledger checks every batch), so the held
    requests are handed to the policy object inside it, whose eviction reads them."""
    inner = self.policy.policy if isinstance(self.policy, CheckedPolicy) else self.policy
    inner.held = self.admitted[: len(self.admitted) - len(new)]
    self.policy.serve(new)


def run(eviction: str, seeds: list[int], params: dict) -> dict:
    base = policy_class(eviction)
    held = type(f"Held{base.__name__}", (HELD.get(eviction, HeldSampler), base), {"name": eviction})
    cluster = Cluster.from_cost_models([cost_model_by_name("L40", "Llama-3.1-8B")], 4)
    original = ContinuousWorker._serve
    rows = {"served": [], "locked": []}
    for seed in seeds:
        workload = generate("gsp", params, seed=seed)
        for variant, cls in (("served", base), ("locked", held)):
            ContinuousWorker._serve = original if variant == "served" else serve_with_locks
            try:
                record = simulate(workload, cluster, "lbgr", cls, seed=seed, engine="continuous").to_dict()
            finally:
                ContinuousWorker._serve = original
            rows[variant].append({"seed": seed, **{m: record[m] for m in METRICS}})
    summary = {}
    for m in METRICS:
        diff = [a[m] - b[m] for a, b in zip(rows["served"], rows["locked"])]
        s = summarize(diff)
        summary[m] = {"mean_difference": s.mean, "ci95": list(s.ci), "identical_seeds": diff.count(0.0)}
    return {"eviction": eviction, "runs": rows, "served_minus_locked": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=15, help="seeds 0 .. N-1 (default 15)")
    parser.add_argument("--quick", action="store_true", help="gsp 32 x 8 instead of the paper's 128 x 32")
    parser.add_argument("--eviction", default="rlt,rlt-authors,lfu,random-leaf", help="comma-separated policies")
    args = parser.parse_args(argv)
    params = {"groups": 32, "prompts": 8} if args.quick else {}
    results = [run(e, list(range(args.seeds)), params) for e in args.eviction.split(",")]
    setting = "gsp, 4 x Llama-3.1-8B on L40, lbgr router, continuous engine"
    json.dump({"setting": setting, "results": results}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
