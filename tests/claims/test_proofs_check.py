"""proofs_check: the registry, the sympy algebra, the assumptions, and that every check can fail.

Each claim gets a deliberately wrong policy, router or bound and must come back with a violation and a
counterexample; the honest ones must pass on the same instances. Searches are kept small (a few dozen
instances, restricted sources) so the file runs in about a minute.
"""

from __future__ import annotations

import json

import pytest
import sympy as sp

from kvtheory import Workload, read_workload, run_fif
from kvtheory.cli import main
from kvtheory.model.batches import batches
from kvtheory.optimum.fif import FurthestInFuture
from kvtheory.policies import LeafLRU, RandomizedLeafToken, TokenLRU
from proofs_check import algebra
from proofs_check.assumptions import ASSUMPTIONS, evaluate_assumptions
from proofs_check.checker import check_claim, drop_assumption
from proofs_check.claims import STATUSES, all_claims, get, select
from proofs_check.exhaustive import exhaustive_optimum
from proofs_check.instance import Instance
from proofs_check.results import Options
from proofs_check.routing import exact_optimum, route
from proofs_check.symbols import B, H, M, k

# -- deliberately wrong policies ---------------------------------------------------------------------


class MRUTokenLRU(TokenLRU):
    """token-LRU with the order reversed: the most recently used leaf goes first (time runs backwards)."""

    name = "token-mru"

    def serve(self, batch):
        self._clock -= 2
        return super().serve(batch)


class MarkBlindRLT(RandomizedLeafToken):
    """An RLT that may evict marked tokens: before each batch every mark is cleared, so every cached leaf
    off the current batch's paths is a candidate (random eviction without phases)."""

    name = "rlt-evicts-marked"

    def serve(self, batch):
        for v in list(self._marked_nodes):
            self._unmark(v)
        self._marked_nodes.clear()
        return super().serve(batch)


class Clairvoyant(FurthestInFuture):
    """FIF passed off as an online policy (it reads the whole sequence up front)."""

    name = "clairvoyant"

    def __init__(self, trie, budget, *, seed=None):
        super().__init__(trie, budget, batches(len(trie.end), 1))


def most_loaded(j, state):
    """A router that piles everything onto the busiest worker."""
    return max(range(state.m), key=lambda i: (state.predicted[i], -i))


def opts(tmp_path, **changes) -> Options:
    base = dict(instances=25, seeds=6, lower_seeds=4, out_dir=tmp_path, shrink_seconds=1.0)
    base.update(changes)
    return Options(**base)


def assert_violation(result, tmp_path):
    assert not result.ok, result.verdict
    assert result.verdict in ("VIOLATED", "NOT REALISED", "DIFFERS")
    assert result.counterexample is not None
    assert result.saved is not None and result.saved.exists()
    assert result.saved.parent == tmp_path
    assert len(read_workload(result.saved)) == len(result.counterexample.instance.workload)


# -- the registry --------------------------------------------------------------------------------------


def test_claims_1_to_9_are_all_registered():
    ids = [c.id for c in all_claims()]
    for wanted in ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9a", "C9b", "C9c"]:
        assert wanted in ids
    assert [c.id for c in select(["C9"])] == ["C9a", "C9b", "C9c"]
    assert get("3").id == "C3" and get("claim7").id == "C7"
    assert get("C3").status == "conjecture"


def test_claims_on_every_policy_take_their_lists_from_the_registry():
    from kvtheory.policies import ONLINE_POLICIES
    from kvtheory.reference import REFERENCE_POLICIES

    shipped = {name for name, cls in ONLINE_POLICIES.items() if cls.__module__.startswith("kvtheory.policies.")}
    section_1 = {name for name in shipped if not ONLINE_POLICIES[name].block_engine}  # vllm is no rule of section 1
    assert set(get("C6").policies) == section_1  # "no online policy beats H_k": every one kvtheory ships
    assert set(get("C2").policies) == {name for name in section_1 if not ONLINE_POLICIES[name].randomized}
    assert get("C2").policies[0] == get("C6").policies[0] == "lru"  # the default policy of a replay
    assert set(REFERENCE_POLICIES) <= shipped - {"rlt-authors"}  # rlt-authors' reference keeps radix nodes


@pytest.mark.parametrize("claim", all_claims(), ids=lambda c: c.id)
def test_every_claim_is_fully_stated(claim):
    assert claim.status in STATUSES
    assert claim.kind in ("upper", "lower", "equal")
    assert isinstance(claim.bound, sp.Expr) and isinstance(claim.additive, sp.Expr)
    assert claim.statement and claim.policies and claim.method is not None
    assert all(a in ASSUMPTIONS for a in claim.assumptions)
    if claim.kind == "lower":
        assert claim.adversary
    assert json.dumps(claim.to_dict())


