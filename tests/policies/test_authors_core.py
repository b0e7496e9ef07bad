"""The compiled rlt-authors core (kvtheory/policies/compiled/authors.py) against the per-edge class
(kvtheory/policies/rlt_authors.py), hit for hit and draw for draw: hits, cache, size, marked_count, the
phase rules' counts and every query's cached prefix after every batch, on random prefix tries (short and
long edges, flat ones), batch sizes 1 to 4, random seeds, both eviction amounts; its whole run
(``serve_all``, ``run_policy``) and its object served batch by batch (``create``: the cluster
simulation's workers)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    ALL_BOUNDARIES,
    boundary_examples,
    deep_prefix_queries,
    short_and_long_edge_instances,
)

from kvtheory import AuthorsRLT, Workload, batches, run_policy
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.simulation import simulate
from kvtheory.policies.base import EVICT_AMOUNTS
from kvtheory.policies.compiled.authors import CompiledAuthorsRLT
from kvtheory.policies.dispatch import compiled_object


def assert_same_runs(workload: Workload, budget: int, batch: int, amount: str, seed: int, prefixes: int = 1) -> None:
    """The per-edge class and the core's object served side by side agree after every batch (every query's
    cached prefix after every ``prefixes``-th); the whole-run kernel call and run_policy give the same hits."""
    trie = workload.trie
    slow = AuthorsRLT(trie, budget, seed=seed, evict_amount=amount)
    fast = AuthorsRLT.create(trie, budget, seed=seed, evict_amount=amount, backend="compiled")
    assert isinstance(fast, CompiledAuthorsRLT)
    everyone = range(len(workload))
    hits = []
    for step, group in enumerate(batches(len(workload), batch)):
        context = f"{amount} B={budget} batch={batch} seed={seed} step {step} {workload.token_lists()}"
        got = slow.serve(group)
        assert fast.serve(group) == got, context
        hits += got
        assert fast.kept() == slow.kept(), context
        assert (fast.size, fast.marked_count, fast.phase_starts) == (slow.size, slow.marked_count, slow.phase_starts)
        if step % prefixes == 0:
            assert [fast.cached_prefix(j) for j in everyone] == [slow.cached_prefix(j) for j in everyone], context
    assert compiled_object(AuthorsRLT, trie, budget, seed=seed, evict_amount=amount).serve_all(batch).tolist() == hits
    assert (
        run_policy(
            workload, budget, "rlt-authors", batch=batch, seed=seed, evict_amount=amount, backend="compiled"
        ).query_hits.tolist()
        == hits
    )


# The kernel is compiled (or loaded from numba's cache) before the first test (conftest.py); the examples
# of the per-edge class take a few ms each.
@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@boundary_examples(*ALL_BOUNDARIES, seed=0, amount="allocation")
@boundary_examples(*ALL_BOUNDARIES, seed=1, amount="shortfall")
@given(
    instance=short_and_long_edge_instances(),
    seed=st.integers(0, 2**32 - 1),
    amount=st.sampled_from(EVICT_AMOUNTS),
)
def test_core_matches_the_per_edge_class(instance, seed, amount):
    workload, budget, batch = instance
    assert_same_runs(workload, budget, batch, amount, seed)


@pytest.mark.slow
def test_core_matches_on_larger_random_tries():
    """Hundreds of queries over deep shared prefixes: long runs of splits, partial evictions, every rule."""
    rng = np.random.default_rng(2026)
    rules = set()
    for trial in range(8):
        queries = deep_prefix_queries(rng)
        workload = Workload.from_token_lists(queries)
        batch = 1 + trial % 4
        budget = batch * max(len(q) for q in queries) + int(rng.integers(0, 120))
        assert_same_runs(workload, budget, batch, EVICT_AMOUNTS[trial % 2], seed=trial)
        policy = AuthorsRLT.create(
            workload.trie, budget, seed=trial, evict_amount=EVICT_AMOUNTS[trial % 2], backend="compiled"
        )
        policy.serve_all(batch)
        rules |= set(policy.phase_starts)
    assert rules == {"P1", "R1", "R2"}


@pytest.mark.slow
@pytest.mark.parametrize("amount", EVICT_AMOUNTS)
def test_core_matches_on_a_flat_trace(amount):
    """One-token and few-token queries straight off the root: thousands of leaves in the candidate order,
    one draw each, phases over and over."""
    rng = np.random.default_rng(7)
    pages = rng.zipf(1.3, size=2000) % 400
    workload = Workload.from_token_lists([[int(p)] * (1 + int(p) % 3) for p in pages])
    for batch, budget in ((1, 60), (3, 90)):
        assert_same_runs(workload, budget, batch, amount, seed=batch, prefixes=97)


def test_equal_seeds_give_equal_runs_and_other_seeds_differ():
    rng = np.random.default_rng(3)
    workload = Workload.from_token_lists(
        [rng.integers(0, 3, size=int(rng.integers(1, 8))).tolist() for _ in range(300)]
    )
    runs = [compiled_object(AuthorsRLT, workload.trie, 16, seed=seed).serve_all(1).tolist() for seed in (5, 5, 6)]
    assert runs[0] == runs[1] != runs[2]


def _multi_turn(seed: int, conversations: int = 30) -> Workload:
    rng = np.random.default_rng(seed)
    history = [rng.integers(0, 9, size=int(rng.integers(4, 20))).tolist() for _ in range(conversations)]
    queries = []
    for _ in range(6 * conversations):
        c = int(rng.integers(0, conversations))
        history[c] = history[c] + rng.integers(0, 9, size=int(rng.integers(1, 12))).tolist()
        queries.append(history[c][-120:])
    return Workload.from_token_lists(queries)


class PlainAuthorsRLT(AuthorsRLT):
    """rlt-authors' rule in a subclass that has not opted in to the core: served by the per-edge class."""

    name = "plain-rlt-authors-for-tests"


