"""FIF's one-pass miss-ratio curve on one-token queries (kvtheory/experiments/fif_stack.py): at every budget it is
per-budget FIF (run_fif, both backends) query for query, and its final caches are FIF's, node for node; ``auto``
takes it exactly where it is exact (one-token queries at beta = 1), ``one-pass`` elsewhere says why not.

The caches are compared because the tie rule (objects never requested again go larger id first) changes no miss:
those objects never hit again, whichever of them stays. A wrong tie rule, and x pushed into the first segment
before its max is popped (which evicts x itself when its next request is the furthest), both fail the check.

Confidence: each randomized check draws 120-200 flat workloads (hypothesis, derandomized, so a failure
reproduces; ids negative, beyond 2^62, repeated in a row) and compares every budget from 1 to past the distinct
count, with duplicates, out of order, and 2^40."""

import inspect

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtheory.errors import InputError
from kvtheory.experiments import fif_stack as module
from kvtheory.experiments.fif_stack import fif_stack, fif_stack_hits, fif_stack_traversal
from kvtheory.experiments.mrc import curve_methods, miss_ratio_curve
from kvtheory.experiments.stack_mrc import one_pass_blocker, one_token_queries
from kvtheory.model.batches import batches
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import FurthestInFuture, run_compiled_fif, run_fif
from kvtheory.simulate import drive

#: the ids a flat workload draws from: small, negative, and at both ends of int64
IDS = (0, 1, 2, 3, -1, -7, 5, 2**62 + 3, -(2**63), 2**63 - 1, 10**12)


@st.composite
def flat_ids(draw):
    """One-token queries over a few ids, some repeated in a row."""
    pool = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=8, unique=True))
    ids = []
    for _ in range(draw(st.integers(1, 40))):
        if ids and draw(st.integers(0, 3)) == 0:
            ids.append(ids[-1])  # the same object again at once
        else:
            ids.append(draw(st.sampled_from(pool)))
    return ids


def _budgets(workload: Workload) -> list[int]:
    """Every budget from 1 to past the distinct count, out of order, with duplicates and 2^40 (the largest)."""
    top = workload.trie.distinct_tokens + 2
    return [top, *range(1, top + 1), 1, top // 2 + 1, 2**40, 2]


def _fif_caches(workload: Workload, budget: int) -> tuple[set, set]:
    """The nodes FIF keeps after the last query: FurthestInFuture's, the compiled core's."""
    fif = FurthestInFuture(workload.trie, budget, batches(len(workload), 1))
    drive(workload, budget, fif, "fif", 1, None)
    kept = run_compiled_fif(workload.trie, budget, 1)[1]
    return {v for v, n in fif.kept().items() if n}, set(np.flatnonzero(kept).tolist())


def _check(ids: list[int], compiled: bool = False) -> None:
    """The one pass at every budget of :func:`_budgets` against run_fif's per-query hits on both backends and
    FIF's final caches."""
    workload = Workload.from_token_lists([[i] for i in ids])
    budgets = _budgets(workload)
    index, where, segment = fif_stack(workload.trie, budgets, compiled=compiled)
    totals = fif_stack_hits(workload.trie, budgets, compiled=compiled).tolist()
    for k, budget in enumerate(budgets):
        hits = (where <= index[k]).astype(np.int64)
        cached = set(np.flatnonzero((segment >= 0) & (segment <= index[k])).tolist())
        assert totals[k] == hits.sum(), (ids, budget)
        for backend in ("python", "compiled"):
            run = run_fif(workload, budget, backend=backend)
            assert hits.tolist() == list(run.query_hits), (ids, budget, backend)
            assert run.misses == len(ids) - totals[k]
        python, core = _fif_caches(workload, budget)
        assert cached == python == core, (ids, budget)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(flat_ids())
def test_the_one_pass_is_fif_at_every_budget(ids):
    _check(ids)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, derandomize=True)
