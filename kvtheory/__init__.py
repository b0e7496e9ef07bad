"""kvtheory: checkable theory of KV-cache eviction and cache-aware routing (see MODEL.md)."""

from kvtheory.errors import InputError
from kvtheory.model.query import Query
from kvtheory.model.trie import PrefixTrie
from kvtheory.model.workload import Workload, read_workload, write_workload
from kvtheory.optimum.fif import FurthestInFuture
from kvtheory.policies import (
    ONLINE_POLICIES,
    EvictionPolicy,
    FifoLeaf,
    LeafLFU,
    LeafLRU,
    RandomizedLeafToken,
    RandomLeaf,
    TokenLRU,
    policy_class,
)
from kvtheory.simulate import RunResult, batches, run_fif, run_policy, run_seeds, slack, validate

__all__ = [
    "EvictionPolicy",
    "FifoLeaf",
    "FurthestInFuture",
    "InputError",
    "LeafLFU",
    "LeafLRU",
    "ONLINE_POLICIES",
    "PrefixTrie",
    "Query",
    "RandomLeaf",
    "RandomizedLeafToken",
    "RunResult",
    "TokenLRU",
    "Workload",
    "batches",
    "policy_class",
    "read_workload",
    "run_fif",
    "run_policy",
    "run_seeds",
    "slack",
    "validate",
    "write_workload",
]
