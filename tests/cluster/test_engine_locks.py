"""reproduce/engine_locks.py (docs/cluster.md, Locks): its true lock must reach the policy object that evicts.
The cluster serves each worker's policy through a CheckedPolicy; a lock set on that wrapper alone leaves the
running requests unprotected, and at Table 1's setting the engine then stops on a request that lost cached
tokens while it ran."""

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

from kvtheory import Workload
from kvtheory.policies import policy_class
from kvtheory.policies.ledger import CheckedPolicy


def _load():
    path = Path(__file__).resolve().parents[2] / "reproduce" / "engine_locks.py"
    spec = importlib.util.spec_from_file_location("reproduce_engine_locks", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


engine_locks = _load()


def test_the_running_requests_are_held_by_the_policy_inside_the_checking_wrapper():
    trie = Workload.from_token_lists([[1, 2], [1, 3], [4, 5]]).trie
    base = policy_class("rlt")
    held_class = type("HeldRLT", (engine_locks.HeldSampler, base), {"name": "rlt"})
    inner = held_class(trie, 4, seed=0)
    worker = SimpleNamespace(policy=CheckedPolicy(inner, held_class, 4), admitted=[0, 1, 2])
    engine_locks.serve_with_locks(worker, [2], [])
    assert inner.held == [0, 1]  # the requests admitted before, still running
    assert worker.policy.cached_prefix(2) == 2  # the admitted request alone was served


def test_the_lfu_lock_spares_the_held_paths_and_evicts_the_next_leaf():
    trie = Workload.from_token_lists([[1], [2], [3]]).trie
    held_class = type("HeldLFU", (engine_locks.HeldLFU, policy_class("lfu")), {"name": "lfu"})
    policy = held_class(trie, 2, seed=0)
    for batch in ([0], [1], [1]):
        policy.serve(batch)
    policy.held = [0]  # query 0's token has the fewest requests: LFU's victim, unless held
    policy.serve([2])
    assert (policy.cached_prefix(0), policy.cached_prefix(1), policy.cached_prefix(2)) == (1, 0, 1)
    policy.held = []
    policy.serve([1])  # unheld, query 0's token is the least frequent again
    assert (policy.cached_prefix(0), policy.cached_prefix(1)) == (0, 1)