def test_a_subclass_that_does_not_opt_in_runs_per_edge():
    trie = Workload.from_token_lists([[1, 2], [1, 3]]).trie
    assert compiled_object(PlainAuthorsRLT, trie, 3, seed=0) is None
    assert type(PlainAuthorsRLT.create(trie, 3, seed=0)) is PlainAuthorsRLT


@pytest.mark.parametrize("amount", EVICT_AMOUNTS)
@pytest.mark.parametrize("batch", [1, 3])
def test_cluster_workers_made_by_create_match_the_per_edge_class(amount, batch):
    workload = _multi_turn(5)
    cluster = Cluster(tuple(Worker(1.8e-4, 1.5e-7, 500, 0.0186, 1.5e-7) for _ in range(3)))
    runs = [
        simulate(
            workload, cluster, "cache-aware", cls, batch=batch, seed=3, rate=40.0, oracle=True, evict_amount=amount
        )
        for cls in (AuthorsRLT, PlainAuthorsRLT)
    ]
    fast, slow = runs
    assert fast.hits.sum() > 0
    assert fast.hits.tolist() == slow.hits.tolist()
    assert fast.worker.tolist() == slow.worker.tolist()
    assert fast.finish.tolist() == slow.finish.tolist()


def test_a_batch_larger_than_the_budget_is_an_error():
    workload = Workload.from_token_lists([[1, 1], [2, 2, 2]])
    for policy in (
        AuthorsRLT(workload.trie, 2, seed=0),
        AuthorsRLT.create(workload.trie, 2, seed=0, backend="compiled"),
    ):
        policy.serve([0])
        with pytest.raises(RuntimeError, match="nothing left to evict"):
            policy.serve([1])


@pytest.mark.slow
def test_short_runs_in_a_fresh_process_do_not_load_numba():
    """Under backend "auto" a whole run loads the kernel from the class's ``compiled_min_tokens`` tokens (or
    CORE_MIN_QUERIES queries): a short first run is served by the per-edge class, a longer one by the kernel,
    with the same hits."""
    script = (
        "import sys\n"
        "from kvtheory import AuthorsRLT, Workload, run_policy\n"
        "w = Workload.from_token_lists([[1, 2], [3, 4], [1, 2, 5], [3, 4], [6, 7, 8], [1, 2]] * 20)\n"
        "first = run_policy(w, 5, 'rlt-authors', seed=4).query_hits.tolist()\n"
        "assert 'numba' not in sys.modules\n"
        "AuthorsRLT.compiled_min_tokens = w.total_tokens + 1\n"
        "assert run_policy(w, 5, 'rlt-authors', seed=4).query_hits.tolist() == first\n"
        "assert 'numba' not in sys.modules\n"
        "AuthorsRLT.compiled_min_tokens = w.total_tokens\n"
        "assert run_policy(w, 5, 'rlt-authors', seed=4).query_hits.tolist() == first\n"
        "assert 'numba' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
