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

#: tau = max(1, log2 k): in the stand-in 2 (tau + H_k) for LNonMarker's O(log k) robustness
_TAU = sp.Max(1, sp.log(k, 2))

register(
    Claim(
        id="P4",
        title="lnonmarker is 2-consistent",
        statement=(
            "lnonmarker told the true next requests pays E[ALG] <= 2 OPT + B on every request sequence at batch "
            "size 1: the constant 2 a stand-in for Rohatgi's O(1)-consistency of LNonMarker on paging (no constant "
            "stated), lifted to prefix trees with an additive B for the initial cache contents."
        ),
        status="conjecture",
        assumptions=("queries-fit", "single-worker", "batch-1"),
        policies=("lnonmarker@oracle",),
        bound=sp.Integer(2),
        kind="upper",
        additive=B,
        source="conjecture: a constant for Rohatgi 2020's O(1)-consistency (docs/claims.md §P4)",
        randomized=True,
        method=UpperEviction(families=_FAMILIES, searches=[TREES, TREES_REP, MIXED]),
        drops={"batch-1": Drop(searches=[TREES_BATCHED])},
    )
)

register(
    Claim(
        id="P5",
        title="lnonmarker is 2 (tau + H_k)-robust",
        statement=(
            "lnonmarker with predictions that reverse the true order (the adversarial predictor) pays "
            "E[ALG] <= 2 (tau + H_k) OPT + B on every request sequence at batch size 1, tau = max(1, log2 k), "
            "k = B - L_max + 1: a stand-in for Rohatgi's O(log k)-robustness of LNonMarker on paging (no constant "
            "stated), lifted to prefix trees."
        ),
        status="conjecture",
        assumptions=("queries-fit", "single-worker", "batch-1"),
        policies=("lnonmarker@adversarial",),
        bound=2 * (_TAU + H(k)),
        kind="upper",
        additive=B,
        source="conjecture: a constant for Rohatgi 2020's O(log k)-robustness (docs/claims.md §P5)",
        randomized=True,
        method=UpperEviction(families=_FAMILIES, searches=[TREES, TREES_REP, MIXED]),
        drops={"batch-1": Drop(searches=[TREES_BATCHED])},
        expected="VIOLATED",
        findings=(
            "False as stated, with P7's gap: k = B - L_max + 1 is set by the longest query, and lnonmarker's "
            "phases end after k distinct tokens. The search shrinks to B = 2, the query [100, 101] (k = 1, bound "
            "2 (1 + H_1) = 4), then one-token queries alternating over two pages, which fit in the 2 frames: every "
            "batch starts a phase, each requested page is clean, and with adversarial predictions lnonmarker "
            "evicts the other page each time, paying 20 against OPT = 4 on every seed (kvtheory check P5 prints "
            "the instance). With k = B, the frames the one-token queries see, no phase would end there.",
        ),
    )
)

register(
    Claim(
        id="P6",
        title="guard and bo-rlt-switch with true predictions are optimal at batch 1",
        statement=(
            "guard and bo-rlt-switch told the true next requests pay ALG <= OPT on every request sequence at "
            "batch size 1: guard detects no error (blind-oracle, which is FIF there, evicts no token requested "
            "again in its phase) and bo-rlt-switch never leaves blind-oracle."
        ),
        status="conjecture",
        assumptions=("queries-fit", "single-worker", "batch-1"),
        policies=("guard@oracle", "bo-rlt-switch@oracle"),
        bound=sp.Integer(1),
        kind="upper",
        source="1-consistency of Guard (2025) and of Wei 2020's combination, lifted to prefix trees "
        "(docs/claims.md §P6)",
        randomized=True,
        method=UpperEviction(families=_FAMILIES, searches=[TREES, TREES_REP, MIXED]),
        drops={
            "batch-1": Drop(
                searches=[TREES_BATCHED], families=[_internal("multiplicity-tie", lambda s: fam.multiplicity_tie(), 1)]
            )
        },
        findings=(
            "Holds on everything tried at batch 1. Without batch-1 it fails as P1 does: both follow blind-oracle, "
            "which ranks tokens of the same next batch by depth alone, and on the multiplicity-tie family they pay "
            "more than the exact batched optimum (kvtheory check P6 --drop batch-1).",
        ),
    )
)

register(
    Claim(
        id="P7",
        title="guard is (2 H_{k-1} + 2)-robust",
        statement=(
            "guard with predictions that reverse the true order (the adversarial predictor) pays "
            "E[ALG] <= (2 H_{k-1} + 2) OPT + B on every request sequence at batch size 1, k = B - L_max + 1: "
            "Guard's robustness for paging, lifted to prefix trees."
        ),
        status="conjecture",
        assumptions=("queries-fit", "single-worker", "batch-1"),
        policies=("guard@adversarial",),
        bound=2 * H(k - 1) + 2,
        kind="upper",
        additive=B,
        source="conjecture lifted from Guard (2025) (docs/claims.md §P7)",
        randomized=True,
        method=UpperEviction(families=_FAMILIES, searches=[TREES, TREES_REP, MIXED]),
        drops={"batch-1": Drop(searches=[TREES_BATCHED])},
        expected="VIOLATED",
        findings=(
            "False as stated, with the gap of claims 3, 5 and 7: k = B - L_max + 1 is set by the longest query. The "
            "search shrinks to B = 3, the query [100, 101, 102] (k = 1, bound 2 H_0 + 2 = 2), then one-token queries "
            "cycling over four pages: paging with 3 frames, where guard with adversarial predictions pays more than "
            "2 OPT + B at 95% confidence (kvtheory check P7 prints the instance and the means). With k = B, the "
            "frames the one-token queries see, the bound there is 2 H_2 + 2 = 5.",
        ),
    )
)
