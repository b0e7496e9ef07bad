"""Workers and clusters: the linear service-time model of docs/cluster.md §Workers and service time.

Service time of query j (|q_j| = L tokens, h of them hits, o_j output tokens) on worker i:

    Cost_ij = a_cached_i * h + a_miss_i * (L - h) + O_ij,
    O_ij = sum_{t=0}^{o_j - 1} (decode_base_i + decode_per_context_i * (L + t)),

one decode step per output token, each reading the weights and the KV of its context so far (a step
is the roofline maximum of this memory time and its compute time decode_compute, which binds only for
implausible MFU/MBU settings: see :func:`kvtheory.cluster.costmodel.decode_iteration_seconds`). A batch
of queries served together prefills all of them (prefill is compute-bound: the prefill times add up)
and then decodes them in lock step: step s costs max(n * decode_compute, decode_base + decode_per_context
* (sum of the contexts of the n queries still generating)), and a query is done after its o_j-th step.
A batch of one query costs exactly Cost_ij.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvtheory.cluster.costmodel import CostModel, decode_iteration_seconds
from kvtheory.errors import InputError


@dataclass(frozen=True)
class Worker:
    """One worker: per-token prefill costs (s), its cache budget (tokens) and its decode cost."""

    a_miss: float
    a_cached: float
    budget: int
    decode_base: float = 0.0
    decode_per_context: float = 0.0
    label: str = ""
    decode_compute: float = 0.0

    def __post_init__(self) -> None:
        costs = (self.a_miss, self.a_cached, self.decode_base, self.decode_per_context, self.decode_compute)
        if not all(c >= 0 for c in costs):
            raise InputError("worker costs must be non-negative")
        if self.a_cached > self.a_miss:
            raise InputError(
                f"a_cached = {self.a_cached} exceeds a_miss = {self.a_miss}: a hit would cost more than a miss"
            )
        if isinstance(self.budget, bool) or int(self.budget) != self.budget or self.budget < 1:
            raise InputError(f"worker budget must be a positive number of tokens, got {self.budget}")

    @classmethod
    def from_cost_model(cls, cm: CostModel) -> Worker:
        label = f"{cm.model}@{cm.tp}x{cm.gpu}" if cm.tp > 1 else f"{cm.model}@{cm.gpu}"
        return cls(
            cm.a_miss, cm.a_cached, cm.budget, cm.decode_base, cm.decode_per_context_token, label, cm.decode_compute
        )

    def prefill(self, length: int, hits: int) -> float:
        """a_cached * h + a_miss * (L - h)."""
        return self.prefill_chunk(hits, length - hits)

    def prefill_chunk(self, cached: int, computed: int) -> float:
        """a_cached * cached + a_miss * computed: a prefill (or one chunk of it) that reads ``cached`` cached
        tokens and computes ``computed`` new ones."""
        return self.a_cached * cached + self.a_miss * computed

    def decode_steps(self, sequences: int, contexts: int, steps: int) -> float:
        """``steps`` decode iterations of ``sequences`` sequences whose contexts sum to ``contexts`` tokens."""
        return decode_iteration_seconds(
            self.decode_base, self.decode_per_context, self.decode_compute, sequences, contexts, steps
        )

    def output_time(self, length: int, output_len: int) -> float:
        """O_ij: ``output_len`` decode steps of one sequence starting at a context of ``length`` tokens."""
        return self.decode_steps(1, length, output_len)

    def cost(self, length: int, hits: int, output_len: int) -> float:
        """Cost_ij = a_cached * h + a_miss * (L - h) + O_ij."""
        return self.prefill(length, hits) + self.output_time(length, output_len)

    def decode_batch(self, lengths: Sequence[int], outputs: Sequence[int]) -> tuple[list[float], float]:
        """Lock-step decode of a batch: (each query's time from decode start to its last token, total)."""
        if len(lengths) == 1:
            t = self.output_time(lengths[0], outputs[0])
            return [t], t
        order = sorted(range(len(lengths)), key=lambda q: outputs[q])
        done = [0.0] * len(lengths)
        active_len = sum(lengths)
        active = len(lengths)
        elapsed, step = 0.0, 0
        for q in order:
            o = outputs[q]
            if o > step:
                # steps s = step .. o-1 of the `active` queries still generating, contexts active_len + active * s
                elapsed += self.decode_steps(active, active_len + active * step, o - step)
                step = o
            done[q] = elapsed
            active_len -= lengths[q]
            active -= 1
        return done, elapsed


@dataclass(frozen=True)
class Cluster:
    """M workers (possibly heterogeneous)."""

    workers: tuple[Worker, ...]

    def __post_init__(self) -> None:
        if not self.workers:
            raise InputError("a cluster needs at least one worker")

    def __len__(self) -> int:
        return len(self.workers)

    def __getitem__(self, i: int) -> Worker:
        return self.workers[i]

    @property
    def budgets(self) -> list[int]:
        return [w.budget for w in self.workers]

    @property
    def homogeneous(self) -> bool:
        return all(w == self.workers[0] for w in self.workers)

    @classmethod
    def uniform(
        cls,
        m: int,
        budget: int,
        *,
        a_miss: float = 1.0,
        a_cached: float = 0.0,
        decode_base: float = 0.0,
        decode_per_context: float = 0.0,
    ) -> Cluster:
        """M identical workers with the given coefficients (for theory: a_cached = a_miss removes caching)."""
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InputError(f"the number of workers must be a positive integer, got {m}")
        return cls(tuple(Worker(a_miss, a_cached, budget, decode_base, decode_per_context) for _ in range(m)))

    @classmethod
    def from_cost_models(cls, models: Sequence[CostModel], m: int) -> Cluster:
        """M workers whose cost models cycle over ``models`` (one model: a homogeneous cluster)."""
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InputError(f"--workers must be a positive integer, got {m}")
        return cls(tuple(Worker.from_cost_model(models[i % len(models)]) for i in range(m)))

    def describe(self) -> list[dict]:
        return [
            {"label": w.label, "a_miss": w.a_miss, "a_cached": w.a_cached, "budget": w.budget} for w in self.workers
        ]
