"""Claims 8 and 9 of docs/claims.md: routing M identical workers, offline makespan (docs/cluster.md §Offline makespan).

Symbols: M workers of budget B each, Cost_ij = a_cached*h_ij + a_miss*(|q_j| - h_ij) + O_j, P_i the
sum of the costs routed to worker i, makespan max_i P_i, OPT the least makespan over routings and
evictions, rho = max_j (a_miss*|q_j| + O_j) / (a_cached*|q_j| + O_j) the hit benefit.
Claim 9 is two statements and a tightness check: C9a (affinity), C9b (load only, upper), C9c (load only,
the upper bound is approached). ``kvtheory check C9`` runs all three.
"""

from __future__ import annotations

import sympy as sp

from proofs_check import families as fam
from proofs_check import strategies as gen
from proofs_check.claims import Claim, register
from proofs_check.method import Drop, Family, Search, Setting
from proofs_check.methods.routing import LowerRouting, UpperRouting
from proofs_check.symbols import M, rho

UNIFORM = Search(
    "random routing (a_cached = a_miss)",
    gen.routing_instance,
    {"max_queries": 7, "max_length": 4, "alphabet": 2, "workers": (2, 3), "uniform": True},
)
DISCOUNT = Search(
    "random routing (a_cached <= a_miss)",
    gen.routing_instance,
    {"max_queries": 6, "max_length": 4, "alphabet": 2, "workers": (2, 3), "uniform": False},
)

register(
    Claim(
        id="C8",
        title="greedy least-load is (2 - 1/M)-competitive for makespan",
        statement=(
            "With a_cached = a_miss (a hit saves nothing, so Cost_ij = a_miss*|q_j| + O_j on every worker), "
            "routing each query in order to the worker of least load P_i gives makespan <= (2 - 1/M) * OPT: "
            "Graham's list-scheduling bound, tight on M(M-1) unit queries followed by one of size M."
        ),
        status="classic",
        assumptions=("multi-worker", "uniform-cost"),
        policies=("least-load",),
        bound=2 - 1 / M,
        kind="upper",
        source="Graham 1966 (docs/claims.md §C8)",
        method=UpperRouting(
            families=[Family(f"graham-tight M={m}", lambda s, m=m: fam.graham_tight(M=m)) for m in (2, 3)],
            searches=[UNIFORM],
        ),
        drops={"uniform-cost": Drop(searches=[DISCOUNT])},
        findings=("Tight: Graham's instance reaches 2 - 1/M exactly (1.5 at M = 2).",),
    )
)

register(
    Claim(
        id="C9a",
        title="cache affinity alone has makespan ratio -> M",
        statement=(
            "Routing by cache affinity only (each query to the worker whose routed queries share its longest "
            "prefix) sends every query of a single hot prefix to one worker, so its makespan is the total work "
            "while OPT spreads it: makespan / OPT -> M as the number of queries grows."
        ),
        status="reported",
        assumptions=("multi-worker", "hit-discount", "hot-prefix"),
        policies=("affinity",),
        bound=M,
        kind="lower",
        adversary="hot-prefix (proofs_check.families)",
        source="the paper's Figure 1 trade-off (docs/claims.md §C9a)",
        method=LowerRouting(
            [
                Setting(
                    f"hot-prefix M={m}", lambda cls, n, seed, m=m: fam.hot_prefix(M=m, n=n), (8 * m, 32 * m, 128 * m)
                )
                for m in (2, 4)
            ]
        ),
    )
)

register(
    Claim(
        id="C9b",
        title="load-only routing loses at most the hit benefit",
        statement=(
            "Least-load routing that ignores caches (load = predicted work a_miss*|q_j| + O_j) has makespan "
            "<= rho * (2 - 1/M) * OPT: every query costs at most its all-miss time, which is at most rho times "
            "its all-hit time, and OPT is at least the mean and the largest all-hit time (Graham's argument)."
        ),
        status="ours",
        assumptions=("multi-worker", "hit-discount"),
        policies=("least-load",),
        bound=rho * (2 - 1 / M),
        kind="upper",
        source="ours: Graham's argument with Cost_ij between a_cached*|q_j| + O_j and a_miss*|q_j| + O_j",
        method=UpperRouting(families=[], searches=[DISCOUNT]),
        findings=("Held on every instance tried; C9c shows that the loss really approaches rho.",),
    )
)

register(
    Claim(
        id="C9c",
        title="load-only routing does lose the hit benefit",
        statement=(
            "On high-sharing workloads (M prefix groups, each worker's budget holding one prefix, every group "
            "arriving as M consecutive queries) least-load routing spreads each group over all workers and "
            "misses every prefix, while routing each group to its own worker hits: makespan / OPT -> rho."
        ),
        status="reported",
        assumptions=("multi-worker", "hit-discount", "grouped-prefixes"),
        policies=("least-load",),
        bound=rho,
        kind="lower",
        adversary="prefix-groups (proofs_check.families)",
        source="the paper's Figure 1 trade-off (docs/claims.md §C9c)",
        method=LowerRouting(
            [
                Setting(
                    f"prefix-groups M={m} P=64",
                    lambda cls, n, seed, m=m: fam.prefix_groups(M=m, P=64, rounds=n),
                    (4, 16, 64),
                )
                for m in (2, 3)
            ]
        ),
    )
)

_ = sp  # sympy is the language of the bounds above
