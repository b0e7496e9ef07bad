"""The command line: JSON outputs, and exit status 2 with one line on stderr for every kind of bad input."""

import json
import subprocess
import sys

import pytest

from kvtheory.cli import main


@pytest.fixture
def workload_file(tmp_path):
    path = tmp_path / "w.jsonl"
    lines = [[1, 2, 3], [1, 2, 4], [5, 6], [1, 2, 3], [5, 7], [1, 2, 4]]
    path.write_text("\n".join(json.dumps({"tokens": t}) for t in lines) + "\n")
    return path


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_evict_prints_the_contract_keys(capsys, workload_file):
    code, out, _ = _run(capsys, "evict", "--workload", workload_file, "--budget", 4, "--policy", "lru", "--json")
    record = json.loads(out)
    assert code == 0
    assert {"policy", "budget", "queries", "tokens", "hits", "misses", "hit_rate"} <= set(record)
    assert record["hits"] + record["misses"] == record["tokens"] == 16


def test_evict_with_seeds_reports_mean_std_and_interval(capsys, workload_file):
    code, out, _ = _run(
        capsys, "evict", "--workload", workload_file, "--budget", 4, "--policy", "rlt", "--seeds", 8, "--json"
    )
    record = json.loads(out)
    lo, hi = record["misses_ci95"]
    assert code == 0 and lo <= record["misses_mean"] <= hi and record["misses_std"] >= 0
    assert len(record["misses_per_seed"]) == 8


def test_opt_and_ratio(capsys, workload_file):
    code, out, _ = _run(capsys, "opt", "--workload", workload_file, "--budget", 4, "--solver", "fif", "--json")
    opt = json.loads(out)
    assert code == 0 and opt["solver"] == "fif" and opt["status"] == "optimal"
    code, out, _ = _run(capsys, "ratio", "--workload", workload_file, "--budget", 4, "--policy", "lru", "--json")
    ratio = json.loads(out)
    lru = main(["evict", "--workload", str(workload_file), "--budget", "4", "--policy", "lru", "--json"])
    lru_misses = json.loads(capsys.readouterr().out)["misses"]
    assert code == lru == 0
    assert ratio["opt_misses"] == opt["misses"]
    assert ratio["ratio_mean"] == pytest.approx(lru_misses / opt["misses"])


def test_generate_writes_a_readable_workload(capsys, tmp_path):
    path = tmp_path / "p.jsonl"
    code, out, _ = _run(capsys, "generate", "paging", "--param", "pages=4", "--param", "requests=30", "-o", path)
    assert code == 0 and len(path.read_text().splitlines()) == 30


def _bad(tmp_path, text):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "make_argv, needle",
    [
        (
            lambda t, w: ["evict", "--workload", _bad(t, '{"tokens": [1,'), "--budget", 4, "--policy", "lru"],
            "bad.jsonl:1",
        ),
        (lambda t, w: ["evict", "--workload", _bad(t, ""), "--budget", 4, "--policy", "lru"], "empty workload"),
        (lambda t, w: ["evict", "--workload", _bad(t, '{"tokens": []}'), "--budget", 4, "--policy", "lru"], "empty"),
        (
            lambda t, w: ["evict", "--workload", _bad(t, '{"tokens": [1, "x"]}'), "--budget", 4, "--policy", "lru"],
            "not an integer",
        ),
        (lambda t, w: ["evict", "--workload", w, "--budget", 2, "--policy", "lru"], "more than the budget"),
        (lambda t, w: ["evict", "--workload", w, "--budget", 5, "--batch", 3, "--policy", "lru"], "resident at once"),
        (lambda t, w: ["evict", "--workload", w, "--budget", 4, "--policy", "belady"], "unknown policy"),
        (lambda t, w: ["opt", "--workload", w, "--budget", 4, "--solver", "gurobi"], "unknown solver"),
        (lambda t, w: ["evict", "--workload", w, "--budget", 0, "--policy", "lru"], "--budget: must be a positive"),
        (lambda t, w: ["opt", "--workload", w, "--budget", -3], "--budget: must be a positive"),
        (lambda t, w: ["evict", "--workload", t / "absent.jsonl", "--budget", 4, "--policy", "lru"], "cannot read"),
        (lambda t, w: ["evict", "--workload", w, "--policy", "lru"], "--budget"),
        (lambda t, w: ["ratio", "--adversary", "nonesuch", "--budget", 4, "--policy", "lru"], "unknown generator"),
        (lambda t, w: ["generate", "paging", "--param", "pages=many", "-o", t / "x.jsonl"], "pages='many'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, workload_file, make_argv, needle):
    argv = [str(a) for a in make_argv(tmp_path, workload_file)]
    try:
        code = main(argv)
    except SystemExit as exited:  # argparse's own usage errors
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_the_installed_script_exits_2_without_traceback(workload_file):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kvtheory",
            "evict",
            "--workload",
            str(workload_file),
            "--budget",
            "2",
            "--policy",
            "lru",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "more than the budget" in result.stderr


def test_opt_and_ratio_with_several_workers(capsys, workload_file):
    cluster = ["--workers", 2, "--budget", 4, "--a-miss", 1, "--a-cached", 0.25]
    code, out, _ = _run(capsys, "opt", "--workload", workload_file, *cluster, "--json")
    optimum = json.loads(out)
    assert code == 0 and optimum["status"] == "optimal"
    assert max(optimum["lower_bounds"]["work_over_m"], optimum["lower_bounds"]["largest_query"]) <= optimum["makespan"]
    code, out, _ = _run(capsys, "ratio", "--workload", workload_file, *cluster, "--router", "least-load", "--json")
    ratio = json.loads(out)
    assert code == 0 and ratio["reference_kind"] == "optimum"
    assert ratio["reference"] == pytest.approx(optimum["makespan"])
    assert ratio["ratio"] == pytest.approx(ratio["makespan"] / ratio["reference"]) and ratio["ratio"] >= 1 - 1e-9


@pytest.mark.slow
def test_demo_prints_both_tables_and_writes_a_png(capsys, tmp_path):
    plot = tmp_path / "demo.png"
    code, out, _ = _run(capsys, "demo", "--plot", plot, "--seeds", 2)
    assert code == 0
    assert out.count("fif (OPT)") == 2 and "imbalanced" in out
    assert plot.read_bytes().startswith(b"\x89PNG")
