"""kvtheory: checkable theory of KV-cache eviction and cache-aware routing (see docs/README.md).

The names of ``__all__`` are the public API. Each is imported from its module on first use (PEP 562:
``_LAZY`` maps it to its module), so that ``import kvtheory``, which every import of a kvtheory module runs
first (the command line's included), loads nothing that the program does not use: NumPy, the policies, a
MIP solver, the cluster model or Dask come with the first name that needs them. ``stoppable()``: a scope
in which Ctrl-C or SIGTERM during a MIP solve returns status "interrupted" with the solver's incumbent and
bound instead of raising KeyboardInterrupt.

>>> import kvtheory as kv
>>> w = kv.Workload.from_token_lists([[1], [2], [3]] * 4)
>>> kv.run_policy(w, 2, "lru").misses, kv.run_fif(w, 2).misses
(12, 7)
"""

import importlib

from kvtheory.errors import InputError
from kvtheory.registry import add_provider

# the adversary families register generators from a layer above kvtheory.workloads, which imports them
# after its own generators when it is first imported
add_provider("generator", "adversaries")

_LAZY = {  # public name: (module, name there)
    "GENERATORS": ("kvtheory.workloads", "GENERATORS"),
    "generate": ("kvtheory.workloads", "generate"),
    "batches": ("kvtheory.model.batches", "batches"),
    "slack": ("kvtheory.model.batches", "slack"),
    "validate": ("kvtheory.model.batches", "validate"),
    "BlockWorkload": ("kvtheory.model.blocks", "BlockWorkload"),
    "block_workload": ("kvtheory.model.blocks", "block_workload"),
    "BlockQuery": ("kvtheory.model.query", "BlockQuery"),
    "Query": ("kvtheory.model.query", "Query"),
    "read_workload": ("kvtheory.model.traces", "read_workload"),
    "write_mooncake": ("kvtheory.model.traces", "write_mooncake"),
    "PrefixTrie": ("kvtheory.model.trie", "PrefixTrie"),
    "QueryColumns": ("kvtheory.model.workload", "QueryColumns"),
    "Workload": ("kvtheory.model.workload", "Workload"),
    "write_workload": ("kvtheory.model.workload", "write_workload"),
    "Optimum": ("kvtheory.optimum.exact", "Optimum"),
    "fif_bracket": ("kvtheory.optimum.exact", "fif_bracket"),
    "solve_optimum": ("kvtheory.optimum.exact", "solve_optimum"),
    "FurthestInFuture": ("kvtheory.optimum.fif", "FurthestInFuture"),
    "run_fif": ("kvtheory.optimum.fif", "run_fif"),
    "weighted_paging_bound": ("kvtheory.optimum.flow_bound", "weighted_paging_bound"),
    **{
        name: ("kvtheory.policies", name)
        for name in (
            "ONLINE_POLICIES",
            "PREDICTIVE_POLICIES",
            "AuthorsRLT",
            "BlindOracle",
            "EvictionPolicy",
            "FifoLeaf",
            "LeafLFU",
            "LeafLRU",
            "LeafView",
            "PredictiveMarker",
            "PriorityRule",
            "RandomizedLeafToken",
            "RandomLeaf",
            "SamplerRule",
            "TokenLRU",
            "VllmPrefixCache",
            "policy_class",
            "register_policy",
            "register_predictive_policy",
        )
    },
    "PREDICTORS": ("kvtheory.model.predictions", "PREDICTORS"),
    "Predictions": ("kvtheory.model.predictions", "Predictions"),
    "predict": ("kvtheory.model.predictions", "predict"),
    "RatioReport": ("kvtheory.ratio", "RatioReport"),
    "competitive_ratio": ("kvtheory.ratio", "competitive_ratio"),
    "harmonic": ("kvtheory.ratio", "harmonic"),
    "steady_ratio": ("kvtheory.ratio", "steady_ratio"),
    "RunResult": ("kvtheory.simulate", "RunResult"),
    "run_policy": ("kvtheory.simulate", "run_policy"),
    "run_seeds": ("kvtheory.simulate", "run_seeds"),
    "solve_mip": ("kvtheory.optimum.mip", "solve_mip"),
    "solve_joint_mip": ("kvtheory.cluster.joint_mip", "solve_joint_mip"),
    "makespan_lower_bounds": ("kvtheory.cluster.joint_mip", "makespan_lower_bounds"),
    "Cluster": ("kvtheory.cluster.cluster", "Cluster"),
    "cost_model": ("kvtheory.cluster.costmodel", "cost_model"),
    "simulate_cluster": ("kvtheory.cluster.simulation", "simulate"),
    "routing_ratio": ("kvtheory.cluster.optimum", "routing_ratio"),
    "run_sweep": ("kvtheory.experiments.sweep", "run_sweep"),
    "miss_ratio_curve": ("kvtheory.experiments.mrc", "miss_ratio_curve"),
    "read_results": ("kvtheory.experiments.sweep", "read_results"),
    "stoppable": ("kvtheory.optimum.interrupt", "stoppable"),
}


def __getattr__(name: str):
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = globals()[name] = getattr(importlib.import_module(module), attribute)
        return value
    raise AttributeError(f"module 'kvtheory' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "GENERATORS",
    "ONLINE_POLICIES",
    "PREDICTIVE_POLICIES",
    "PREDICTORS",
    "AuthorsRLT",
    "BlindOracle",
    "EvictionPolicy",
    "BlockQuery",
    "BlockWorkload",
    "FifoLeaf",
    "FurthestInFuture",
    "InputError",
    "Optimum",
    "LeafLFU",
    "LeafLRU",
    "LeafView",
    "PredictiveMarker",
    "Predictions",
    "PrefixTrie",
    "PriorityRule",
    "Query",
    "QueryColumns",
    "RandomLeaf",
    "RandomizedLeafToken",
    "RatioReport",
    "RunResult",
    "SamplerRule",
    "TokenLRU",
    "VllmPrefixCache",
    "Workload",
    "batches",
    "block_workload",
    "competitive_ratio",
    "fif_bracket",
    "generate",
    "harmonic",
    "policy_class",
    "predict",
    "register_policy",
    "register_predictive_policy",
    "read_workload",
    "run_fif",
    "run_policy",
    "run_seeds",
    "slack",
    "solve_optimum",
    "steady_ratio",
    "validate",
    "weighted_paging_bound",
    "write_mooncake",
    "write_workload",
    "solve_mip",
    "solve_joint_mip",
    "makespan_lower_bounds",
    "Cluster",
    "cost_model",
    "simulate_cluster",
    "routing_ratio",
    "run_sweep",
    "miss_ratio_curve",
    "read_results",
    "stoppable",
]
