"""Straightforward per-token reference simulations of every policy (a dict of token nodes, one step per
token), written from docs/model.md and docs/policies.md independently of the fast per-edge code, to check it against.

>>> reference_run([[1], [2], [3], [1], [2], [3]], 2, "lru")
[0, 0, 0, 0, 0, 0]
>>> reference_run([[1], [2], [3], [1], [2], [3]], 2, "fif")
[0, 0, 0, 1, 0, 1]
"""

from __future__ import annotations

from kvtheory.reference.core import ReferencePolicy, check_instance, token_lists
from kvtheory.reference.fif import ReferenceFIF
from kvtheory.reference.fifo import ReferenceFIFO
from kvtheory.reference.lfu import ReferenceLFU
from kvtheory.reference.lru import ReferenceLRU, ReferenceLRUNoSplitRefresh
from kvtheory.reference.random_leaf import ReferenceRandomLeaf
from kvtheory.reference.rlt import ReferenceRLT
from kvtheory.reference.rlt_authors import ReferenceAuthorsRLT
from kvtheory.reference.token_lru import ReferenceTokenLRU

REFERENCE_POLICIES: dict[str, type[ReferencePolicy]] = {
    cls.name: cls
    for cls in (ReferenceLRU, ReferenceTokenLRU, ReferenceRLT, ReferenceFIFO, ReferenceRandomLeaf, ReferenceLFU)
}
"""The online policies, under the same names as kvtheory.ONLINE_POLICIES (FIF is separate: offline), but
rlt-authors, whose reference keeps SGLang's radix nodes rather than token nodes (:class:`ReferenceAuthorsRLT`)."""


def reference_policy(
    workload, budget: int, policy_name: str, *, batch: int = 1, seed: int | None = None
) -> ReferencePolicy:
    """A fresh reference policy (``"fif"`` included) over ``workload``'s queries."""
    queries = token_lists(workload)
    if policy_name == "fif":
        schedule = [list(range(s, min(s + batch, len(queries)))) for s in range(0, len(queries), batch)]
        return ReferenceFIF(queries, budget, schedule)
    if policy_name not in REFERENCE_POLICIES:
        raise KeyError(f"no reference for policy {policy_name!r}; known: fif, {', '.join(REFERENCE_POLICIES)}")
    return REFERENCE_POLICIES[policy_name](queries, budget, seed=seed)


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
    "reference_policy",
    "reference_run",
]
