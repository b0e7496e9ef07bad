"""kvtheory.game.excess and worst's ``distinct`` and ``require``, against a brute force over every sequence.

Every sequence of the universe up to the horizon is served plainly from scratch (the policy's engine, OPT from
FIF or the exact batched optimum; rlt's expectation with every draw of the whole run enumerated by the
reference policy), and the maxima are taken by hand.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from game_brute_force import plain_opt, reference_expectation, sequences, valid

from kvtheory.errors import InputError
from kvtheory.game import excess, worst
from kvtheory.model.workload import Workload
from kvtheory.simulate import run_policy

IMBALANCED = [[0, 1], [2], [3], [4]]  # the long-then-short shape: one query of 2 tokens, 3 pages
TREE = [[0, 1], [0, 2], [3]]


def brute(queries, budget, policy, horizon, batch=1, *, distinct=False, require=None):
    """Every valid sequence with its exact (ALG, OPT), served plainly."""
    universe = Workload.from_token_lists(queries)
    for seq in sequences(len(queries), horizon):
        if not valid(universe, seq, budget, batch):
            continue
        if distinct and any(len(set(seq[i : i + batch])) < len(seq[i : i + batch]) for i in range(0, len(seq), batch)):
            continue
        if require is not None and not set(seq) & set(require):
            continue
        w = universe.select(list(seq))
        if policy == "rlt":
            alg = reference_expectation(queries, budget, "rlt", seq, batch)
        else:
            alg = Fraction(run_policy(w, budget, policy, batch=batch, backend="python").misses)
        yield seq, alg, plain_opt(w, budget, batch)


@pytest.mark.slow
@pytest.mark.parametrize(
    "queries, budget, policy, horizon, slope",
    [
        (IMBALANCED, 2, "token-lru", 5, 1),
        (IMBALANCED, 2, "lru", 5, Fraction(3, 2)),
        (TREE, 3, "fifo", 6, 2),
        (IMBALANCED, 2, "rlt", 4, 1),
    ],
)
def test_excess_is_the_brute_force_maximum(queries, budget, policy, horizon, slope):
    w = Workload.from_token_lists(queries)
    found = excess(w, budget, policy, horizon, slope)
    want = max(alg - slope * opt for _, alg, opt in brute(queries, budget, policy, horizon))
    assert found.excess == want
    # the witness reaches it when served plainly
    seq = found.sequence
    served = w.select(list(seq))
    opt = plain_opt(served, budget, 1)
    alg = (
        reference_expectation(queries, budget, "rlt", seq)
        if policy == "rlt"
        else run_policy(served, budget, policy, backend="python").misses
    )
    assert (alg, opt) == (found.alg, found.opt) and alg - slope * opt == want


def test_require_counts_only_sequences_holding_a_required_query():
    w = Workload.from_token_lists(IMBALANCED)
    for horizon in (4, 5):
        every = list(brute(IMBALANCED, 2, "token-lru", horizon, require={0}))
        got = worst(w, 2, "token-lru", horizon, require={0})
        assert got.ratio == max(Fraction(alg) / opt for _, alg, opt in every) and 0 in got.sequence
        e = excess(w, 2, "token-lru", horizon, 1, require={0})
        assert e.excess == max(alg - opt for _, alg, opt in every)
    # without the requirement the pages alone do better for the adversary at H = 4
    assert worst(w, 2, "token-lru", 4).ratio >= worst(w, 2, "token-lru", 4, require={0}).ratio


def test_distinct_batches():
    w = Workload.from_token_lists(TREE)
    got = worst(w, 4, "lru", 6, batch=2, distinct=True)
    want = max(Fraction(alg) / opt for _, alg, opt in brute(TREE, 4, "lru", 6, 2, distinct=True))
    assert got.ratio == want
    assert all(len(set(got.sequence[i : i + 2])) == len(got.sequence[i : i + 2]) for i in range(0, 6, 2))


def test_bad_input():
    w = Workload.from_token_lists(TREE)
    with pytest.raises(InputError):
        excess(w, 3, "lru", 4, -1)
    with pytest.raises(InputError):
        worst(w, 3, "lru", 4, require={7})
