"""What the run entry points record and refuse, on exact values (from mutants no test told apart): a run's
seed and batch size, run_seeds' batch, a batch size that is not a positive integer, token ids given as
unsigned integers."""

from __future__ import annotations

import numpy as np
import pytest

from kvtheory import InputError, Workload, run_policy
from kvtheory.model.query import Query
from kvtheory.simulate import run_seeds

W = Workload.from_token_lists([[1, 2], [1, 3], [4], [1, 2], [4, 5], [1, 3]])


@pytest.mark.parametrize("backend", ["compiled", "python"])
def test_a_run_records_its_seed_and_batch_size(backend):
    run = run_policy(W, 4, "rlt", batch=2, seed=5, backend=backend)
    assert (run.seed, run.batch, run.budget) == (5, 2, 4)


def test_run_seeds_runs_each_seed_at_the_batch_size_given():
    runs = run_seeds(W, 4, "rlt", [0, 1, 2], batch=2)
    assert [run.seed for run in runs] == [0, 1, 2] and {run.batch for run in runs} == {2}
    for run in runs:
        assert run.query_hits.tolist() == run_policy(W, 4, "rlt", batch=2, seed=run.seed).query_hits.tolist()


@pytest.mark.parametrize("batch", [2.0, 2.5, True, 0, -1, "2"])
def test_a_batch_size_that_is_not_a_positive_integer_is_refused(batch):
    with pytest.raises(InputError, match="batch"):
        run_policy(W, 4, "lru", batch=batch)


def test_unsigned_token_ids_are_taken_when_they_fit_in_int64():
    assert Query.of(np.array([1, 2], dtype=np.uint64)).tokens.tolist() == [1, 2]
    assert Query.of(np.array([3], dtype=np.uint8)).tokens.dtype == np.int64
    with pytest.raises(ValueError, match="token ids must be 64-bit integers, got dtype uint64"):
        Query.of(np.array([2**63], dtype=np.uint64))
    with pytest.raises(ValueError, match="got dtype float64"):
        Query.of(np.array([1.0, 2.0]))
