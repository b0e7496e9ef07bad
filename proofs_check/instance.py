"""An instance: a workload plus the configuration a claim speaks of (docs/model.md, docs/cluster.md).

Single-worker claims use ``budget`` B and ``batch`` beta; routing claims add ``workers`` M identical
workers of budget B each, with service time Cost_ij = a_cached*h_ij + a_miss*(|q_j| - h_ij) + O_j where
O_j = ``a_out`` * output_len_j (0 when a query has no output length).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

from kvtheory.model.batches import batches, footprint, slack
from kvtheory.model.workload import Workload


@dataclass(frozen=True, eq=False)
class Instance:
    workload: Workload
    budget: int
    batch: int = 1
    workers: int = 1
    a_cached: int | float = 1
    a_miss: int | float = 1
    a_out: int | float = 1
    #: where the instance comes from: ``hypothesis``, a family with its parameters, a file
    origin: str = ""
    #: extra facts a family knows about its instance (e.g. the sequence length n)
    meta: dict = field(default_factory=dict)

    def with_(self, **changes) -> Instance:
        return replace(self, **changes)

    # -- single worker ----------------------------------------------------------------------------
    @property
    def max_length(self) -> int:
        return self.workload.max_length

    @property
    def k(self) -> int:
        """k = B - beta*L_max + 1 (docs/model.md §The slack k)."""
        return slack(self.budget, self.max_length, self.batch)

    @cached_property
    def batch_footprints(self) -> list[int]:
        """|union of the token nodes| of each batch, in order."""
        trie = self.workload.trie
        return [footprint(trie, [trie.path(j) for j in group]) for group in batches(len(self.workload), self.batch)]

    @property
    def max_footprint(self) -> int:
        return max(self.batch_footprints)

    @property
    def footprint_slack(self) -> int:
        """k_F = B - F_max + 1, with F_max the largest batch footprint: the slack the batches really leave."""
        return self.budget - self.max_footprint + 1

    def repeats_in_batches(self) -> list[tuple[int, int, int]]:
        """(batch number, first query, repeated query) for every query that repeats inside its batch."""
        ends = self.workload.trie.end
        found = []
        for number, group in enumerate(batches(len(self.workload), self.batch)):
            seen: dict[int, int] = {}
            for j in group:
                if ends[j] in seen:
                    found.append((number, seen[ends[j]], j))
                else:
                    seen[ends[j]] = j
        return found

    # -- several workers --------------------------------------------------------------------------
    def output_time(self, j: int):
        o = self.workload[j].output_len
        return 0 if o is None else self.a_out * o

    def full_cost(self, j: int):
        """Service time of q_j with no hit: a_miss*|q_j| + O_j."""
        return self.a_miss * self.workload[j].length + self.output_time(j)

    def best_cost(self, j: int):
        """Service time of q_j with every token a hit: a_cached*|q_j| + O_j."""
        return self.a_cached * self.workload[j].length + self.output_time(j)

    def describe(self) -> str:
        parts = [f"n={len(self.workload)}", f"B={self.budget}", f"L_max={self.max_length}"]
        if self.batch != 1:
            parts.append(f"beta={self.batch}")
        if self.workers != 1:
            parts += [f"M={self.workers}", f"a_cached={self.a_cached}", f"a_miss={self.a_miss}"]
        else:
            parts.append(f"k={self.k}")
        return " ".join(parts)
