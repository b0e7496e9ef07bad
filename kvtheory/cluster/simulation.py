"""Time-based simulation of M workers behind a router (docs/cluster.md §Cluster simulation): the run's setting.

Each query j arrives at a_j and is routed at once. Worker i owns an :class:`EvictionPolicy` over the
workload's shared prefix trie. :class:`Simulation` checks the setting (arrivals, output lengths, budgets,
engine options), builds the workers' policies, the router and the engine, and runs them on the one
event loop of :mod:`kvtheory.cluster.events` (whose same-instant ordering rule holds for both engines).
The engine decides what a worker does with the queries routed to it: ``engine="batch"`` serves its queue
one batch after another (:mod:`kvtheory.cluster.batch_engine`; with batch 1 the service time of j on i
is exactly Cost_ij = a_cached_i * h_ij + a_miss_i * (|q_j| - h_ij) + O_ij), ``engine="continuous"``
batches continuously, as SGLang schedules (:mod:`kvtheory.cluster.engines`); the routing, arrivals,
seeds and metrics are the same. With ``block_size`` b > 1 every worker's cache holds whole blocks of b
tokens (:mod:`kvtheory.cluster.blocks`, batch engine only); at b = 1 it holds tokens, the model itself.

Latency = finish - arrival; TTFT = prefill end - arrival; throughput = completed / (last finish - first
arrival); makespan = last finish - first arrival; busy_i = the sum of worker i's service times.

At one instant the router hears of every completion before it routes any arrival, and free workers
start after both (:mod:`kvtheory.cluster.events`). So with every arrival at 0 the routing sees no
completion and each worker's busy time is the offline load P_i of docs/cluster.md §Offline makespan (the
paper's makespan objective is max_i busy_i), and a single worker serves batches of consecutive queries
exactly as ``run_policy`` does: its hits are the same, query for query.

Determinism: worker 0's policy gets ``seed`` itself (so one worker reproduces ``kvtheory evict
--seed S``), worker i > 0 a seed drawn from SeedSequence([seed, i]); the router and Poisson arrivals get
streams of their own. Work per query: the router's walk of the query's radix path per worker, and the
policy's per-edge work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kvtheory.cluster.batch_engine import BatchEngine
from kvtheory.cluster.blocks import BlockCaches
from kvtheory.cluster.cluster import Cluster
from kvtheory.cluster.engines import DEFAULT_CHUNK_SIZE, ENGINES, ContinuousEngine
from kvtheory.cluster.events import Engine, EventLoop
from kvtheory.cluster.predicted import cluster_predictor, worker_policy
from kvtheory.cluster.routers import Router, RouterView, router_class
from kvtheory.errors import InputError
from kvtheory.model.workload import Workload
from kvtheory.policies import EvictionPolicy, policy_class
from kvtheory.policies.base import check_evict_amount
from kvtheory.policies.ledger import served_checked

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


def check_block_size(block_size, engine: str) -> int:
    """The cache's block size b as an int; InputError unless it is a positive integer, and b > 1 runs on the batch
    engine (the continuous one locks and cuts prompts token by token)."""
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise InputError(f"block size must be a positive number of tokens, got {block_size!r}")
    if block_size > 1 and engine != "batch":
        raise InputError("--block-size b > 1 runs on the batch engine only (the continuous one holds tokens)")
    return int(block_size)


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
    #: for a policy that follows predictions (kvtheory.cluster.predicted): its predictor and the error eta summed
    #: over the workers; None otherwise, and then left out of :meth:`to_dict`
    predictor: str | None = None
    eta: float | None = None
    #: the cache's block size b (tokens); left out of :meth:`to_dict` at b = 1
    block_size: int = 1

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
            **({} if self.predictor is None else {"predictor": self.predictor, "eta": self.eta}),
            **({} if self.block_size == 1 else {"block_size": self.block_size}),
        }


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
        predictor: str | None = None,
        noise: float | None = None,
        block_size: int = 1,
    ) -> None:
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise InputError(f"batch size must be a positive integer, got {batch}")
        self.engine = engine
        self.chunk_size = check_engine(engine, batch, chunk_size)
        self.block_size = check_block_size(block_size, engine)
        eviction_cls = policy_class(eviction) if isinstance(eviction, str) else eviction
        caches = None if self.block_size == 1 else BlockCaches(workload, self.block_size, eviction_cls)
        if caches is None:
            check_budgets(workload, cluster)
        else:
            caches.check(cluster)
        self.workload = workload
        self.cluster = cluster
        self.batch = int(batch)
        self.seed = seed
        trie = workload.trie
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
        self.eviction = eviction_cls.name
        self.evict_amount = check_evict_amount(evict_amount)
        self.predictor = cluster_predictor(eviction_cls, predictor, noise)
        if self.predictor is not None and engine == "continuous":
            raise InputError(f"policy {eviction_cls.name!r} follows predictions: it runs on the batch engine only")
        served, self._predictions = [], []
        if self.predictor is not None and caches is not None:
            raise InputError(f"policy {eviction_cls.name!r} follows predictions: it runs at block size 1 only")
        for i, spec in enumerate(cluster.workers):  # a user's policy is served through the engine's checks
            if caches is not None:
                served.append((spec, caches.policy(spec.budget, worker_seed(seed, i), self.evict_amount)))
                continue
            if self.predictor is None:
                policy = eviction_cls.create(trie, spec.budget, seed=worker_seed(seed, i), evict_amount=evict_amount)
            else:
                policy, told = worker_policy(
                    eviction_cls, trie, spec.budget, worker_seed(seed, i), evict_amount, len(workload)
                )
                self._predictions.append(told)
            served.append((spec, served_checked(policy, eviction_cls, spec.budget, evict_amount)))
        if engine == "continuous":
            if eviction_cls.block_engine:  # it takes a served prompt to be cached whole, which vLLM never gives
                raise InputError(f"policy {eviction_cls.name!r} runs on the batch engine only, not the continuous one")
            self._engine: Engine = ContinuousEngine(trie, self.lengths, self.outputs, served, self.chunk_size)
        else:
            fits = None if caches is None else caches.fits
            self._engine = BatchEngine(trie, self.lengths, self.outputs, served, self.batch, fits)
        self.workers = self._engine.workers
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

    # -- what an oracle router may ask --------------------------------------------------------------
    def true_cached(self, i: int, j: int) -> int:
        return self.workers[i].policy.cached_prefix(j)

    def true_backlog(self, i: int, now: float) -> float:
        return self._engine.backlog(i, now)

    def run(self) -> ClusterResult:
        """Run the event loop with this run's engine (:mod:`kvtheory.cluster.events`)."""
        engine = self._engine
        # Python floats and lists in the loop (numpy scalars cost several times more per operation); the
        # arithmetic is the same IEEE double arithmetic, so every time is the same to the bit
        worker_of = EventLoop(self.arrival.tolist(), self.router).run(engine)
        return ClusterResult(
            router=self.router.name,
            eviction=self.eviction,
            workers=len(self.workers),
            batch=self.batch,
            seed=self.seed,
            arrival=self.arrival.copy(),
            worker=np.array(worker_of, dtype=np.int64),
            hits=np.array(engine.hits, dtype=np.int64),
            length=np.asarray(self.lengths, dtype=np.int64),
            output_len=np.asarray(self.outputs, dtype=np.int64),
            start=np.array(engine.start),
            prefill_end=np.array(engine.prefill_end),
            finish=np.array(engine.finish),
            busy=np.array([w.busy for w in self.workers]),
            service=[w.service for w in self.workers],
            router_state=self.router.state(),
            engine=self.engine,
            engine_state=engine.state(),
            evict_amount=self.evict_amount,
            predictor=self.predictor,
            eta=sum(told.made().eta for told in self._predictions) if self._predictions else None,
            block_size=self.block_size,
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
    iteration), predictor and noise (for a policy that follows predictions: ``learned`` only,
    :mod:`kvtheory.cluster.predicted`), block_size (b: every worker's cache holds whole blocks of b tokens,
    :mod:`kvtheory.cluster.blocks`; default 1, the token model). See :class:`Simulation`.
    """
    return Simulation(workload, cluster, router, eviction, **options).run()
