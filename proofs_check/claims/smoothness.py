"""Claims P8-P9 of docs/claims.md: smoothness of eviction with predictions (docs/predictions.md), the bound a
function of the error eta of the predictions each run is told, stated on paging as the papers state it and
attacked on trees and in batches (``--drop depth-1``, ``--drop batch-1``).

Symbols (docs/model.md §Symbols): B budget, k = B - beta*L_max + 1 (= B on paging), OPT the optimum's misses, ALG
the policy's misses, eta = sum over requests r of edge_len(v_r) |p_r - a_r| (the l1 error of the predicted
next-request times on paging), H_k = 1 + 1/2 + ... + 1/k. Each policy is checked told by several predictors and
noise levels (``NAME@PREDICTOR=NOISE``), from a small eta / OPT (``logdis`` at 0.05, whose errors rarely reorder
two requests; ``bin`` at 0.01 on the small instances of the searches, where most draws replace no prediction) to a
large one; :class:`~proofs_check.methods.smoothness.SmoothEviction`
evaluates the bound at each run's own eta.
"""

from __future__ import annotations

import sympy as sp

from kvtheory.model.workload import Workload
from proofs_check import families as fam
from proofs_check import strategies as gen
from proofs_check.claims import Claim, register
from proofs_check.claims.eviction import MIXED, TREES, TREES_REP, _internal, _registered
from proofs_check.claims.predictions import _FAMILIES as TREE_FAMILIES
from proofs_check.instance import Instance
from proofs_check.method import Drop, Search
from proofs_check.methods.smoothness import SmoothEviction
from proofs_check.symbols import OPT, B, H, eta, k

#: the predictors each smoothness claim is told: small to large eta / OPT, noisy and learned
PREDICTORS = ("bin=0.01", "bin=0.1", "logdis=0.05", "logdis=0.3", "dis=1", "learned")

PAGING = Search(
    "paging (one-token queries, batch 1)",
    gen.tree_instance,
    {"max_queries": 14, "max_length": 1, "alphabet": 5, "batch": (1, 1), "max_extra": 3},
)
PAGING_REP = Search(
    "repeated paging block (batch 1)",
    gen.tree_instance,
    {"max_queries": 8, "max_length": 1, "alphabet": 5, "batch": (1, 1), "max_extra": 3, "max_reps": 15},
)
PAGING_BATCHED = Search(
    "paging (one-token queries, batch 2-3)",
    gen.tree_instance,
    {"max_queries": 12, "max_length": 1, "alphabet": 5, "batch": (2, 3), "max_extra": 3},
)
PAGING_FAMILIES = [
    _internal(
        "cyclic paging: 4 pages, B=3, n=300",
        lambda s: Instance(Workload.from_token_lists([[i % 4] for i in range(300)]), 3, origin="cyclic paging"),
    ),
    _registered("paging", {"pages": 5, "requests": 400}, 4),
    _registered("paging", {"pages": 8, "requests": 300, "distribution": "zipf"}, 4),
]
DROPS = {
    "depth-1": Drop(searches=[TREES, TREES_REP, MIXED], families=TREE_FAMILIES),
    "batch-1": Drop(
        searches=[PAGING_BATCHED],
        families=[_internal("multiplicity-tie paging", lambda s: fam.multiplicity_tie_paging())],
    ),
}
ASSUMPTIONS = ("queries-fit", "single-worker", "batch-1", "depth-1")


def told(policy: str) -> tuple[str, ...]:
    return tuple(f"{policy}@{predictor}" for predictor in PREDICTORS)


register(
    Claim(
        id="P8",
        title="blind-oracle is (1 + 2 eta/OPT)-smooth on paging",
        statement=(
            "blind-oracle told predictions of error eta pays ALG <= (1 + 2 eta / OPT) OPT = OPT + 2 eta on every "
            "paging request sequence (one-token queries, batch size 1, k = B frames): Wei's bound for BlindOracle, "
            "as recalled (constant not re-derived here)."
        ),
        status="reported",
        assumptions=ASSUMPTIONS,
        policies=told("blind-oracle"),
        bound=1 + 2 * eta / OPT,
        kind="upper",
        source="Wei 2020, Better and simpler learning-augmented online caching (APPROX), as recalled "
        "(docs/claims.md §P8)",
        method=SmoothEviction(families=PAGING_FAMILIES, searches=[PAGING, PAGING_REP]),
        drops=DROPS,
        findings=(
            "Holds on paging on everything tried, with every predictor, and on every sequence of 5 requests over 3 "
            "pages at B = 2 with every integer prediction (tests/claims/test_smoothness_claims.py, exhaustive). "
            "Without depth-1 (kvtheory check P8 --drop depth-1: P1's tree families and searches, eta counting every "
            "token of an edge) it holds on everything tried too. Without batch-1 it fails as P1 does, at eta = 0: on "
            "the multiplicity-tie paging family (proofs_check/families.py: batches {0, 1}, {2, 3}, {0, 2}, {1, 1} "
            "at B = 3) a draw of bin=0.01 that replaces no prediction leaves blind-oracle FIF's batch-1 rule, which "
            "evicts page 1, needed later but by two queries, and pays one miss more than the exact batched optimum "
            "(kvtheory check P8 --drop batch-1 prints it).",
        ),
    )
)

register(
    Claim(
        id="P9",
        title="predictive-marker is 2 min(1 + 2 sqrt(5 eta/OPT), 2 H_k)-competitive on paging",
        statement=(
            "predictive-marker told predictions of error eta pays E[ALG] <= 2 min(1 + 2 sqrt(5 eta / OPT), 2 H_k) "
            "OPT + B on every paging request sequence (one-token queries, batch size 1, k = B frames): Lykouris and "
            "Vassilvitskii's bound, as recalled (constant not re-derived here), with P2's additive B."
        ),
        status="reported",
        assumptions=ASSUMPTIONS,
        policies=told("predictive-marker"),
        bound=2 * sp.Min(1 + 2 * sp.sqrt(5 * eta / OPT), 2 * H(k)),
        kind="upper",
        additive=B,
        source="Lykouris & Vassilvitskii 2018, Competitive caching with machine learned advice (ICML), as "
        "recalled (docs/claims.md §P9)",
        randomized=True,
        method=SmoothEviction(families=PAGING_FAMILIES, searches=[PAGING, PAGING_REP]),
        drops=DROPS,
        findings=(
            "Holds on paging, on trees (--drop depth-1) and in batches of one-token queries (--drop batch-1) on "
            "everything tried, far inside: the bound is at least 2 OPT + B whatever eta (P2's consistency), and it "
            "grows with sqrt(eta / OPT) from there. The check refutes a bound scaled well below it (the tests scale "
            "it by 0.1).",
        ),
    )
)
