"""Claims P1-P3 of docs/claims.md: eviction with predictions (docs/predictions.md), each policy bound to its
predictor by name (``NAME@PREDICTOR``), checked against the exact optimum on the families and searches of
claims 1-7.

Symbols (docs/model.md §Symbols): B budget, k = B - beta*L_max + 1, OPT the optimum's misses, ALG the policy's
misses, H_k = 1 + 1/2 + ... + 1/k.
"""

from __future__ import annotations

import sympy as sp

from proofs_check import families as fam
from proofs_check.claims import Claim, register
from proofs_check.claims.eviction import MIXED, STAR_FAMILIES, TREES, TREES_BATCHED, TREES_REP, _internal, _registered
from proofs_check.method import Drop
from proofs_check.methods.eviction import UpperEviction
from proofs_check.symbols import B, H, k

_FAMILIES = STAR_FAMILIES + [
    _registered("random-tree", {"queries": 60, "max_length": 5, "alphabet": 3}, lambda w: w.max_length + 2),
    _registered("multiturn", {"conversations": 8}, lambda w: max(w.max_length, w.trie.distinct_tokens // 4)),
    _internal("long-then-short B=8 n=300", lambda s: fam.long_then_short(B=8, n=300)),
]

register(
    Claim(
        id="P1",
        title="blind-oracle with true predictions is optimal at batch 1",
        statement=(
            "blind-oracle told the true next requests (the oracle predictor) pays ALG <= OPT on every request "
            "sequence at batch size 1: its evictions are FIF's, which is optimal there."
        ),
        status="classic",
        assumptions=("queries-fit", "single-worker", "batch-1"),
        policies=("blind-oracle@oracle",),
        bound=sp.Integer(1),
        kind="upper",
        source="FIF's optimality (Belady 1966) with the oracle as the prediction (docs/claims.md §P1)",
        method=UpperEviction(families=_FAMILIES, searches=[TREES, TREES_REP, MIXED]),
        drops={
            "batch-1": Drop(
                searches=[TREES_BATCHED], families=[_internal("multiplicity-tie", lambda s: fam.multiplicity_tie(), 1)]
            )
        },
        findings=(
            "Holds at batch 1, as FIF's optimality says. Without batch-1 it fails: blind-oracle breaks ties among "
            "tokens of the same next batch by depth only, and on the multiplicity-tie family "
            "(proofs_check/families.py) it pays more than the exact batched optimum (kvtheory check P1 --drop "
            "batch-1 prints both).",
        ),
    )
)

register(
    Claim(
        id="P2",
        title="predictive-marker is 2-consistent",
        statement=(
            "predictive-marker told the true next requests pays E[ALG] <= 2 OPT + B on every request sequence at "
            "batch size 1: Lykouris and Vassilvitskii's consistency for paging, lifted to prefix trees with an "
            "additive B for the initial cache contents."
        ),
        status="conjecture",
        assumptions=("queries-fit", "single-worker", "batch-1"),
        policies=("predictive-marker@oracle",),
        bound=sp.Integer(2),
        kind="upper",
        additive=B,
        source="conjecture lifted from Lykouris & Vassilvitskii 2018 (docs/claims.md §P2)",
        randomized=True,
        method=UpperEviction(families=_FAMILIES, searches=[TREES, TREES_REP, MIXED]),
        drops={"batch-1": Drop(searches=[TREES_BATCHED])},
    )
)

register(
    Claim(
        id="P3",
        title="predictive-marker is 4 H_k-robust",
        statement=(
            "predictive-marker with predictions that reverse the true order (the adversarial predictor) pays "
            "E[ALG] <= 4 H_k OPT + B on every request sequence at batch size 1, k = B - L_max + 1: Lykouris and "
            "Vassilvitskii's robustness for paging, lifted to prefix trees."
        ),
        status="conjecture",
        assumptions=("queries-fit", "single-worker", "batch-1"),
        policies=("predictive-marker@adversarial",),
        bound=4 * H(k),
        kind="upper",
        additive=B,
        source="conjecture lifted from Lykouris & Vassilvitskii 2018 (docs/claims.md §P3)",
        randomized=True,
        method=UpperEviction(families=_FAMILIES, searches=[TREES, TREES_REP, MIXED]),
        drops={"batch-1": Drop(searches=[TREES_BATCHED])},
    )
)