@given(flat_ids())
def test_the_compiled_one_pass_is_the_python_one(ids):
    trie = Workload.from_token_lists([[i] for i in ids]).trie
    budgets = list(range(1, trie.distinct_tokens + 2))
    python = fif_stack(trie, budgets, compiled=False)
    compiled = fif_stack(trie, budgets, compiled=True)
    for a, b in zip(python, compiled, strict=True):
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize(
    "ids",
    [
        [5],
        [5, 5, 5, 5],  # repeated in a row
        [1, 2, 3, 1, 2, 3],  # Belady's cycle
        [3, 1, 2, 4, 1, 2, 3, 4, 9, -1, 4],  # several objects dying with the cache full
        [2**63 - 1, -(2**63), 0, 2**63 - 1, -(2**63), 0, 7, 0],
    ],
)
def test_the_one_pass_is_fif_on_hand_picked_workloads(ids):
    _check(ids)
    _check(ids, compiled=True)


def test_a_seeded_zipf_trace_takes_the_compiled_kernel_and_agrees():
    """A longer trace than hypothesis draws, on the compiled kernel: totals at a spread of budgets."""
    weights = 1.0 / np.arange(1, 301) ** 0.9
    drawn = np.random.default_rng(3).choice(300, size=4000, p=weights / weights.sum())
    workload = Workload.from_token_lists([[int(p)] for p in drawn])
    budgets = [1, 2, 3, 7, 20, 64, 150, 299, 300, 301]
    hits = fif_stack_hits(workload.trie, budgets, compiled=True).tolist()
    assert hits == [run_fif(workload, b, backend="compiled").hits for b in budgets]


def _mutant(old: str, new: str, count: int):
    """fif_stack_traversal with ``old`` replaced by ``new`` (``count`` times), as plain Python."""
    source = inspect.getsource(fif_stack_traversal)
    assert source.count(old) == count
    namespace = {"np": np}
    exec(source.replace(old, new), namespace)  # noqa: S102 - the module's own source, mutated
    return namespace["fif_stack_traversal"]


#: the seeded workloads the mutants are run on
MUTANT_WORKLOADS = [
    [int(i) for i in np.random.default_rng(seed).integers(-4, 5, size=int(n))]
    for seed, n in enumerate(np.random.default_rng(99).integers(2, 30, size=60))
]


@pytest.mark.parametrize(
    ("old", "new", "count", "misses_change"),
    [
        ("and u > w)", "and u < w)", 4, False),  # ties to the smaller id: the same misses, other dead objects kept
        ("if j > 0:\n", "if j >= 0:\n", 1, True),  # x pushed into S_1 and the max popped: x can leave at once
    ],
    ids=["tie-to-smaller-id", "x-may-evict-itself"],
)
def test_a_wrong_rule_fails_the_check(monkeypatch, old, new, count, misses_change):
    for ids in MUTANT_WORKLOADS:  # the right rule passes them all
        _check(ids)
    monkeypatch.setattr(module, "fif_stack_traversal", _mutant(old, new, count))
    failed = changed = 0
    for ids in MUTANT_WORKLOADS:
        try:
            _check(ids)
        except AssertionError:
            failed += 1
        workload = Workload.from_token_lists([[i] for i in ids])
        budgets = _budgets(workload)
        changed += fif_stack_hits(workload.trie, budgets, compiled=False).tolist() != [
            run_fif(workload, b).hits for b in budgets
        ]
    assert failed > 0
    assert (changed > 0) is misses_change


def test_the_inputs_it_refuses_are_one_line_errors():
    with pytest.raises(InputError, match="one-token queries only"):
        fif_stack_hits(Workload.from_token_lists([[1], [2, 3]]).trie, [2])
    with pytest.raises(InputError, match="at least 1 token, got 0"):
        fif_stack_hits(Workload.from_token_lists([[1], [2]]).trie, [0, 2])
    assert fif_stack_hits(Workload.from_token_lists([[1], [2]]).trie, []).tolist() == []


# -- the miss-ratio curve: auto takes it exactly where it is exact ------------------------------------------
FLAT = [[3], [1], [3], [-2], [1], [1], [8], [3], [-2], [8], [1], [5]]


