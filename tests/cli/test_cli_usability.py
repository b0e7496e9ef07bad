"""Rough edges a new user hit, each kept fixed by a test."""

import json

import pytest

from kvtheory.cli import main
from kvtheory.cluster.routers.base import parse_options
from kvtheory.errors import InputError


@pytest.mark.parametrize("written", ["[16,32]", "[16, 32]", "16,32"])
def test_list_parameters_accept_the_form_generate_list_prints(tmp_path, capsys, written):
    path = tmp_path / "g.jsonl"
    argv = ["generate", "gsp", "--param", f"lengths={written}", "--param", "groups=2", "--param", "prompts=1"]
    assert main([*argv, "-o", str(path)]) == 0
    lengths = sorted(len(json.loads(line)["tokens"]) for line in path.read_text().splitlines())
    assert lengths == [16 + 1, 32 + 1]  # each prompt also holds the separator token
    assert main(["generate", "--list"]) == 0
    assert "lengths=[512, 1024, 2048, 4096, 8192]" in capsys.readouterr().out


def test_router_options_and_generator_parameters_share_one_parser():
    options = parse_options("r", {"flag": False, "count": 3, "rate": 0.5, "limit": None}, {"flag": "yes"})
    assert options == {"flag": True, "count": 3, "rate": 0.5, "limit": None}
    assert parse_options("r", {"limit": None}, {"limit": "7"}) == {"limit": 7}
    with pytest.raises(InputError, match="router option count='x' is not a valid int"):
        parse_options("r", {"count": 3}, {"count": "x"})


def test_the_notebooks_extra_installs_what_opening_and_converting_them_needs():
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", requirement)[0] for requirement in extras["notebooks"]}
    assert {"jupyterlab", "nbconvert", "ipykernel"} <= names
    assert "pip install -e .[notebooks]" in (root / "README.md").read_text()


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("kvtheory ")


@pytest.mark.slow
def test_a_plugin_policy_runs_through_ratio_and_check(capsys):
    from pathlib import Path

    plugin = str(Path(__file__).resolve().parents[2] / "examples" / "custom_policy.py")
    argv = ["--plugin", plugin, "ratio", "--adversary", "cyclic", "--param", "k=4", "--param", "n=200"]
    code, out, _ = _cli(capsys, *argv, "--budget", 7, "--policy", "mru-leaf", "--json")
    assert code == 0 and json.loads(out)["ratio_mean"] == 1.0  # MRU is optimal on a cycle
    code, out, _ = _cli(capsys, "--plugin", plugin, "check", "C3", "--policy", "mru-leaf", "--instances", 20)
    assert code == 0 and "VIOLATED" in out
    code, _, err = _cli(capsys, "--plugin", "no/such/plugin.py", "generate", "--list")
    assert code == 2 and err.count("\n") == 1 and "cannot load plugin" in err


@pytest.mark.slow
def test_check_help_lists_every_claim_and_says_which_ratio_is_which(capsys, tmp_path):
    from proofs_check import all_claims

    with pytest.raises(SystemExit):
        main(["check", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(f"{claim.id}," in help_text or f"{claim.id} (" in help_text for claim in all_claims())
    code, out, _ = _cli(capsys, "check", "C3", "--instances", 30, "--out", tmp_path)
    assert "worst ratio (search)" in out and "smallest counterexample" in out


def test_assumptions_say_which_claims_check_refutes(capsys, tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps({"tokens": q}) + "\n" for q in [[1, 2], [1, 3], [4]] * 3))
    code, out, _ = _cli(capsys, "assumptions", "--workload", path, "--budget", 6)
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line and not line.startswith(" ")}
    assert "finds it VIOLATED" in lines["C3"] and "finds it VIOLATED" in lines["C5"]
    assert "finds it" not in lines["C3r"] and "does not apply" in lines["C1b"]  # C1b needs beta >= 2


def test_route_and_costmodel_text_say_their_units(capsys, tmp_path):
    path = tmp_path / "w.jsonl"
    queries = [{"tokens": list(range(g, g + 40)), "arrival": g / 100} for g in range(0, 400, 50)]
    path.write_text("".join(json.dumps(q) + "\n" for q in queries))
    cluster = ["--workers", 2, "--router", "lbgr", "--eviction", "lru", "--gpu", "L40", "--model", "Llama-3.1-8B"]
    code, out, _ = _cli(capsys, "route", "--workload", path, *cluster)
    assert code == 0 and "rate None" not in out and "{" not in out
    assert "latency_p50 (s)" in out and "arrivals from the workload file" in out
    code, out, _ = _cli(capsys, "costmodel", "--gpu", "L40", "--model", "Llama-3.1-8B")
    assert code == 0 and "a_miss (s per uncached prompt token)" in out and "budget (tokens)" in out


