"""kvtheory: checkable theory of KV-cache eviction and cache-aware routing (see docs/README.md).

The names below are the public API. Those that pull in a MIP solver, the cluster model or Dask
(``solve_mip``, ``solve_joint_mip``, ``makespan_lower_bounds``, ``Cluster``, ``cost_model``,
``simulate_cluster``, ``routing_ratio``, ``run_sweep``, ``read_results``, ``stoppable``) are imported on
first use. ``stoppable()``: a scope in which Ctrl-C or SIGTERM during a MIP solve returns status
"interrupted" with the solver's incumbent and bound instead of raising KeyboardInterrupt.

>>> import kvtheory as kv
>>> w = kv.Workload.from_token_lists([[1], [2], [3]] * 4)
>>> kv.run_policy(w, 2, "lru").misses, kv.run_fif(w, 2).misses
(12, 7)
"""

import importlib

import adversaries  # noqa: E402,F401 - registers the adversary families with kvtheory.workloads
from kvtheory.errors import InputError
from kvtheory.model.batches import batches, slack, validate
from kvtheory.model.query import BlockQuery, Query
from kvtheory.model.traces import read_workload, write_mooncake
from kvtheory.model.trie import PrefixTrie
from kvtheory.model.workload import QueryColumns, Workload, write_workload
from kvtheory.optimum.exact import Optimum, fif_bracket, solve_optimum
from kvtheory.optimum.fif import FurthestInFuture, run_fif
from kvtheory.optimum.flow_bound import weighted_paging_bound
from kvtheory.policies import (
    ONLINE_POLICIES,
    AuthorsRLT,
    EvictionPolicy,
    FifoLeaf,
    LeafLFU,
    LeafLRU,
    LeafView,
    PriorityRule,
    RandomizedLeafToken,
    RandomLeaf,
    SamplerRule,
    TokenLRU,
    policy_class,
    register_policy,
)
from kvtheory.ratio import RatioReport, competitive_ratio, harmonic, steady_ratio
from kvtheory.simulate import RunResult, run_policy, run_seeds
from kvtheory.workloads import GENERATORS, generate

_LAZY = {  # public name: (module, name there)
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
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'kvtheory' has no attribute {name!r}")


__all__ = [
    "GENERATORS",
    "ONLINE_POLICIES",
    "AuthorsRLT",
    "EvictionPolicy",
    "BlockQuery",
    "FifoLeaf",
    "FurthestInFuture",
    "InputError",
    "Optimum",
    "LeafLFU",
    "LeafLRU",
    "LeafView",
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
    "Workload",
    "batches",
    "competitive_ratio",
    "fif_bracket",
    "generate",
    "harmonic",
    "policy_class",
    "register_policy",
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
    *_LAZY,
]
