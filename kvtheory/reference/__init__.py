"""Straightforward per-token reference simulations of every policy (a dict of token nodes, one step per
token), written from docs/model.md and docs/policies.md independently of the fast per-edge code, to check it against.

>>> reference_run([[1], [2], [3], [1], [2], [3]], 2, "lru")
[0, 0, 0, 0, 0, 0]
>>> reference_run([[1], [2], [3], [1], [2], [3]], 2, "fif")
[0, 0, 0, 1, 0, 1]
"""

from __future__ import annotations

import importlib
import pkgutil

from kvtheory.reference.core import REFERENCE_POLICIES, ReferencePolicy, check_instance, register_reference, token_lists

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

from kvtheory.reference.fif import ReferenceFIF  # noqa: E402
from kvtheory.reference.fifo import ReferenceFIFO  # noqa: E402
from kvtheory.reference.lfu import ReferenceLFU  # noqa: E402
from kvtheory.reference.lru import ReferenceLRU, ReferenceLRUNoSplitRefresh  # noqa: E402
from kvtheory.reference.random_leaf import ReferenceRandomLeaf  # noqa: E402
from kvtheory.reference.rlt import ReferenceRLT  # noqa: E402
from kvtheory.reference.rlt_authors import ReferenceAuthorsRLT  # noqa: E402
from kvtheory.reference.token_lru import ReferenceTokenLRU  # noqa: E402
from kvtheory.reference.vllm import ReferenceVllm  # noqa: E402


def reference_policy(
    workload, budget: int, policy_name: str, *, batch: int = 1, seed: int | None = None
) -> ReferencePolicy:
    """A fresh reference policy (``"fif"`` included) over ``workload``'s queries."""
    queries = token_lists(workload)
    if policy_name == "fif":
        schedule = [list(range(s, min(s + batch, len(queries)))) for s in range(0, len(queries), batch)]
        return ReferenceFIF(queries, budget, schedule)
    return REFERENCE_POLICIES.lookup(policy_name)(queries, budget, seed=seed)


def reference_run(workload, budget: int, policy_name: str, *, batch: int = 1, seed: int | None = None) -> list[int]:
    """Hits per query of ``policy_name`` on one worker of ``budget`` tokens, simulated token by token."""
    queries = token_lists(workload)
    check_instance(queries, budget, batch)
    policy = reference_policy(queries, budget, policy_name, batch=batch, seed=seed)
    hits: list[int] = []
    for start in range(0, len(queries), batch):
        hits.extend(policy.serve(range(start, min(start + batch, len(queries)))))
    return hits


__all__ = [
    "REFERENCE_POLICIES",
    "ReferenceAuthorsRLT",
    "ReferenceFIF",
    "ReferenceFIFO",
    "ReferenceLFU",
    "ReferenceLRU",
    "ReferenceLRUNoSplitRefresh",
    "ReferencePolicy",
    "ReferenceRLT",
    "ReferenceRandomLeaf",
    "ReferenceTokenLRU",
    "ReferenceVllm",
    "reference_policy",
    "reference_run",
    "register_reference",
]