def test_bounds_are_the_stated_expressions():
    assert get("C3").bound == k and get("C3").additive == B
    assert get("C5").bound == 2 * H(k) and get("C7").bound == 2 * H(k)
    assert get("C6").bound == H(k)
    assert sp.simplify(get("C8").bound - (2 - 1 / M)) == 0
    assert sp.simplify(get("C4").bound - (B + 1) * k / (k + 1)) == 0


# -- the algebra ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(algebra.DERIVATIONS))
def test_algebra_verifies(name):
    ok, why = algebra.DERIVATIONS[name]().verify()
    assert ok, why


@pytest.mark.parametrize(
    "derivation",
    [
        lambda: algebra.harmonic_log(sp.log(k)),
        lambda: algebra.harmonic_log(1 + sp.log(k) / 2),
        lambda: algebra.twice_harmonic(rhs=2 * sp.log(k)),
        lambda: algebra.twice_harmonic(lhs=2 * H(k)),
        lambda: algebra.tree_slack(single=B - algebra.L),
        lambda: algebra.tree_slack(batched=B - algebra.beta * algebra.L),
        lambda: algebra.graham(2 - 1 / (2 * M)),
        lambda: algebra.graham(sp.Rational(3, 2)),
        lambda: algebra.hit_benefit_graham(sp.Symbol("rho", positive=True) * (2 - 1 / M) / 2),
        lambda: algebra.yao_ratio(2 * H(k)),
        lambda: algebra.adaptive_limit(k + 1),
        lambda: algebra.imbalanced_limit((B + 1) * k / (k + 2)),
        lambda: algebra.affinity_limit(M - 1),
    ],
)
def test_algebra_fails_when_an_expression_is_changed(derivation):
    ok, why = derivation().verify()
    assert not ok and why


# -- assumptions ---------------------------------------------------------------------------------------


def test_assumption_details_say_by_how_much():
    long = list(range(4500))
    twin = long[:-1] + [99999]
    inst = Instance(Workload.from_token_lists([long, twin]), 8192, batch=2)
    results = {name: (ok, detail) for name, ok, detail in evaluate_assumptions(get("C7").assumptions, inst)}
    assert results["batch-fits"] == (False, "beta*L_max = 9000 > B = 8192")
    assert results["queries-fit"][0] and results["distinct-queries"][0]
    same = Instance(Workload.from_token_lists([[1, 2], [1, 2]]), 8, batch=2)
    ok, detail = ASSUMPTIONS["distinct-queries"](same)
    assert not ok and "repeats query 0" in detail
    ok, detail = ASSUMPTIONS["uniform-cost"](same.with_(workers=2, a_cached=1, a_miss=4))
    assert not ok and detail == "a_cached = 1 != a_miss = 4"


