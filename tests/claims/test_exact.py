"""proofs_check.exact: the "verified" verdict, and exact counterexamples that replay plainly.

A verified bound must hold on every sequence of every setting (re-checked here from the rows, the bound
evaluated on its own); a bound made too small must come back VIOLATED with an exact witness whose ALG and OPT,
served plainly (the policy's engine, FIF), break it in rationals.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from kvtheory.cli import main
from kvtheory.optimum.fif import run_fif
from kvtheory.simulate import run_policy
from proofs_check.checker import check_claim
from proofs_check.claims import get
from proofs_check.exact import FAMILY, random_trie
from proofs_check.results import VERDICTS, Options


def opts(tmp_path, **changes) -> Options:
    base = dict(instances=5, seeds=4, out_dir=tmp_path, shrink_seconds=0, sources=("exact",), exact_horizon=5)
    base.update(changes)
    return Options(**base)


def harmonic(n: int) -> Fraction:
    return sum((Fraction(1, i) for i in range(1, n + 1)), Fraction(0))


@pytest.mark.parametrize("claim_id, f", [("C3r", lambda b: Fraction(b)), ("C5r", lambda b: 2 * harmonic(b))])
def test_repaired_claims_are_verified_on_every_setting(tmp_path, claim_id, f):
    claim = get(claim_id)
    assert claim.expected_verdict == "verified" and "verified" in VERDICTS
    result = check_claim(claim, opts(tmp_path))
    assert result.verdict == "verified" and result.ok
    settings = {(row.universe, row.budget) for row in result.exact}
    # every universe of the family at B = L_max and L_max + 1 (batch 1)
    assert settings == {(name, max(map(len, q)) + d) for name, q in FAMILY.items() for d in (0, 1)}
    for row in result.exact:
        assert row.f == f(row.budget) and row.c == row.budget and row.horizon == 5
        assert row.holds and row.alg <= row.f * row.opt + row.c
    assert result.to_dict()["exact"][0]["ratio"].count("/") == 1


def test_batched_claim_is_verified_at_batch_two_with_distinct_queries(tmp_path):
    result = check_claim(get("C7r"), opts(tmp_path, exact_horizon=4))
    assert result.verdict == "verified"
    for row in result.exact:
        assert row.batch == 2 and row.budget >= 2 * row.length
        assert all(
            len(set(row.sequence[i : i + 2])) == len(row.sequence[i : i + 2]) for i in range(0, len(row.sequence), 2)
        )


def test_claim_3_exact_counterexample_replays(tmp_path):
    # k = B - L_max + 1 = 1 on imbalanced-2+3 at B = 2: ALG <= OPT + 2 fails on a sequence of <= 9 queries
    result = check_claim(get("C3"), opts(tmp_path, exact_horizon=9, sources=("exact imbalanced-2+3",)))
    assert result.verdict == "VIOLATED"
    m = result.counterexample
    w, budget = m.instance.workload, m.instance.budget
    alg = run_policy(w, budget, "token-lru", backend="python").misses
    opt = run_fif(w, budget).misses
    k = budget - w.max_length + 1
    assert alg == m.alg and opt == m.opt
    assert alg > k * opt + budget  # the bound, evaluated here by hand
    assert result.saved is not None and result.saved.exists()
    assert {row.universe for row in result.exact} == {"imbalanced-2+3"}


def test_a_bound_made_too_small_is_violated_exactly(tmp_path):
    # RLT at B = 1 misses every change of page: E[ALG] = ALG; 0.1 * 2 H_1 * OPT + 1 is far below it
    result = check_claim(
        get("C5r"), opts(tmp_path, bound_scale=Fraction(1, 10), exact_horizon=4, sources=("exact paging-4",))
    )
    assert result.verdict == "VIOLATED"
    m = result.counterexample
    assert m.alg > Fraction(1, 10) * 2 * harmonic(m.instance.budget) * m.opt + m.instance.budget


def test_random_tries_are_seeded_and_small():
    assert random_trie(0) == random_trie(0) and random_trie(0) != random_trie(1)
    for seed in range(5):
        queries = random_trie(seed)
        nodes = {t for q in queries for t in q}
        assert nodes == set(range(7)) and max(map(len, queries)) <= 3
        # prefix-closed paths: every query's prefix is a path of the same trie
        parents = {q[i]: (q[i - 1] if i else None) for q in queries for i in range(len(q))}
        assert all(parents[q[i]] == (q[i - 1] if i else None) for q in queries for i in range(len(q)))


def test_check_cli_exact_horizon(tmp_path, capsys):
    args = ["check", "C3r", "--instances", "2", "--no-algebra", "--out", str(tmp_path), "--exact-horizon", "3"]
    assert main(args + ["--json"]) == 0
    import json

    record = json.loads(capsys.readouterr().out)
    assert record["claims"][0]["verdict"] == "verified" and record["options"]["exact_horizon"] == 3
    assert {row["horizon"] for row in record["claims"][0]["exact"]} == {3}
    with pytest.raises(SystemExit) as stop:
        main(["check", "C3r", "--exact-horizon", "0"])
    assert stop.value.code == 2


def test_a_search_cut_at_the_state_limit_is_not_a_verification(tmp_path, monkeypatch):
    from kvtheory.policies import TokenLRU
    from proofs_check import exact

    class KeylessTokenLRU(TokenLRU):
        """token-LRU's rule under another name: a user's subclass, so its inherited state key is not trusted and
        every sequence is searched apart."""

        name = "keyless-token-lru"

    skipped = check_claim(get("C3r"), opts(tmp_path, policy=KeylessTokenLRU, exact_horizon=None))
    assert skipped.verdict == "holds" and any("not checked" in note for note in skipped.notes)
    monkeypatch.setattr(exact, "STATE_LIMIT", 50)
    result = check_claim(get("C3r"), opts(tmp_path, policy=KeylessTokenLRU, sources=("exact paging-4",)))
    assert result.verdict == "holds"  # nothing broke the bound, but not every sequence was searched
    assert any("not finished" in note for note in result.notes)
    monkeypatch.setattr(exact, "STATE_LIMIT", 10**6)
    done = check_claim(get("C3r"), opts(tmp_path, policy=KeylessTokenLRU, sources=("exact paging-4",), exact_horizon=4))
    assert done.verdict == "verified"
