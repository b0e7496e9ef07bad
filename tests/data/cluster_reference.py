"""Reference clocks of the cluster simulation, query for query, for tests/cluster/test_cluster_timing.py.

Generated at commit 5446766 (before the two engines shared one event loop) by

    python tests/data/cluster_reference.py > tests/data/cluster_reference.json

Each case runs one engine (batch 1, batch 3, continuous with a 2-token or the default chunk) with one
router, policy and seed. The tiny workloads arrive on a grid of whole seconds, several at each instant,
and every cost coefficient is a binary fraction, so arrivals fall exactly on completions, iteration
boundaries and other arrivals: the same-instant ordering decides those runs. The L40 cases are a
realistic setting with Poisson arrivals. Regenerate only on purpose: a change here is a change of results.
"""

from __future__ import annotations

import itertools
import json
import math
import sys

import numpy as np

from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.costmodel import cost_model, gpu, model
from kvtheory.cluster.simulation import simulate
from kvtheory.model.query import Query
from kvtheory.model.workload import Workload
from kvtheory.workloads import generate

ENGINES = {
    "batch-1": {"engine": "batch"},
    "batch-3": {"engine": "batch", "batch": 3},
    "continuous-2": {"engine": "continuous", "chunk_size": 2},
    "continuous": {"engine": "continuous"},
}
ROUTERS = {
    "round-robin": ("round-robin", {}, False),
    "random": ("random", {}, False),
    "least-load-requests": ("least-load", {"load": "requests"}, False),
    "least-load-oracle": ("least-load", {}, True),
    "cache-aware": ("cache-aware", {"balance_abs": 1.0}, False),
    "cache-aware-adaptive": ("cache-aware-adaptive", {"min_abs": 1.0}, False),
    "lbgr": ("lbgr", {}, False),
    "lbgr-calibrated-oracle": ("lbgr-calibrated", {}, True),
}
POLICIES = ("lru", "rlt", "lfu", "fifo", "random-leaf")


def tiny(seed: int) -> Workload:
    """30 queries over a 3-symbol alphabet, 1-6 tokens, 0-3 output tokens, 0-3 arriving each second."""
    rng = np.random.default_rng(seed)
    arrivals = sorted(int(t) for t in rng.integers(0, 40, size=30))
    queries = []
    for t in arrivals:
        tokens = [int(x) for x in rng.integers(0, 3, size=int(rng.integers(1, 7)))]
        queries.append(Query.of(tokens, float(t), int(rng.integers(0, 4))))
    return Workload(tuple(queries))


def l40(m: int, budget: int) -> Cluster:
    spec = Worker.from_cost_model(cost_model(gpu("L40"), model("Llama-3.1-8B")))
    return Cluster(tuple(Worker(**{**spec.__dict__, "budget": budget}) for _ in range(m)))


def cases():
    """(name, workload, cluster, simulate's options) of every reference run."""
    tiny_cluster = {
        2: Cluster.uniform(2, 8, a_miss=1.0, a_cached=0.5, decode_base=1.0),
        3: Cluster.uniform(3, 6, a_miss=0.5, a_cached=0.25, decode_base=0.5, decode_per_context=0.0625),
    }
    combos = itertools.product(sorted(ENGINES), sorted(ROUTERS), (0, 1))
    for k, (engine, router, wseed) in enumerate(combos):
        name, options, oracle = ROUTERS[router]
        m = 2 + (k // 2) % 2
        run = {**ENGINES[engine], "router_options": options, "oracle": oracle, "seed": k % 3}
        policy = POLICIES[k % len(POLICIES)]
        yield f"tiny{wseed}/{engine}/{router}/{policy}/m{m}", tiny(wseed), tiny_cluster[m], name, policy, run
    w = generate("gsp", {"groups": 4, "prompts": 6, "lengths": [64, 256], "output_len": 4}, seed=3)
    for engine, router in itertools.product(("batch-1", "continuous"), ("cache-aware", "lbgr", "round-robin")):
        name, options, oracle = ROUTERS[router]
        run = {**ENGINES[engine], "router_options": options, "seed": 2, "rate": 30.0}
        yield f"gsp/{engine}/{router}/rlt/l40", w, l40(2, 600), name, "rlt", run
    run = {"engine": "batch", "batch": 2, "seed": 4, "rate": math.inf}
    yield "gsp/batch-2/lbgr/lru/l40/all-at-0", w, l40(3, 600), "lbgr", "lru", run


def outcome(workload, cluster, router, policy, options) -> dict:
    """Everything a run decides, exactly: per-query clocks, workers and hits; per-worker service times."""
    r = simulate(workload, cluster, router, policy, **options)
    return {
        "arrival": r.arrival.tolist(),
        "worker": r.worker.tolist(),
        "hits": r.hits.tolist(),
        "start": r.start.tolist(),
        "prefill_end": r.prefill_end.tolist(),
        "finish": r.finish.tolist(),
        "service": [[float(t) for t in times] for times in r.service],
        "engine_state": r.engine_state,
        "router_state": r.router_state,
    }


def main() -> None:
    reference = {name: outcome(*case) for name, *case in cases()}
    json.dump(reference, sys.stdout, separators=(",", ":"), default=float)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
