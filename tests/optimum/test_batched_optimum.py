"""The exact optimum at batch size >= 2: FIF is only an upper bound there; ``solve_optimum`` is exact,
with a proof, against an exhaustive search; statuses are honest; the flow bound is a lower bound."""

import json

import numpy as np
import pulp
import pytest
from exhaustive import exhaustive_misses
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import instances

from kvtheory import Workload, fif_bracket, run_fif, solve_optimum, weighted_paging_bound
from kvtheory.cli import main
from kvtheory.model.batches import batches
from kvtheory.optimum import flow_bound
from kvtheory.optimum.formulations import edge_cache
from kvtheory.optimum.solvers import solve
from proofs_check.strategies import strategy, weighted_instance

#: eight one- and two-token queries, beta = 2, B = 3: FIF keeps token 20 (wanted sooner, by one query)
#: and loses the prefix (10, 11) that two queries of the last batch want: 10 misses against 9
WEIGHTED = [[10, 11], [20], [300], [301], [20], [302], [10, 11], [10, 11]]
#: beta = 2, B = 4: keeping (1, 2) through steps 1-3 needs (1) kept at step 1 too, which does not fit;
#: the flow bound (closure dropped) and the edge MIP's LP relaxation are both below OPT
FRACTIONAL = [[1, 2], [1, 2], [5], [6, 11], [1, 7], [8], [9], [10], [1, 2], [1, 2]]


def _with_repeats(queries: list[list[int]], beta: int) -> list[list[int]]:
    """The same queries, the first of every batch repeated inside its batch where there is room."""
    out = []
    for start in range(0, len(queries), beta):
        group = queries[start : start + beta]
        out += group + [group[0]] * (beta - len(group))
    return out


@st.composite
def batched(draw):
    """Small prefix-tree instances at beta = 2..3 with shared prefixes inside batches, with or without
    repeated queries; or the weighted-batch family that FIF gets wrong about half the time."""
    if draw(st.booleans()):
        instance = draw(strategy(weighted_instance))
        return instance.workload.token_lists(), instance.budget, instance.batch
    workload, budget, beta = draw(
        instances(max_queries=8, max_length=3, alphabet=3, max_batch=3).filter(lambda i: i[2] > 1)
    )
    queries = workload.token_lists()
    if draw(st.booleans()):
        queries = _with_repeats(queries, beta)
        trie = Workload.from_token_lists(queries).trie
        need = max(
            sum(trie.edge_len[v] for v in {v for j in g for v in trie.path(j)}) for g in batches(len(queries), beta)
        )
        budget = max(budget, need)
    return queries, budget, beta


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(batched())
@example((WEIGHTED, 3, 2))
@example((FRACTIONAL, 4, 2))
@example(([[1, 2], [1, 2]] * 3, 2, 2))  # batches of equal queries, budget = footprint
def test_exact_optimum_equals_exhaustive_search(instance):
    queries, budget, beta = instance
    workload = Workload.from_token_lists(queries)
    truth = exhaustive_misses(queries, budget, beta)
    opt = solve_optimum(workload, budget, batch=beta)
    assert opt.status == "optimal" and opt.misses == opt.bound == truth and opt.proof
    assert opt.fif_misses == run_fif(workload, budget, batch=beta).misses >= truth
    steps = batches(len(workload), beta)
    assert weighted_paging_bound(workload.trie, steps, budget, workload.total_tokens) <= truth


def test_weighted_counterexample_fif_is_above_the_optimum():
    workload = Workload.from_token_lists(WEIGHTED)
    assert exhaustive_misses(WEIGHTED, 3, 2) == 9
    assert run_fif(workload, 3, batch=2).misses == 10
    opt = solve_optimum(workload, 3, batch=2)
    assert (opt.status, opt.misses, opt.bound, opt.fif_misses) == ("optimal", 9, 9, 10)
    assert opt.solver.startswith("mip")  # the flow bound (9) is below FIF, so the MIP decided


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_relaxations_are_loose_on_the_fractional_instance(solver):
    workload = Workload.from_token_lists(FRACTIONAL)
    steps = [list(g) for g in batches(len(workload), 2)]
    assert exhaustive_misses(FRACTIONAL, 4, 2) == 13
    assert weighted_paging_bound(workload.trie, steps, 4, workload.total_tokens) == 12
    prob = pulp.LpProblem("relaxation", pulp.LpMinimize)
    hits = edge_cache(prob, workload.trie, steps, 4, [1] * len(steps), "", None)
    objective = -pulp.lpSum(hits.values())
    offset = workload.total_tokens + objective.constant
    objective.constant = 0
    prob.setObjective(objective)
    relaxed = solve(prob, solver, None, mip=False, gap_abs=0.0)
    assert offset + relaxed.objective == pytest.approx(12.5)
    assert solve_optimum(workload, 4, batch=2, mip_solver=solver).misses == 13


