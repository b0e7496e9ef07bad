"""The exact single-worker optimum at any batch size, with a proof of optimality (docs/optima.md).

At batch size beta = 1, FIF is optimal (the exchange argument of claim C1): its misses are the optimum.
At beta >= 2 it is not: a token missing before a batch costs its multiplicity m_t(v), which makes the
problem weighted paging on a tree, where furthest-in-future can lose. :func:`solve_optimum` then

1. runs FIF, a feasible schedule: an incumbent U (an upper bound on OPT);
2. computes the weighted-paging flow bound L <= OPT (:mod:`kvtheory.optimum.flow_bound`); if L = U,
   FIF is proven optimal on this instance and nothing else runs;
3. otherwise solves the step-compressed edge MIP (:func:`kvtheory.optimum.mip.solve_mip`, on
   :data:`DEFAULT_MIP_SOLVER` unless ``mip_solver`` names the other back end), started from FIF's
   schedule, within what is left of the time limit. The result is optimal when the MIP's proven
   bound, or L, meets its incumbent; a run stopped by the limit reports status ``time_limit`` with the
   best incumbent and the best bound found, a bracket [bound, misses] that holds OPT.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

from kvtheory.errors import InputError
from kvtheory.model.batches import batches, validate
from kvtheory.model.blocks import block_workload
from kvtheory.model.workload import Workload
from kvtheory.optimum import interrupt
from kvtheory.optimum.fif import FurthestInFuture, run_fif
from kvtheory.optimum.flow_bound import weighted_paging_bound

MIP_SOLVERS = ("highs", "cbc")
#: the MIP back end of :func:`solve_optimum` (and of ``kvtheory opt``) unless one is named: chosen by measurement,
#: ``python benchmarks/mip_backends.py`` (figures in docs/optima.md §Which MIP back end)
DEFAULT_MIP_SOLVER = "cbc"


@dataclass(frozen=True)
class Optimum:
    """The optimum's misses (the best incumbent), a proven lower bound, and how they were obtained.

    ``status``: ``optimal`` (``bound`` = ``misses``, ``proof`` says why), ``time_limit`` (the solver
    stopped; OPT lies in [bound, misses]), ``interrupted`` (the same bracket, the MIP stopped by
    Ctrl-C or SIGTERM inside ``kvtheory.optimum.interrupt.stoppable``) or ``upper_bound`` (FIF alone
    at beta >= 2, as asked).
    ``gap`` = (misses - bound) / misses. ``fif_misses`` is FIF's cost, for its excess over OPT. ``block_size``:
    the cache's block size b (docs/model.md §Blocks); misses, bounds and the budget are in tokens whatever b is.
    """

    solver: str
    status: str
    misses: int
    bound: int
    gap: float
    proof: str | None
    fif_misses: int
    budget: int
    batch: int
    seconds: float
    block_size: int = 1

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"

    def to_dict(self) -> dict:
        return asdict(self)


def solve_optimum(
    workload: Workload,
    budget: int,
    *,
    batch: int = 1,
    time_limit: float | None = None,
    mip_solver: str = DEFAULT_MIP_SOLVER,
    backend: str = "auto",
    block_size: int = 1,
) -> Optimum:
    """The minimum total misses on one worker of B = ``budget`` tokens at batch size beta = ``batch``.

    ``time_limit`` (seconds, None: none) bounds the whole call; ``mip_solver`` is the MIP's back end;
    ``backend`` FIF's engine at batch size 1 (:func:`~kvtheory.optimum.fif.run_fif`). ``block_size`` b > 1: the
    same solve on the block-level workload with B / b slots (:func:`in_blocks`).

    >>> w = Workload.from_token_lists([[2], [3], [1], [4, 1], [2, 1], [0], [3, 4], [3]])
    >>> opt = solve_optimum(w, 4, batch=2)
    >>> opt.status, opt.misses, opt.fif_misses   # FIF pays one miss more at beta = 2
    ('optimal', 9, 10)
    """
    if block_size != 1:
        options = {"batch": batch, "time_limit": time_limit, "mip_solver": mip_solver, "backend": backend}
        return in_blocks(workload, budget, batch, block_size, lambda w, slots: solve_optimum(w, slots, **options))
    validate(workload, budget, batch)
    if mip_solver not in MIP_SOLVERS:
        raise InputError(f"unknown MIP solver {mip_solver!r}; choose one of {', '.join(MIP_SOLVERS)}")
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"time limit must be a positive number of seconds, got {time_limit}")
    started = time.perf_counter()
    if batch == 1:
        fif = run_fif(workload, budget, backend=backend).misses
        return _result("fif", "optimal", fif, fif, fif, "FIF is exact at batch size 1", budget, batch, started)
    fif, start = fif_schedule(workload, budget, batch)
    try:
        bound = weighted_paging_bound(workload.trie, batches(len(workload), batch), budget, workload.total_tokens)
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: FIF is the incumbent; every distinct token is missed once
        if not interrupt.in_scope():
            raise
        lower = workload.trie.distinct_tokens
        return _result("fif", "interrupted", fif, lower, fif, None, budget, batch, started)
    if bound >= fif:
        return _result(
            "fif", "optimal", fif, fif, fif, "the weighted-paging flow bound meets FIF", budget, batch, started
        )
    from kvtheory.optimum.mip import solve_mip

    left = None if time_limit is None else time_limit - (time.perf_counter() - started)
    if left is not None and left <= 0:
        return _result("fif", "time_limit", fif, bound, fif, None, budget, batch, started)
    mip = solve_mip(workload, budget, batch=batch, solver=mip_solver, time_limit=left, start=start)
    misses = min(fif, mip.misses) if mip.misses is not None else fif
    lower = max(bound, int(mip.bound)) if mip.bound is not None else bound
    if lower >= misses:
        proof = f"the edge MIP ({mip_solver}) proves its bound {misses}"
        return _result(f"mip:{mip_solver}", "optimal", misses, misses, fif, proof, budget, batch, started)
    stopped = "interrupted" if mip.status == "interrupted" else "time_limit"  # by a signal, or by the limit
    return _result(f"mip:{mip_solver}", stopped, misses, lower, fif, None, budget, batch, started)


def in_blocks(workload: Workload, budget: int, batch: int, block_size: int, solve) -> Optimum:
    """The optimum at block size b = ``block_size`` (docs/model.md §Blocks), in tokens: ``solve(block-level
    workload, B / b)`` on the workload validated in blocks, its misses and bounds converted (a run that misses m
    blocks misses T - b (sum n_j - m) tokens, which is increasing in m, so the optimum in blocks is the optimum in
    tokens). With no full block anywhere every token is missed, by any schedule."""
    view = block_workload(workload, block_size)
    view.validate(budget, batch)
    if view.workload is None:
        tokens = workload.total_tokens
        return Optimum(
            "fif", "optimal", tokens, tokens, 0.0, "no query has a full block", budget, batch, 0.0, block_size
        )
    opt = solve(view.workload, budget // block_size)
    misses, bound = view.token_misses(opt.misses), view.token_misses(opt.bound)
    return replace(
        opt,
        misses=misses,
        bound=bound,
        gap=0.0 if bound >= misses else (misses - bound) / misses,
        fif_misses=view.token_misses(opt.fif_misses),
        budget=budget,
        block_size=block_size,
    )


def fif_bracket(workload: Workload, budget: int, *, batch: int = 1, block_size: int = 1) -> Optimum:
    """FIF's misses with the flow bound beside them: ``optimal`` at beta = 1 (FIF is exact there), else
    ``upper_bound`` whatever the gap (a gap of 0 still shows FIF optimal on this instance); ``block_size`` as
    for :func:`solve_optimum`.

    >>> w = Workload.from_token_lists([[2], [3], [1], [4, 1], [2, 1], [0], [3, 4], [3]])
    >>> fif_bracket(w, 4, batch=2).to_dict()["status"], fif_bracket(w, 4, batch=2).bound
    ('upper_bound', 9)
    """
    if block_size != 1:
        return in_blocks(workload, budget, batch, block_size, lambda w, slots: fif_bracket(w, slots, batch=batch))
    validate(workload, budget, batch)
    started = time.perf_counter()
    fif = run_fif(workload, budget, batch=batch).misses
    if batch == 1:
        return _result("fif", "optimal", fif, fif, fif, "FIF is exact at batch size 1", budget, batch, started)
    bound = weighted_paging_bound(workload.trie, batches(len(workload), batch), budget, workload.total_tokens)
    return _result("fif", "upper_bound", fif, bound, fif, None, budget, batch, started)


def fif_schedule(workload: Workload, budget: int, batch: int) -> tuple[int, dict[tuple[int, int], int]]:
    """FIF's total misses, and its schedule as {(edge v, step r): tokens of v cached just before step r}
    for every request r of every edge (a MIP start for :func:`kvtheory.optimum.mip.solve_mip`)."""
    trie = workload.trie
    schedule = batches(len(workload), batch)
    fif = FurthestInFuture(trie, budget, schedule)
    kept_before: dict[tuple[int, int], int] = {}
    hits = 0
    for t, group in enumerate(schedule):
        for v in {v for j in group for v in trie.path(j)}:
            kept_before[v, t] = fif.kept_of(v)
        hits += sum(fif.serve(group))
    return workload.total_tokens - hits, kept_before


def _result(solver, status, misses, bound, fif, proof, budget, batch, started) -> Optimum:
    gap = 0.0 if bound >= misses else (misses - bound) / misses
    return Optimum(solver, status, misses, bound, gap, proof, fif, budget, batch, time.perf_counter() - started)
