"""Time-based simulation of M workers behind a router (docs/cluster.md §Cluster simulation), as a heapq event loop.

Each query j arrives at a_j and is routed at once. Worker i owns an :class:`EvictionPolicy` over the
workload's shared prefix trie and serves the queries routed to it in arrival order: whenever it is
idle and its queue is not, it takes the longest prefix of its queue of at most ``batch`` queries whose
token footprint fits its budget, serves it through ``policy.serve`` (hits against the cache as it was
before the batch), prefills for sum(a_cached * h + a_miss * (L - h)) and then decodes the batch in lock
step (:meth:`Worker.decode_batch`). With batch 1 the service time of j on i is exactly

    Cost_ij = a_cached_i * h_ij + a_miss_i * (|q_j| - h_ij) + O_ij.

With ``engine="continuous"`` the workers batch continuously instead, as SGLang schedules
(:mod:`kvtheory.cluster.engines`); the routing, arrivals, seeds and metrics are the same.

Latency = finish - arrival; TTFT = prefill end - arrival; throughput = completed / (last finish - first
arrival); makespan = last finish - first arrival; busy_i = the sum of worker i's service times.

Order of events at one instant: completions, then arrivals (routed in order), then idle workers start.
So with every arrival at 0 the routing sees no completion and each worker's busy time is the offline
load P_i of docs/cluster.md §Offline makespan (the paper's makespan objective is max_i busy_i), and a
single worker serves batches of consecutive queries exactly as ``run_policy`` does: its hits are the
same, query for query.

Determinism: worker 0's policy gets ``seed`` itself (so one worker reproduces ``kvtheory evict
--seed S``), worker i > 0 a seed drawn from SeedSequence([seed, i]); the router and Poisson arrivals get
streams of their own. Work per query: the router's walk of the query's radix path per worker, and the
policy's per-edge work.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.engines import DEFAULT_CHUNK_SIZE, ENGINES, ContinuousEngine
from kvtheory.cluster.routers import Router, RouterView, router_class
from kvtheory.errors import InputError
from kvtheory.model.batches import footprint
from kvtheory.model.workload import Workload
from kvtheory.policies import EvictionPolicy, policy_class
from kvtheory.policies.base import check_evict_amount
from kvtheory.policies.ledger import served_checked

_COMPLETE, _FREE = 0, 1
_ROUTER_STREAM, _ARRIVAL_STREAM = 1 << 20, 2 << 20


def worker_seed(seed: int | None, i: int) -> int | None:
    """Seed of worker i's eviction policy: ``seed`` itself for worker 0."""
    if seed is None:
        return None
    if i == 0:
        return seed
    return int(np.random.SeedSequence([seed, i]).generate_state(1)[0])


def stream(seed: int | None, which: int) -> np.random.Generator:
    return np.random.default_rng(None if seed is None else np.random.SeedSequence([seed, which]))


def arrival_times(workload: Workload, rate: float | None, seed: int | None) -> np.ndarray:
    """The file's arrival times, or Poisson arrivals at ``rate`` queries/s (first at 0; inf: all at 0)."""
    n = len(workload)
    if rate is None:
        missing = [j for j, q in enumerate(workload) if q.arrival is None]
        if missing:
            raise InputError(
                f"{workload.where(missing[0])}: query has no arrival time; give arrivals in the file or --rate QPS"
            )
        return np.array([q.arrival for q in workload], dtype=float)
    if not rate > 0:
        raise InputError(f"--rate must be a positive number of queries per second (or inf), got {rate}")
    if math.isinf(rate):
        return np.zeros(n)
    gaps = stream(seed, _ARRIVAL_STREAM).exponential(1.0 / rate, size=n - 1)
    return np.concatenate(([0.0], np.cumsum(gaps)))


def output_lengths(workload: Workload, output_len: int | None) -> list[int]:
    """Each query's output length: ``output_len`` when given, else the file's (missing: 0)."""
    if output_len is not None:
        if isinstance(output_len, bool) or not isinstance(output_len, int) or output_len < 0:
            raise InputError(f"--output-len must be a non-negative integer, got {output_len}")
        return [output_len] * len(workload)
    return [q.output_len or 0 for q in workload]