def test_assumptions_cli(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    long = list(range(4500))
    path.write_text(json.dumps({"tokens": long}) + "\n" + json.dumps({"tokens": long[:-1] + [99999]}) + "\n")
    assert main(["assumptions", "--workload", str(path), "--budget", "8192", "--batch", "2"]) == 0
    out = capsys.readouterr().out
    assert "beta*L_max = 9000 > B = 8192" in out and "C1" in out and "C9c" in out
    assert main(["assumptions", "--workload", str(path), "--budget", "8192", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    c3 = next(c for c in record["claims"] if c["claim"] == "C3")
    assert c3["applies"] is True


# -- exact optima --------------------------------------------------------------------------------------


def test_exhaustive_optimum_matches_fif_on_small_cases():
    w = Workload.from_token_lists([[1, 2], [1, 3], [4], [1, 2], [4], [1, 3], [5, 6], [1, 2]])
    for budget in (3, 4, 5):
        for batch in (1, 2):
            if batch * 2 <= budget:
                assert exhaustive_optimum(w, budget, batch) == run_fif(w, budget, batch=batch).misses


def test_routing_optimum_and_graham_tight_instance():
    from proofs_check.families import graham_tight

    inst = graham_tight(M=3)
    assert exact_optimum(inst)[0] == 3
    assert route(inst, "least-load").makespan == 5  # 2M - 1: ratio 5/3 = 2 - 1/3 exactly


# -- every check can fail ------------------------------------------------------------------------------


def test_c1_on_a_few_instances(tmp_path):
    """The fast tier's share of the C1 check below: FIF equals the exhaustive optimum on 3 instances."""
    good = check_claim(get("C1"), opts(tmp_path, instances=3))
    assert good.verdict == "equal" and good.tried >= 3


@pytest.mark.slow
def test_c1_fif_equals_optimum_and_lru_does_not(tmp_path):
    good = check_claim(get("C1"), opts(tmp_path, instances=15))
    assert good.verdict == "equal" and good.tried >= 15
    bad = check_claim(get("C1"), opts(tmp_path, instances=40, policy=LeafLRU))
    assert_violation(bad, tmp_path)
    assert bad.counterexample.alg > bad.counterexample.opt


@pytest.mark.slow
def test_c2_realised_and_a_doubled_bound_is_not(tmp_path):
    good = check_claim(get("C2"), opts(tmp_path, policy="lru"))
    assert good.verdict == "realised"
    bad = check_claim(get("C2"), opts(tmp_path, policy="lru", bound_scale=2))
    assert_violation(bad, tmp_path)


def test_c3_holds_on_stars_and_an_mru_order_breaks_it(tmp_path):
    stars = ("cyclic", "yao", "imbalanced", "adaptive")
    assert check_claim(get("C3"), opts(tmp_path, sources=stars)).verdict == "holds"
    bad = check_claim(get("C3"), opts(tmp_path, policy=MRUTokenLRU, sources=("hypothesis",)))
    assert_violation(bad, tmp_path)
    assert len(bad.counterexample.instance.workload) <= 15  # shrunk by hypothesis


def test_c3_as_stated_is_false_and_the_counterexample_reproduces(tmp_path, capsys):
    result = check_claim(get("C3"), opts(tmp_path, sources=("long-then-short",)))
    assert_violation(result, tmp_path)
    m = result.counterexample
    assert m.instance.k == 1 and m.alg > m.opt + m.instance.budget  # ALG > k*OPT + B with k = 1
    assert (
        main(
            [
                "ratio",
                "--workload",
                str(result.saved),
                "--budget",
                str(m.instance.budget),
                "--policy",
                "token-lru",
                "--json",
            ]
        )
        == 0
    )
    record = json.loads(capsys.readouterr().out)
    assert record["opt_misses"] == m.opt and record["ratio_mean"] == pytest.approx(m.ratio)


def test_c3_repaired_and_mru(tmp_path):
    assert check_claim(get("C3r"), opts(tmp_path, sources=("long-then-short", "cyclic"))).verdict == "holds"
    assert_violation(check_claim(get("C3r"), opts(tmp_path, policy=MRUTokenLRU, sources=("hypothesis",))), tmp_path)


def test_c4_realised_and_token_lru_does_not_realise_it(tmp_path):
    assert check_claim(get("C4"), opts(tmp_path, sources=("imbalanced B=16", "imbalanced B=32"))).verdict == "realised"
    bad = check_claim(get("C4"), opts(tmp_path, policy=TokenLRU, sources=("imbalanced B=16",)))
    assert_violation(bad, tmp_path)


@pytest.mark.slow
def test_c5_rlt_holds_where_a_mark_blind_rlt_fails(tmp_path):
    killer = ("random-killer",)
    assert check_claim(get("C5"), opts(tmp_path, sources=killer)).verdict == "holds"
    bad = check_claim(get("C5"), opts(tmp_path, policy=MarkBlindRLT, sources=killer, shrink_seconds=0))
    assert_violation(bad, tmp_path)
    assert bad.counterexample.stat > bad.counterexample.bound * bad.counterexample.opt  # the LCB, not the mean


@pytest.mark.slow
def test_c5_halved_bound_and_the_k_gap(tmp_path):
    stars = ("cyclic", "yao")
    assert check_claim(get("C5"), opts(tmp_path, sources=stars)).verdict == "holds"
    # RLT sits near H_k on a cycle, half its bound 2 H_k (with + B on top): 0.4 of the bound must break
    assert_violation(check_claim(get("C5"), opts(tmp_path, sources=stars, bound_scale=0.4)), tmp_path)
    # as stated (k = B - L_max + 1) the long-then-short family breaks it; with H_B it holds
    assert_violation(check_claim(get("C5"), opts(tmp_path, sources=("long-then-short",), shrink_seconds=0)), tmp_path)
    assert check_claim(get("C5r"), opts(tmp_path, sources=("long-then-short",))).verdict == "holds"
    assert_violation(
        check_claim(get("C5r"), opts(tmp_path, policy=MarkBlindRLT, sources=("random-killer",), shrink_seconds=0)),
        tmp_path,
    )


@pytest.mark.slow
def test_c6_realised_and_a_clairvoyant_policy_escapes(tmp_path):
    assert check_claim(get("C6"), opts(tmp_path, policy="rlt", sources=("yao k=4",))).verdict == "realised"
    bad = check_claim(get("C6"), opts(tmp_path, policy=Clairvoyant, sources=("yao k=4",)))
    assert_violation(bad, tmp_path)
    assert bad.counterexample.ratio == pytest.approx(1.0)


@pytest.mark.slow
def test_c7_holds_on_batch_family_and_a_halved_bound_fails(tmp_path):
    family = ("batch B=9",)
    assert check_claim(get("C7"), opts(tmp_path, sources=family)).verdict == "holds"
    bad = check_claim(get("C7"), opts(tmp_path, sources=family, bound_scale=0.5))
    assert_violation(bad, tmp_path)
    assert bad.counterexample.instance.batch > 1
    assert check_claim(get("C7r"), opts(tmp_path, sources=("long-then-short",))).verdict == "holds"
    assert_violation(
        check_claim(get("C7r"), opts(tmp_path, sources=("long-then-short",), bound_scale=0.1, shrink_seconds=0)),
        tmp_path,
    )


@pytest.mark.slow
def test_c7_drop_searches_run(tmp_path):
    result = drop_assumption(get("C7"), "distinct", opts(tmp_path, instances=10))
    assert result.dropped == "distinct-queries" and result.tried >= 10
    result = drop_assumption(get("C7"), "beta*L_max<=B", opts(tmp_path, instances=10))
    assert result.dropped == "batch-fits" and any("undefined" in note for note in result.notes)


def round_robin_by_hand(j, state):
    """A router given as a function: query j to worker j mod M."""
    return j % state.m


def test_c8_graham_holds_and_round_robin_breaks_it(tmp_path):
    assert check_claim(get("C8"), opts(tmp_path)).verdict == "holds"
    bad = check_claim(get("C8"), opts(tmp_path, router=round_robin_by_hand, sources=("hypothesis",), instances=100))
    assert_violation(bad, tmp_path)
    assert bad.counterexample.alg > (2 - sp.Rational(1, bad.counterexample.instance.workers)) * bad.counterexample.opt
    assert_violation(check_claim(get("C8"), opts(tmp_path, sources=("graham-tight",), bound_scale=0.9)), tmp_path)


@pytest.mark.slow
def test_c9_affinity_and_load_only(tmp_path):
    assert check_claim(get("C9a"), opts(tmp_path)).verdict == "realised"
    assert_violation(check_claim(get("C9a"), opts(tmp_path, router="least-load")), tmp_path)
    assert check_claim(get("C9b"), opts(tmp_path)).verdict == "holds"
    assert_violation(check_claim(get("C9b"), opts(tmp_path, router=most_loaded)), tmp_path)
    assert check_claim(get("C9c"), opts(tmp_path)).verdict == "realised"
    assert_violation(check_claim(get("C9c"), opts(tmp_path, router="affinity")), tmp_path)


# -- the command line ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_check_cli_table_json_and_replay(tmp_path, capsys):
    assert main(["check", "C8", "C9a", "--instances", "10", "--out", str(tmp_path), "--no-algebra"]) == 0
    out = capsys.readouterr().out
    assert "claim" in out and "C8" in out and "holds" in out and "realised" in out
    assert main(["check", "C2", "--instances", "5", "--json", "--no-algebra", "--out", str(tmp_path)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["claims"][0]["verdict"] == "realised"
    # a counterexample saved by one check replays through --workload
    result = check_claim(get("C3"), opts(tmp_path, policy=MRUTokenLRU, sources=("hypothesis",)))
    inst = result.counterexample.instance
    assert (
        main(
            [
                "check",
                "C3",
                "--workload",
                str(result.saved),
                "--budget",
                str(inst.budget),
                "--out",
                str(tmp_path / "replay"),
            ]
        )
        == 0
    )  # replay evaluates token-lru itself
    assert "C3" in capsys.readouterr().out


def test_check_cli_drop_and_errors(tmp_path, capsys):
    assert main(["check", "--drop", "uniform-cost", "C8", "--instances", "15", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "C8 without uniform-cost" in out
    assert main(["check", "C99"]) == 2
    assert "unknown claim" in capsys.readouterr().err
    assert main(["check", "--drop", "distinct", "C7", "C5"]) == 2
    assert main(["check", "--drop", "no-such", "C7"]) == 2
    assert main(["check", "--drop", "uniform-cost", "C7"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and "Traceback" not in err
    assert main(["check", "--list"]) == 0
    assert "C9c" in capsys.readouterr().out


def test_routing_optimum_agrees_with_the_joint_mip():
    from kvtheory.cluster.joint_mip import solve_joint_mip
    from kvtheory.model.query import Query

    w = Workload(tuple(Query.of(t, output_len=o) for t, o in [([1, 2], 1), ([1, 2, 3], 0), ([4], 2), ([1, 5], 0)]))
    inst = Instance(w, 4, workers=2, a_cached=1, a_miss=3, a_out=1)
    mip = solve_joint_mip(w, [4, 4], a_miss=[3.0, 3.0], a_cached=[1.0, 1.0], output_time=[1.0, 0.0, 2.0, 0.0])
    assert mip.status == "optimal"
    assert exact_optimum(inst)[0] == pytest.approx(mip.makespan)