def test_fif_alone_never_claims_optimality_at_batch_2_or_more():
    workload = Workload.from_token_lists(WEIGHTED)
    alone = fif_bracket(workload, 3, batch=2)
    assert (alone.status, alone.misses, alone.bound, alone.proof) == ("upper_bound", 10, 9, None)
    assert alone.gap == pytest.approx(0.1)
    tight = fif_bracket(Workload.from_token_lists([[1], [2], [1], [2]]), 2, batch=2)
    assert tight.status == "upper_bound" and tight.gap == 0.0
    assert fif_bracket(workload, 3, batch=1).status == "optimal"


def test_fif_bracket_reports_every_field_at_batch_1_by_default_and_at_batch_2():
    """fif_bracket's Optimum field by field: batch 1 by default (FIF exact, with its proof); at beta = 2
    FIF's misses as an upper bound beside the flow bound, no proof. solver, budget, batch and fif_misses
    are the call's own."""
    workload = Workload.from_token_lists(WEIGHTED)
    exact = fif_bracket(workload, 3).to_dict()
    assert exact.pop("seconds") >= 0
    assert exact == {
        "solver": "fif",
        "status": "optimal",
        "misses": 7,
        "bound": 7,
        "gap": 0.0,
        "proof": "FIF is exact at batch size 1",
        "fif_misses": 7,
        "budget": 3,
        "batch": 1,
        "block_size": 1,
    }
    bracket = fif_bracket(workload, 3, batch=2).to_dict()
    assert bracket.pop("seconds") >= 0
    assert bracket == {
        "solver": "fif",
        "status": "upper_bound",
        "misses": 10,
        "bound": 9,
        "gap": pytest.approx(0.1),
        "proof": None,
        "fif_misses": 10,
        "budget": 3,
        "batch": 2,
        "block_size": 1,
    }


def test_a_time_limit_spent_before_the_mip_gives_the_bracket():
    workload = Workload.from_token_lists(FRACTIONAL)
    opt = solve_optimum(workload, 4, batch=2, time_limit=1e-9)
    assert (opt.status, opt.misses, opt.bound, opt.proof) == ("time_limit", 13, 12, None)
    assert opt.gap == pytest.approx(1 / 13)