def check_engine(engine: str, batch: int, chunk_size: int | None) -> int | None:
    """The continuous engine's chunk size (default :data:`DEFAULT_CHUNK_SIZE`); None for the batch engine."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    if engine == "batch":
        if chunk_size is not None:
            raise InputError("--chunk-size goes with --engine continuous (the batch engine prefills whole batches)")
        return None
    if batch != 1:
        raise InputError("--batch sets the batch engine's batch size; --engine continuous forms its own batches")
    if chunk_size is None:
        return DEFAULT_CHUNK_SIZE
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise InputError(f"--chunk-size must be a positive number of tokens, got {chunk_size}")
    return int(chunk_size)


def check_budgets(workload: Workload, cluster: Cluster) -> None:
    """Every query must fit in every worker's cache (any router may send it anywhere)."""
    longest = max(range(len(workload)), key=lambda j: workload[j].length)
    length = workload[longest].length
    for i, w in enumerate(cluster.workers):
        if length > w.budget:
            raise InputError(
                f"{workload.where(longest)}: query has {length} tokens, more than worker {i}'s budget B = {w.budget}"
            )


@dataclass
class ClusterResult:
    """Per-query outcome arrays (index j = query j) and per-worker totals of one simulated run."""

    router: str
    eviction: str
    workers: int
    batch: int
    seed: int | None
    arrival: np.ndarray
    worker: np.ndarray
    hits: np.ndarray
    length: np.ndarray
    output_len: np.ndarray
    start: np.ndarray
    prefill_end: np.ndarray
    finish: np.ndarray
    busy: np.ndarray
    service: list[list[float]] = field(repr=False)
    router_state: dict = field(default_factory=dict)
    engine: str = "batch"
    engine_state: dict = field(default_factory=dict)
    evict_amount: str = "shortfall"

    @property
    def latency(self) -> np.ndarray:
        return self.finish - self.arrival

    @property
    def ttft(self) -> np.ndarray:
        return self.prefill_end - self.arrival

    @property
    def makespan(self) -> float:
        return float(self.finish.max() - self.arrival.min())

    @property
    def max_busy(self) -> float:
        """max_i busy_i: with every arrival at 0, the paper's offline makespan max_i P_i."""
        return float(self.busy.max())

    @property
    def hit_rate(self) -> float:
        return float(self.hits.sum() / self.length.sum())

    def to_dict(self) -> dict:
        latency, ttft = self.latency, self.ttft
        makespan = self.makespan
        per_worker = []
        for i in range(self.workers):
            mine = self.worker == i
            tokens = int(self.length[mine].sum())
            hits = int(self.hits[mine].sum())
            per_worker.append(
                {
                    "worker": i,
                    "queries": int(mine.sum()),
                    "tokens": tokens,
                    "hits": hits,
                    "hit_rate": hits / tokens if tokens else 0.0,
                    "busy": float(self.busy[i]),
                    "utilization": float(self.busy[i] / makespan) if makespan > 0 else 0.0,
                }
            )
        return {
            "router": self.router,
            "eviction": self.eviction,
            "evict_amount": self.evict_amount,
            "workers": self.workers,
            "engine": self.engine,
            "batch": self.batch,
            "seed": self.seed,
            "queries": int(self.length.size),
            "tokens": int(self.length.sum()),
            "hits": int(self.hits.sum()),
            "hit_rate": self.hit_rate,
            "latency_mean": float(latency.mean()),
            "latency_p50": float(np.percentile(latency, 50)),
            "latency_p95": float(np.percentile(latency, 95)),
            "ttft_mean": float(ttft.mean()),
            "ttft_p50": float(np.percentile(ttft, 50)),
            "ttft_p95": float(np.percentile(ttft, 95)),
            "throughput_qps": float(self.length.size / makespan) if makespan > 0 else math.inf,
            "makespan": makespan,
            "max_busy": self.max_busy,
            "per_worker": per_worker,
            "router_state": self.router_state,
            "engine_state": self.engine_state,
        }


class _Worker:
    __slots__ = ("spec", "policy", "queue", "busy_until", "idle", "busy")

    def __init__(self, spec, policy: EvictionPolicy) -> None:
        self.spec = spec
        self.policy = policy
        self.queue: deque[int] = deque()
        self.busy_until = 0.0
        self.idle = True
        self.busy = 0.0


