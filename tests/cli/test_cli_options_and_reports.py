"""The command line's rough edges of issue 26, each kept fixed by a test: an adversary built for --budget,
k reported as null with a reason when it is < 1, the steady ratio and the claims' bounds of ``ratio``,
``opt`` as a policy name, ``--plugin`` anywhere, infeasible budgets of ``mrc``, one ``--solver``, and the
small ones (help text, --seeds with a deterministic policy, Workload's repr)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kvtheory.cli import main
from kvtheory.errors import InputError
from kvtheory.model.workload import Workload, write_workload
from kvtheory.workloads.registry import generate

ROOT = Path(__file__).resolve().parents[2]


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys, *argv) -> dict:
    code, out, err = _cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def _one_line_error(capsys, *argv) -> str:
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    return err


# -- 1. an adversary's B follows --budget --------------------------------------------------------------
def test_an_adversary_is_built_for_the_budget_given(capsys):
    record = _json(capsys, "ratio", "--adversary", "imbalanced", "--param", "k=2", "--param", "n=30", "--budget", 16,
                   "--policy", "lru")  # fmt: skip
    # imbalanced's long query has B - k + 1 tokens: built for B = 16 it has 15, so k = 16 - 15 + 1 = 2
    assert record["budget"] == 16 and record["k"] == 2
    same = _json(capsys, "ratio", "--adversary", "imbalanced", "--param", "k=2", "--param", "n=30", "--param", "B=16",
                 "--budget", 16, "--policy", "lru")  # fmt: skip
    assert same["misses_mean"] == record["misses_mean"] and same["opt_misses"] == record["opt_misses"]


def test_an_adversary_budget_that_contradicts_the_budget_is_one_line(capsys):
    err = _one_line_error(capsys, "ratio", "--adversary", "imbalanced", "--param", "B=64", "--budget", 16, "--policy",
                          "lru")  # fmt: skip
    assert "B=64 differs from the budget 16" in err
    # the star families derive k from B: a k the budget contradicts is refused, not silently replaced
    err = _one_line_error(capsys, "ratio", "--adversary", "cyclic", "--param", "k=2", "--param", "L=4", "--budget", 7,
                          "--policy", "lru")  # fmt: skip
    assert "k=2 does not match the budget 7" in err and "k = B - L_max + 1 = 4" in err


def test_generate_builds_for_a_budget_only_when_asked():
    assert generate("imbalanced", {"k": 2, "n": 3}).max_length == 64 - 2 + 1  # the family's default B = 64
    assert generate("imbalanced", {"k": 2, "n": 3}, budget=16).max_length == 16 - 2 + 1
    assert generate("cyclic", {"L": 4, "n": 20}, budget=9).trie.distinct_tokens == (4 - 1) + (9 - 4 + 2)
    assert generate("paging", {"pages": 3, "requests": 5}, budget=2).max_length == 1  # no B: the budget is unused


def test_a_sweep_builds_adversaries_for_an_integer_budget(tmp_path):
    from kvtheory.experiments.grid import expand
    from kvtheory.experiments.sweep import run_cell

    spec = {"policies": ["lru"], "grid": [{"family": "imbalanced", "params": {"k": 2, "n": 30}, "budget": 16}]}
    (cell,) = expand(spec)
    assert cell["params"]["B"] == 16  # in the cell, so that its id names the instance
    record = run_cell(cell)
    assert "error" not in record and record["k"] == 2
    spec["grid"][0]["params"]["B"] = 64
    with pytest.raises(InputError, match="B = 64 differs from budget = 16"):
        expand(spec)


# -- 2. k < 1 is null with a reason ------------------------------------------------------------------
def _long_pair(tmp_path) -> Path:
    """Two queries of 4 tokens sharing 3: at beta = 2 the footprint is 5, beta * L_max = 8."""
    path = tmp_path / "pair.jsonl"
    write_workload(Workload.from_token_lists([[1, 2, 3, 4], [1, 2, 3, 5]] * 3), path)
    return path


@pytest.mark.parametrize("command", ["evict", "ratio"])
def test_k_below_one_is_null_with_a_reason(tmp_path, capsys, command):
    path = _long_pair(tmp_path)
    record = _json(capsys, command, "--workload", path, "--budget", 6, "--batch", 2, "--policy", "lru")
    assert record["k"] is None and record["k_reason"].startswith("beta * L_max = 2 * 4 = 8 > B = 6")
    fine = _json(capsys, command, "--workload", path, "--budget", 8, "--batch", 2, "--policy", "lru")
    assert fine["k"] == 8 - 2 * 4 + 1 and "k_reason" not in fine
    _, out, _ = _cli(capsys, command, "--workload", path, "--budget", 6, "--batch", 2, "--policy", "lru")
    assert "k_reason" in out and "bounds in k do not apply" in out


def test_a_sweep_record_with_k_below_one_reads_back(tmp_path):
    from kvtheory.experiments.sweep import read_results, run_cell

    path = _long_pair(tmp_path)
    cell = {"family": "file", "params": {"workload": str(path), "format": "auto", "block_size": 512}, "seed": 0,
            "budget": 6, "batch": 2, "policy": "lru", "policy_seeds": [0]}  # fmt: skip
    record = run_cell(cell)
    assert record["k"] is None and record["H_k"] is None and "k_reason" in record
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(record) + "\n")
    assert "k" not in read_results(results)[0]  # null reads as absent: plots by k leave the cell out


# -- 3. the steady ratio and the claims' bounds --------------------------------------------------------
def test_ratio_reports_the_steady_ratio_and_the_bound_of_claim_4(capsys):
    # LRU on imbalanced misses everything: (B + 1) per cycle of k + 1 queries; B = 16, k = 2
    record = _json(capsys, "ratio", "--adversary", "imbalanced", "--param", "k=2", "--param", "n=30", "--budget", 16,
                   "--policy", "lru")  # fmt: skip
    distinct = (16 - 2 + 1) + 2
    assert record["compulsory_misses"] == distinct
    assert record["steady_ratio"] == (record["misses_mean"] - distinct) / (record["opt_misses"] - distinct)
    assert record["misses_mean"] == 10 * (16 + 1)  # 10 cycles, every token missed
    (c4,) = [b for b in record["claim_bounds"] if b["claim"] == "C4"]
    assert c4["kind"] == "lower" and c4["value"] == pytest.approx(2 * (16 + 1) / (2 + 1))
    # C4 speaks of L-LRU only: token-LRU gets C3's bound k (and its repair), not C4's
    other = _json(capsys, "ratio", "--adversary", "imbalanced", "--param", "k=2", "--param", "n=30", "--budget", 16,
                  "--policy", "token-lru")  # fmt: skip
    assert {b["claim"] for b in other["claim_bounds"]} == {"C3", "C3r"}
    assert [b["value"] for b in other["claim_bounds"] if b["claim"] == "C3"] == [2.0]


def test_seeds_give_the_mean_steady_ratio(capsys):
    record = _json(capsys, "ratio", "--adversary", "yao", "--param", "k=3", "--param", "n=80", "--budget", 6,
                   "--policy", "rlt", "--seeds", 3)  # fmt: skip
    d, opt = record["compulsory_misses"], record["opt_misses"]
    per_seed = [(r * opt - d) / (opt - d) for r in record["ratios"]]
    assert record["steady_ratios"] == pytest.approx(per_seed)
    assert record["steady_ratio_mean"] == pytest.approx(sum(per_seed) / 3)
    assert record["steady_ratio"] == pytest.approx(record["steady_ratio_mean"])


def test_no_claim_bound_where_no_claim_applies(tmp_path, capsys):
    record = _json(capsys, "ratio", "--workload", _long_pair(tmp_path), "--budget", 6, "--batch", 2, "--policy", "lru")
    assert record["claim_bounds"] == []  # k < 1 and batch 2: no bound of a claim on L-LRU has a value


# -- 4. opt wherever a list of policies is; the solver that ran ----------------------------------------
def test_mrc_takes_opt_and_names_the_solver(tmp_path, capsys):
    path = _long_pair(tmp_path)
    record = _json(capsys, "mrc", "--workload", path, "--budgets", "5,8", "--policies", "lru,opt", "--batch", 2,
                   "--workers", 1)  # fmt: skip
    assert set(record["hit_rate"]) == {"lru", "opt"} and record["opt_solver"][0] in ("fif", "mip:highs", "mip:cbc")
    assert record["opt_status"] == ["optimal", "optimal"]
    at_one = _json(capsys, "mrc", "--workload", path, "--budgets", "5", "--policies", "opt", "--workers", 1)
    assert at_one["opt_solver"] == ["fif"]
    ratio = _json(capsys, "ratio", "--workload", path, "--budget", 5, "--policy", "lru")
    assert ratio["opt_solver"] == "fif"  # exact at batch 1


def test_an_unknown_policy_lists_every_accepted_name_in_the_plural(tmp_path, capsys):
    from kvtheory.policies import ONLINE_POLICIES

    err = _one_line_error(capsys, "mrc", "--workload", _long_pair(tmp_path), "--budgets", 8, "--policies", "lru,nope",
                          "--workers", 1)  # fmt: skip
    assert "unknown policy 'nope'; known policies: " in err
    assert all(name in err for name in [*ONLINE_POLICIES, "fif", "opt"])
    assert "policys" not in _one_line_error(capsys, "evict", "--workload", _long_pair(tmp_path), "--budget", 8,
                                            "--policy", "nope")  # fmt: skip


def test_registry_plurals():
    from kvtheory.registry import Registry

    assert [Registry(kind).plural for kind in ("policy", "router", "key", "box")] == [
        "policies", "routers", "keys", "boxes"]  # fmt: skip
    with pytest.raises(InputError, match="known indices: $"):
        Registry("index", plural="indices").lookup("x")


# -- 5. --plugin before or after the subcommand ----------------------------------------------------------
@pytest.mark.parametrize("where", ["before", "after"])
def test_plugin_before_or_after_the_subcommand(capsys, where):
    plugin = ["--plugin", str(ROOT / "examples" / "custom_policy.py")]
    argv = ["ratio", "--adversary", "cyclic", "--param", "n=50", "--budget", 7, "--policy", "mru-leaf"]
    code, out, err = _cli(capsys, *(plugin + argv if where == "before" else argv + plugin), "--json")
    assert code == 0, err
    assert json.loads(out)["policy"] == "mru-leaf"


# -- 6. mrc: an infeasible budget is reported, the rest computed -----------------------------------------
def test_mrc_reports_an_infeasible_budget_and_draws_the_rest(tmp_path, capsys):
    path = _long_pair(tmp_path)
    record = _json(capsys, "mrc", "--workload", path, "--budgets", "3,5,8", "--policies", "lru,fif", "--workers", 1)
    assert record["budgets"] == [5, 8]
    (entry,) = record["infeasible"]
    assert entry["budget"] == 3 and "more than the budget B = 3" in entry["reason"]
    tokens = 6 * 4
    for name in ("lru", "fif"):
        assert record["miss_ratio"][name] == [m / tokens for m in record["misses"][name]]
        assert [1 - r for r in record["hit_rate"][name]] == pytest.approx(record["miss_ratio"][name])
    _, out, _ = _cli(capsys, "mrc", "--workload", path, "--budgets", "3,8", "--policies", "lru", "--workers", 1)
    assert "infeasible" in out and "8" in out
    assert "no budget can serve" in _one_line_error(capsys, "mrc", "--workload", path, "--budgets", "2,3",
                                                    "--policies", "lru", "--workers", 1)  # fmt: skip


# -- 7. one --solver ----------------------------------------------------------------------------------
def test_one_solver_option(tmp_path, capsys):
    from kvtheory.optimum.exact import DEFAULT_MIP_SOLVER

    path = _long_pair(tmp_path)
    argv = ["opt", "--workload", path, "--budget", 5, "--batch", 2]
    exact = _json(capsys, *argv)
    for solver in ("highs", "cbc", "mip"):  # mip: the old spelling of the MIP alone on CBC
        alone = _json(capsys, *argv, "--solver", solver)
        assert alone["solver"] == ("cbc" if solver == "mip" else solver) and alone["misses"] == exact["misses"]
    err = _one_line_error(capsys, *argv, "--mip-solver", "cbc")
    assert "--solver" in err and DEFAULT_MIP_SOLVER in err
    assert "known solvers: exact, fif, highs, cbc" in _one_line_error(capsys, *argv, "--solver", "gurobi")


def test_the_default_mip_back_end_is_the_measured_one():
    import inspect

    from kvtheory.optimum.exact import DEFAULT_MIP_SOLVER, MIP_SOLVERS, solve_optimum

    assert DEFAULT_MIP_SOLVER in MIP_SOLVERS
    assert inspect.signature(solve_optimum).parameters["mip_solver"].default == DEFAULT_MIP_SOLVER
    optima = (ROOT / "docs" / "optima.md").read_text()
    assert "python benchmarks/mip_backends.py" in optima and f"default is {DEFAULT_MIP_SOLVER}" in optima


# -- 8. the small ones ---------------------------------------------------------------------------------
def test_ratio_workers_help_says_when_the_mip_runs(capsys):
    from kvtheory.cluster.optimum import AUTO_MIP_QUERIES

    with pytest.raises(SystemExit):
        main(["ratio", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"the MIP runs only on instances of up to {AUTO_MIP_QUERIES} queries" in text


def test_seeds_with_a_deterministic_policy_is_an_error(tmp_path, capsys):
    path = _long_pair(tmp_path)
    for command in ("evict", "ratio"):
        err = _one_line_error(capsys, command, "--workload", path, "--budget", 8, "--policy", "lru", "--seeds", 5)
        assert "lru is deterministic" in err
    assert _json(capsys, "evict", "--workload", path, "--budget", 8, "--policy", "rlt", "--seeds", 2)["seeds"] == [0, 1]


def test_a_workload_prints_short():
    workload = Workload.from_token_lists([[7] * 50] * 1000)
    assert repr(workload) == "Workload(1000 queries, 50000 tokens, L_max = 50)"
    assert str(workload[:1]) == "Workload(1 query, 50 tokens, L_max = 50)"


def test_the_readme_says_where_check_claim_writes():
    readme = (ROOT / "README.md").read_text()
    snippet = readme[readme.index('result = check_claim(get("C5")') - 200 : readme.index("drop_assumption(get(")]
    assert "./counterexamples/" in snippet and "result.saved" in snippet


def test_steady_ratio_edge_cases():
    from kvtheory.ratio import steady_ratio

    assert steady_ratio(5, 5, 5) == 1.0 and math.isinf(steady_ratio(6, 5, 5))
    assert steady_ratio(12, 7, 3) == (12 - 3) / (7 - 3)