def test_opt_command_proves_the_batched_optimum_by_default(tmp_path, capsys):
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps({"tokens": q}) + "\n" for q in WEIGHTED))
    assert main(["opt", "--workload", str(path), "--budget", "3", "--batch", "2", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert (exact["status"], exact["misses"], exact["bound"], exact["fif_misses"]) == ("optimal", 9, 9, 10)
    assert main(["opt", "--workload", str(path), "--budget", "3", "--batch", "2", "--solver", "fif", "--json"]) == 0
    fif = json.loads(capsys.readouterr().out)
    assert (fif["status"], fif["misses"], fif["bound"]) == ("upper_bound", 10, 9)
    assert main(["ratio", "--workload", str(path), "--budget", "3", "--batch", "2", "--policy", "lru", "--json"]) == 0
    ratio = json.loads(capsys.readouterr().out)
    assert ratio["opt_misses"] == 9 and ratio["opt_status"] == "optimal"
    assert ratio["ratio_bracket"][0] == ratio["ratio_bracket"][1] == ratio["ratio_mean"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(batched())
def test_certified_highs_flow_equals_network_simplex(instance):
    """The bound's flow, solved by HiGHS and certified in integers, against networkx's network simplex."""
    queries, budget, beta = instance
    workload = Workload.from_token_lists(queries)
    steps = batches(len(workload), beta)
    certified = weighted_paging_bound(workload.trie, steps, budget, workload.total_tokens)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flow_bound, "_highs_certified", lambda *args: None)
        simplex = weighted_paging_bound(workload.trie, steps, budget, workload.total_tokens)
    assert certified == simplex


def test_flow_certificate_rejects_a_wrong_flow(monkeypatch):
    """A flow HiGHS did not make optimal fails the exact check: the check is what proves the bound."""
    import highspy

    real_solution = highspy.Highs.getSolution

    def worse(self):
        solution = real_solution(self)
        values = list(solution.col_value)
        values[0] += 1  # break conservation at the first line arc
        solution.col_value = values
        return solution

    monkeypatch.setattr(highspy.Highs, "getSolution", worse)
    demand = np.array([-2, 0, 2])
    arcs = {"tail": np.array([0, 1, 0]), "head": np.array([1, 2, 2])}
    bounds = {"lower": np.array([0, 0, 0]), "upper": np.array([2, 2, 1]), "cost": np.array([1, 1, 3])}
    assert flow_bound._highs_certified(demand, **arcs, **bounds) is None
    assert flow_bound.min_cost_flow(demand, **arcs, **bounds) == 4  # solved by the network simplex instead


def test_highs_flow_is_certified_where_optimal_arcs_need_potential_differences_beyond_one():
    """HiGHS's own answer passes the exact check, so no fallback is needed: two units over 0 -> 1 -> 2
    (costs 3 and 2, both arcs strictly inside their bounds, so their reduced costs must be exactly 0 and
    the potentials differ by 3 and 2), none over the dearer direct arc (cost 6 > 3 + 2). The network
    simplex is switched off, so only a certified HiGHS flow can give the optimum 10."""
    network = {
        "tail": np.array([0, 1, 0]),
        "head": np.array([1, 2, 2]),
        "lower": np.array([0, 0, 0]),
        "upper": np.array([5, 5, 1]),
        "cost": np.array([3, 2, 6]),
    }
    demand = np.array([-2, 0, 2])
    assert flow_bound._highs_certified(demand, **network).tolist() == [2, 2, 0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flow_bound, "_network_simplex", None)
        assert flow_bound.min_cost_flow(demand, **network) == 10


@pytest.mark.parametrize(
    "col_value,row_dual",
    [
        ([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]),  # feasible, cost 5: one unit over the dear direct arc
        ([2.0, 2.0, 0.0], [0.0, 0.0, 0.0]),  # the optimal flow with potentials that do not prove it
    ],
)
def test_the_flow_certificate_refuses_what_it_cannot_prove(monkeypatch, col_value, row_dual):
    """min_cost_flow takes HiGHS's flow only with an exact proof (conservation, bounds, complementary
    slackness on the rounded potentials); a forged HiGHS answer that is not optimal, or not proven so, is
    refused and network simplex decides: the optimum 4 (two units over 0 -> 1 -> 2) either way."""
    import highspy

    from kvtheory.optimum import flow_bound

    real = highspy.Highs.getSolution

    def forged(self):
        solution = real(self)
        solution.col_value, solution.row_dual = col_value, row_dual
        return solution

    arcs = {"tail": np.array([0, 1, 0]), "head": np.array([1, 2, 2]), "lower": np.array([0, 0, 0])}
    network = {**arcs, "upper": np.array([2, 2, 1]), "cost": np.array([1, 1, 3])}
    demand = np.array([-2, 0, 2])
    assert flow_bound._highs_certified(demand, **network).tolist() == [2, 2, 0]
    monkeypatch.setattr(highspy.Highs, "getSolution", forged)
    assert flow_bound._highs_certified(demand, **network) is None
    assert flow_bound.min_cost_flow(demand, **network) == 4


def _highs_answer(monkeypatch, edit):
    """HiGHS's solution, edited by ``edit(solution)`` before _highs_certified reads it."""
    import highspy

    real = highspy.Highs.getSolution

    def edited(self):
        solution = real(self)
        edit(solution)
        return solution

    monkeypatch.setattr(highspy.Highs, "getSolution", edited)


def _no_network_simplex(*args):
    raise AssertionError("the network simplex ran: HiGHS's flow was not certified")


def test_min_cost_flow_refuses_a_lower_bound_above_the_capacity():
    """No flow exists when an arc's lower bound exceeds its capacity: said word for word, before any solver."""
    arcs = {"tail": np.array([0, 1]), "head": np.array([1, 2]), "cost": np.array([1, 1])}
    with pytest.raises(ValueError, match=r"^an arc's lower bound exceeds its capacity: no feasible flow$"):
        flow_bound.min_cost_flow(np.array([-1, 0, 1]), **arcs, lower=np.array([0, 3]), upper=np.array([2, 2]))


def test_min_cost_flow_prints_nothing(capfd):
    """HiGHS's banner and log stay off stdout and stderr (the CLI's --json output is stdout)."""
    network = {"tail": np.array([0, 1, 0]), "head": np.array([1, 2, 2]), "lower": np.array([0, 0, 0])}
    assert (
        flow_bound.min_cost_flow(np.array([-2, 0, 2]), **network, upper=np.array([2, 2, 1]), cost=np.array([1, 1, 3]))
        == 4
    )
    assert capfd.readouterr() == ("", "")


def test_the_bounds_flows_are_certified_by_highs_alone(monkeypatch):
    """On the bound's own networks (gap arcs of negative cost saturated at their capacity, so with negative
    reduced cost at the upper bound) HiGHS's flow passes the exact check: the network simplex never runs."""
    monkeypatch.setattr(flow_bound, "_network_simplex", _no_network_simplex)
    for queries, budget, bound in ((WEIGHTED, 3, 9), (FRACTIONAL, 4, 12)):
        workload = Workload.from_token_lists(queries)
        steps = batches(len(workload), 2)
        assert weighted_paging_bound(workload.trie, steps, budget, workload.total_tokens) == bound
    parallel = {"tail": np.array([0, 0]), "head": np.array([1, 1]), "lower": np.array([0, 0])}
    # the cheap arc full (reduced cost 1 - 5 < 0), the dear one strictly inside its bounds
    assert flow_bound.min_cost_flow(np.array([-2, 2]), **parallel, upper=np.array([1, 5]), cost=np.array([1, 5])) == 6


@pytest.mark.parametrize("sign", [1, -1])
def test_the_flow_certificate_takes_row_duals_of_either_sign(monkeypatch, sign):
    """The potentials may come with either sign convention (HiGHS's row duals, or their negatives): both
    certify the optimal flow of two units over 0 -> 1 -> 2, whose potentials differ by 3 and 2."""
    _highs_answer(monkeypatch, lambda solution: setattr(solution, "row_dual", [sign * y for y in solution.row_dual]))
    network = {"tail": np.array([0, 1, 0]), "head": np.array([1, 2, 2]), "lower": np.array([0, 0, 0])}
    network |= {"upper": np.array([5, 5, 1]), "cost": np.array([3, 2, 6])}
    assert flow_bound._highs_certified(np.array([-2, 0, 2]), **network).tolist() == [2, 2, 0]


def test_the_flow_certificate_refuses_a_flow_over_an_arcs_capacity(monkeypatch):
    """A forged answer that conserves flow and satisfies complementary slackness with its potentials, but
    sends two units over an arc of capacity 1 (cost 2, below the optimum 3), is refused: bounds are part of
    the proof, and the network simplex finds the optimum 3."""

    def forge(solution):
        solution.col_value, solution.row_dual = [2.0, 0.0], [0.0, 1.0]

    _highs_answer(monkeypatch, forge)
    network = {"tail": np.array([0, 0]), "head": np.array([1, 1]), "lower": np.array([0, 0])}
    network |= {"upper": np.array([1, 5]), "cost": np.array([1, 2])}
    assert flow_bound._highs_certified(np.array([-2, 2]), **network) is None
    assert flow_bound.min_cost_flow(np.array([-2, 2]), **network) == 3


def test_min_cost_flow_where_no_arc_enters_the_last_node(monkeypatch):
    """Conservation is checked at every node, the last one too when no arc enters it (a pure source):
    two units 2 -> 0 -> 1 at cost 4, certified from HiGHS's flow alone."""
    monkeypatch.setattr(flow_bound, "_network_simplex", _no_network_simplex)
    network = {"tail": np.array([2, 0]), "head": np.array([0, 1]), "lower": np.array([0, 0])}
    assert flow_bound.min_cost_flow(np.array([0, 2, -2]), **network, upper=np.array([2, 2]), cost=np.array([1, 1])) == 4


@pytest.mark.parametrize("certified", [True, False])
def test_min_cost_flow_takes_negative_lower_bounds(monkeypatch, certified):
    """Lower bounds are any integers: an arc 0 -> 1 with -1 <= f <= 3 carries the demand 2, at cost 2 by
    HiGHS's certified flow and by the network simplex (which shifts the lower bound into the demands)."""
    if not certified:
        monkeypatch.setattr(flow_bound, "_highs_certified", lambda *args: None)
    arc = {"tail": np.array([0]), "head": np.array([1]), "lower": np.array([-1]), "upper": np.array([3])}
    assert flow_bound.min_cost_flow(np.array([-2, 2]), **arc, cost=np.array([1])) == 2
