"""Several workers (docs/cluster.md): GPU cost model, routers, time-based simulation, offline makespan optimum.

* :mod:`kvtheory.cluster.costmodel`: a_miss, a_cached, decode time and budget B from ``kvtheory/data``.
* :mod:`kvtheory.cluster.cluster`: workers and the linear service time Cost_ij.
* :mod:`kvtheory.cluster.routers`: round-robin, random, least-load, cache-aware, lbgr, lbgr-calibrated, lbgr-full,
  cache-aware-adaptive, behind one ``Router`` interface.
* :mod:`kvtheory.cluster.simulation`: the heapq event loop (``simulate``).
* :mod:`kvtheory.cluster.engines`: continuous batching on the workers (``simulate(..., engine="continuous")``).
* :mod:`kvtheory.cluster.optimum`: joint MIP optimum, lower bounds, exhaustive optimum, ``routing_ratio``.
* :mod:`kvtheory.cluster.report`: the README tables (``python -m kvtheory.cluster.report``).
"""

import importlib

_WHERE = {
    "Cluster": "cluster",
    "Worker": "cluster",
    "GPU": "costmodel",
    "CostModel": "costmodel",
    "ModelSpec": "costmodel",
    "cost_model": "costmodel",
    "cost_model_by_name": "costmodel",
    "gpu": "costmodel",
    "model": "costmodel",
    "ROUTERS": "routers",
    "Router": "routers",
    "router_class": "routers",
    "ClusterResult": "simulation",
    "simulate": "simulation",
}


def __getattr__(name: str):
    """Import submodules on first use, so that ``kvtheory costmodel`` stays light."""
    if name in _WHERE:
        return getattr(importlib.import_module(f"kvtheory.cluster.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'kvtheory.cluster' has no attribute {name!r}")


__all__ = sorted(_WHERE)