@pytest.mark.parametrize("evict_amount", ["shortfall", "allocation"])
def test_auto_takes_the_one_pass_for_opt_on_one_token_queries(evict_amount):
    """The same curve as per budget, to the last bit of every hit rate; OPT evicts the shortfall whatever the
    online policies' eviction amount, so the one pass is exact at both."""
    workload = Workload.from_token_lists(FLAT)
    budgets = [1, 2, 3, 5, 9]
    policies = ["fif", "opt", "lru"]
    auto = miss_ratio_curve(workload, budgets, policies, evict_amount=evict_amount)
    serial = miss_ratio_curve(workload, budgets, policies, evict_amount=evict_amount, method="per-budget")
    assert auto["method"]["fif"] == auto["method"]["opt"] == "one-pass"
    for key in ("budgets", "misses", "hit_rate", "miss_ratio", "infeasible", "opt_status", "opt_solver"):
        assert auto[key] == serial[key], key
    assert auto["opt_solver"] == ["fif"] * len(budgets) and auto["opt_status"] == ["optimal"] * len(budgets)


def test_auto_takes_the_one_pass_on_one_full_block_per_query():
    """At block size 2, queries of 2 or 3 tokens are one block each (the partial block is never cached): the
    block-level workload is one-token, and the curve in tokens is the per-budget one."""
    objects = [[10 * o, 10 * o + 1] for o in range(5)]
    order = [0, 1, 2, 0, 3, 1, 4, 0, 2, 2, 3, 1]
    workload = Workload.from_token_lists([objects[o] + [99] * (j % 2) for j, o in enumerate(order)])
    budgets = [2, 4, 6, 10, 12]
    auto = miss_ratio_curve(workload, budgets, ["opt"], block_size=2)
    serial = miss_ratio_curve(workload, budgets, ["opt"], block_size=2, method="per-budget")
    assert auto["method"] == {"opt": "one-pass"}
    for key in ("misses", "hit_rate", "opt_status", "opt_solver"):
        assert auto[key] == serial[key], key


@pytest.mark.parametrize(
    ("queries", "batch", "reason"),
    [
        (FLAT, 2, "batch size 1 only"),
        ([[1], [2, 3], [1]], 1, "more than one token"),
        ([[1, 2], [1, 3], [1, 2]], 1, "more than one token"),
    ],
)
def test_auto_runs_opt_per_budget_elsewhere_and_one_pass_says_why(queries, batch, reason):
    workload = Workload.from_token_lists(queries)
    assert reason in one_pass_blocker("fif", workload.trie, batch, "shortfall")
    assert curve_methods(workload, ["fif", "opt"], "auto", batch, "shortfall") == {
        "fif": "per-budget",
        "opt": "per-budget",
    }
    with pytest.raises(InputError, match=f"not exact for fif: .*{reason}"):
        curve_methods(workload, ["fif"], "one-pass", batch, "shortfall")


def test_one_token_queries_is_what_it_says():
    assert one_token_queries(Workload.from_token_lists(FLAT).trie)
    assert not one_token_queries(Workload.from_token_lists([[1], [1, 2]]).trie)
    assert not one_token_queries(Workload.from_token_lists([[1, 2]]).trie)


def test_the_command_line_takes_the_one_pass_for_opt(capsys, tmp_path):
    from cli_runner import run_cli

    path = tmp_path / "flat.jsonl"
    path.write_text("".join(f'{{"tokens": {q}}}\n' for q in FLAT))
    common = ["mrc", "--workload", path, "--budgets", "1,2,4", "--policies", "opt,fifo", "--json"]
    code, out, _ = run_cli(capsys, *common)
    assert code == 0 and orjson.loads(out)["method"] == {"opt": "one-pass", "fifo": "per-budget"}
    code, out, _ = run_cli(capsys, *common[:-3], "--policies", "opt", "--method", "one-pass", "--json")
    one_pass = orjson.loads(out)
    code2, out2, _ = run_cli(capsys, *common[:-3], "--policies", "opt", "--method", "per-budget", "--json")
    assert code == code2 == 0 and one_pass["misses"] == orjson.loads(out2)["misses"]