def _record(family, policy="lru", **params):
    k = params.pop("k_value", params.get("k", 1))
    return {"family": family, "policy": policy, "params": params, "k": k, "ratios": [1.0], "cell": f"{family}{params}"}


def test_plot_facets_instead_of_pooling_different_instances():
    from kvtheory.experiments.plot import facets

    records = [_record("cyclic", k=k, seed=s) for k in (2, 4) for s in (0, 1)]  # seeds pool, x = k
    records += [_record("imbalanced", k=2, B=b) for b in (16, 32)]  # B is not x: two panels
    records += [_record("batch", load=load, order=o, k_value=k) for load, k in ((0.5, 33), (1.0, 1)) for o in "ab"]
    panels = facets(records, "k")
    assert sorted(panels) == [
        "batch (order='a')",
        "batch (order='b')",  # load sets k one to one: shown on the x axis, not a panel
        "cyclic",
        "imbalanced (B=16)",
        "imbalanced (B=32)",
    ]
    assert len(panels["cyclic"]) == 4


def test_plot_names_an_unknown_family_and_a_file_that_holds_no_results(tmp_path):
    from kvtheory.experiments.plot import plot_results

    with pytest.raises(InputError, match="unknown family 'cyclik'; the results hold: cyclic"):
        plot_results([_record("cyclic", k=2)], tmp_path / "f.png", families=["cyclik"])
    workload = tmp_path / "w.jsonl"
    workload.write_text('{"tokens": [1, 2]}\n')
    assert main(["plot", str(workload), "-o", str(tmp_path / "f.png")]) == 2


FAILING_SPEC = """
policies = ["lru"]
budget = "k + L - 2"
[[grid]]
family = "cyclic"
params = { k = [1, 2], L = 4, n = 50 }
"""


def test_a_typo_in_a_sweep_expression_stops_it_before_any_cell_runs(tmp_path, capsys):
    spec = tmp_path / "typo.toml"
    spec.write_text(FAILING_SPEC.replace("k + L - 2", "k + LL - 1"))
    code, _, err = _cli(capsys, "sweep", spec, "-o", tmp_path / "out.jsonl")
    assert code == 2 and not (tmp_path / "out.jsonl").exists()
    assert err.count("\n") == 1 and "unknown name 'LL'" in err and err.count("budget expression") == 1


def test_failed_cells_are_not_done_a_rerun_tries_them_again(tmp_path, capsys):
    spec, out = tmp_path / "fail.toml", tmp_path / "out.jsonl"
    spec.write_text(FAILING_SPEC)  # k = 1: B = 3 < the 4-token queries, the cell fails
    _cli(capsys, "sweep", spec, "-o", out)
    first = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted("error" in record for record in first) == [False, True]
    code, stdout, _ = _cli(capsys, "sweep", spec, "-o", out)
    second = [json.loads(line) for line in out.read_text().splitlines()]
    assert "1 already in" in stdout and len(second) == 2  # the failed cell ran again, once
    assert [r for r in first if "error" not in r] == [r for r in second if "error" not in r]


@pytest.mark.parametrize(
    "command", [["sweep", "examples/sweeps/ratios.toml"], ["plot", "results.jsonl"], ["generate", "gsp"]]
)
@pytest.mark.parametrize("output,message", [("", "expected a file name, got an empty one"), (".", ". is a directory")])
def test_an_output_that_is_empty_or_a_directory_is_one_line_and_exit_2(capsys, command, output, message):
    with pytest.raises(SystemExit) as stopped:
        main([*command, "-o", output])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and f"argument -o/--output: {message}" in err


@pytest.mark.parametrize(("given", "kept"), [(None, "1"), ("3", "3")])
def test_the_console_script_keeps_numpys_blas_to_one_thread_unless_told(given, kept):
    """The launcher sets OPENBLAS_NUM_THREADS before NumPy loads (its idle threads spin a tenth of a second of CPU
    per process), and leaves a value the environment gives."""
    import os
    import subprocess
    import sys

    program = (
        "import os, sys\nimport kvtheory_launcher\nsys.argv = ['kvtheory', '--version']\n"
        "try:\n    kvtheory_launcher.main()\nexcept SystemExit:\n    pass\n"
        "import numpy\nprint(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == [kept, "True"]
