"""Several workers (docs/cluster.md): GPU cost model, routers, time-based simulation, offline makespan optimum.

* :mod:`kvtheory.cluster.costmodel`: a_miss, a_cached, decode time and budget B from ``kvtheory/data``.
* :mod:`kvtheory.cluster.model_config`: a Hugging Face config.json as a model spec (GQA, MHA, MLA; dense, MoE).
* :mod:`kvtheory.cluster.cluster`: workers and the linear service time Cost_ij.
* :mod:`kvtheory.cluster.routers`: round-robin, random, least-load, cache-aware, lbgr, lbgr-calibrated, lbgr-full,
  cache-aware-adaptive, behind one ``Router`` interface.
* :mod:`kvtheory.cluster.simulation`: a run's setting and result (``simulate``).
* :mod:`kvtheory.cluster.events`: the one event loop and its same-instant ordering rule; engines are strategies over it.
* :mod:`kvtheory.cluster.batch_engine`: batches on the workers (the default engine).
* :mod:`kvtheory.cluster.engines`: continuous batching on the workers (``simulate(..., engine="continuous")``).
* :mod:`kvtheory.cluster.optimum`: joint MIP optimum, lower bounds, exhaustive optimum, ``routing_ratio``.
* :mod:`kvtheory.cluster.report`: the cluster tables of docs/results.md (``python -m kvtheory.cluster.report``).
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
    "read_model_config": "model_config",
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