class Simulation:
    """One run; build it, then call :meth:`run` once."""

    def __init__(
        self,
        workload: Workload,
        cluster: Cluster,
        router: str | type[Router],
        eviction: str | type[EvictionPolicy],
        *,
        batch: int = 1,
        seed: int | None = 0,
        rate: float | None = None,
        arrivals: Sequence[float] | None = None,
        output_len: int | None = None,
        router_options: Mapping[str, object] | None = None,
        oracle: bool = False,
        engine: str = "batch",
        chunk_size: int | None = None,
        evict_amount: str = "shortfall",
    ) -> None:
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise InputError(f"batch size must be a positive integer, got {batch}")
        self.engine = engine
        self.chunk_size = check_engine(engine, batch, chunk_size)
        check_budgets(workload, cluster)
        self.workload = workload
        self.cluster = cluster
        self.batch = int(batch)
        self.seed = seed
        trie = workload.trie
        self.trie = trie
        self.lengths = [q.length for q in workload]
        self.outputs = output_lengths(workload, output_len)
        if arrivals is not None:
            self.arrival = np.asarray(arrivals, dtype=float)
            if (
                self.arrival.shape != (len(workload),)
                or not np.all(np.isfinite(self.arrival))
                or self.arrival.min() < 0
            ):
                raise InputError("arrivals must be one finite non-negative time per query")
        else:
            self.arrival = arrival_times(workload, rate, seed)
        eviction_cls = policy_class(eviction) if isinstance(eviction, str) else eviction
        self.eviction = eviction_cls.name
        self.evict_amount = check_evict_amount(evict_amount)
        self.workers = []
        for i, spec in enumerate(cluster.workers):  # a user's policy is served through the engine's checks
            policy = eviction_cls.create(trie, spec.budget, seed=worker_seed(seed, i), evict_amount=evict_amount)
            self.workers.append(_Worker(spec, served_checked(policy, eviction_cls, spec.budget, evict_amount)))
        router_cls = router_class(router) if isinstance(router, str) else router
        options = dict(router_options or {})
        if oracle:
            if "oracle" not in router_cls.OPTIONS:
                raise InputError(f"router {router_cls.name!r} has no oracle mode")
            options["oracle"] = True
        self.view = RouterView(workload, cluster, self.outputs)
        router_seed = None if seed is None else int(stream(seed, _ROUTER_STREAM).integers(2**63))
        self.router = router_cls(self.view, seed=router_seed, options=options)
        if self.router.opts.get("oracle"):
            self.view._oracle = self
        self._continuous: ContinuousEngine | None = None

    # -- what an oracle router may ask --------------------------------------------------------------
    def true_cached(self, i: int, j: int) -> int:
        return self.workers[i].policy.cached_prefix(j)

    def true_backlog(self, i: int, now: float) -> float:
        if self._continuous is not None:
            return self._continuous.workers[i].backlog(now)
        w = self.workers[i]
        remaining = max(w.busy_until - now, 0.0) if not w.idle else 0.0
        policy, spec, lengths, outputs = w.policy, w.spec, self.lengths, self.outputs
        return remaining + sum(spec.cost(lengths[q], policy.cached_prefix(q), outputs[q]) for q in w.queue)

    # -- the event loop -----------------------------------------------------------------------------
    def _take(self, w: _Worker) -> list[int]:
        queue = w.queue
        group = [queue.popleft()]
        if self.batch > 1:
            trie = self.trie
            while queue and len(group) < self.batch:
                candidate = group + [queue[0]]
                if footprint(trie, [trie.path(q) for q in candidate]) > w.spec.budget:
                    break
                group.append(queue.popleft())
        return group

    def run(self) -> ClusterResult:
        if self.engine == "continuous":
            return self._run_continuous()
        n = len(self.workload)
        # Python floats and lists in the loop (numpy scalars cost several times more per operation); the
        # arithmetic is the same IEEE double arithmetic, so every time is the same to the bit
        arrival = self.arrival.tolist()
        order = sorted(range(n), key=lambda j: (arrival[j], j))
        worker_of = [-1] * n
        hits = [0] * n
        start = [0.0] * n
        prefill_end = [0.0] * n
        finish = [0.0] * n
        service: list[list[float]] = [[] for _ in self.workers]
        events: list[tuple[float, int, int, int]] = []  # (time, kind, sequence, payload)
        sequence = 0
        router, workers, lengths, outputs = self.router, self.workers, self.lengths, self.outputs
        cursor = 0
        waiting: set[int] = set()
        while cursor < n or events:
            now = min(events[0][0] if events else math.inf, arrival[order[cursor]] if cursor < n else math.inf)
            while events and events[0][0] <= now:
                _, kind, _, payload = heapq.heappop(events)
                if kind == _COMPLETE:
                    j = payload
                    i = int(worker_of[j])
                    router.complete(j, i, now, now - arrival[j], prefill_end[j] - arrival[j])
                else:
                    workers[payload].idle = True
                    if workers[payload].queue:
                        waiting.add(payload)
            while cursor < n and arrival[order[cursor]] <= now:
                j = order[cursor]
                cursor += 1
                i = router.dispatch(j, now)
                worker_of[j] = i
                workers[i].queue.append(j)
                waiting.add(i)
            for i in sorted(waiting):
                w = workers[i]
                if not w.idle or not w.queue:
                    continue
                group = self._take(w)
                got = w.policy.serve(group)
                spec = w.spec
                prefill = 0.0
                for q, h in zip(group, got):
                    hits[q] = h
                    start[q] = now
                    prefill += spec.prefill(lengths[q], h)
                done, decode = spec.decode_batch([lengths[q] for q in group], [outputs[q] for q in group])
                for q, d in zip(group, done):
                    prefill_end[q] = now + prefill
                    finish[q] = now + prefill + d
                    heapq.heappush(events, (finish[q], _COMPLETE, sequence, q))
                    sequence += 1
                took = prefill + decode
                service[i].append(took)
                w.busy += took
                w.busy_until = now + took
                w.idle = False
                heapq.heappush(events, (w.busy_until, _FREE, sequence, i))
                sequence += 1
            waiting.clear()
        return self._result(
            worker=np.array(worker_of, dtype=np.int64),
            hits=np.array(hits, dtype=np.int64),
            start=np.array(start),
            prefill_end=np.array(prefill_end),
            finish=np.array(finish),
            busy=np.array([w.busy for w in workers]),
            service=service,
        )

    def _run_continuous(self) -> ClusterResult:
        engine = self._continuous = ContinuousEngine(self, self.chunk_size)
        worker_of = engine.run()
        return self._result(
            worker=worker_of,
            hits=engine.hits,
            start=engine.start,
            prefill_end=engine.prefill_end,
            finish=engine.finish,
            busy=np.array([w.busy for w in engine.workers]),
            service=[w.service for w in engine.workers],
            engine_state=engine.state(),
        )

    def _result(self, **outcome) -> ClusterResult:
        """The run's :class:`ClusterResult`: ``outcome`` (what the engine measured) and the run's setting."""
        return ClusterResult(
            router=self.router.name,
            eviction=self.eviction,
            workers=len(self.workers),
            batch=self.batch,
            seed=self.seed,
            arrival=self.arrival.copy(),
            length=np.asarray(self.lengths, dtype=np.int64),
            output_len=np.asarray(self.outputs, dtype=np.int64),
            router_state=self.router.state(),
            engine=self.engine,
            evict_amount=self.evict_amount,
            **outcome,
        )


def simulate(
    workload: Workload,
    cluster: Cluster,
    router: str | type[Router],
    eviction: str | type[EvictionPolicy],
    **options,
) -> ClusterResult:
    """Simulate ``workload`` on ``cluster`` behind ``router`` with ``eviction`` on every worker.

    Options: batch, seed, rate (Poisson; inf = every query at 0), arrivals (explicit times),
    output_len (override), router_options (dict), oracle (bool), evict_amount (every worker's: shortfall or
    allocation), engine ("batch" or "continuous"), chunk_size (the continuous engine's prefill tokens per
    iteration). See :class:`Simulation`.
    """
    return Simulation(workload, cluster, router, eviction, **options).run()
