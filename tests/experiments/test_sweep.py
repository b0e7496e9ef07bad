"""Sweeps: the cell grid, one code path for the process pool and Dask, resuming after a kill, plots."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from kvtheory.cli import main
from kvtheory.errors import InputError
from kvtheory.experiments.grid import cell_id, evaluate, expand
from kvtheory.experiments.sweep import (
    completed_ids,
    read_results,
    run_cell,
    run_sweep,
    stability_rows,
)

# 5 k x 2 L x 2 n x 2 seeds x 5 policies = 200 small cells (one or two seconds on 2 processes; the kill
# test polls the output every 5 ms, so it lands well inside a run)
SPEC_200 = """
policies = ["lru", "token-lru", "rlt", "fifo", "random-leaf"]
policy_seeds = 3
seeds = 2
budget = "k + L - 1"

[[grid]]
family = "cyclic"
params = { k = [2, 3, 4, 5, 6], L = [2, 3], n = [40, 80] }
"""


def sorted_lines(path: Path) -> list[bytes]:
    return sorted(path.read_bytes().splitlines())


@pytest.fixture(scope="module")
def spec_200(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sweep") / "spec.toml"
    path.write_text(SPEC_200)
    return path


@pytest.fixture(scope="module")
def clean_run(spec_200, tmp_path_factory) -> Path:
    """The 200-cell sweep, run once from scratch on the local process pool."""
    out = tmp_path_factory.mktemp("clean") / "results.jsonl"
    summary = run_sweep(spec_200, out, executor="local", workers=2, progress=False)
    assert (summary.cells, summary.skipped, summary.ran, summary.errors) == (200, 0, 200, 0)
    return out


# -- the grid -------------------------------------------------------------------------------------------
def test_grid_axes_ids_and_placeholders():
    spec = {
        "policies": ["lru", "rlt"],
        "policy_seeds": 4,
        "grid": [
            {"family": "cyclic", "params": {"k": [2, 4], "L": 3, "n": 50}, "budget": "k + L - 1", "seeds": [0, 1]},
            {
                "family": "adaptive",
                "params": {"policy": "$policy", "k": 3},
                "budget": [6, 8],
                "policies": ["lru", "fifo"],
            },
            {"family": "gsp", "params": {"groups": 2, "prompts": 2, "lengths": [8, 16]}, "budget": "distinct // 2"},
            {"family": "gsp", "params": {"groups": 2, "prompts": 2, "lengths": [[8], [16]]}, "budget": 40},
        ],
    }
    cells = expand(spec)
    assert len(cells) == 2 * 2 * 2 + 2 * 2 + 2 + 2 * 2
    assert len({cell["id"] for cell in cells}) == len(cells)
    assert all(cell["id"] == cell_id({k: v for k, v in cell.items() if k != "id"}) for cell in cells)
    lru = [c for c in cells if c["policy"] == "lru"]
    rlt = [c for c in cells if c["policy"] == "rlt"]
    assert all(c["policy_seeds"] == [0] for c in lru) and all(c["policy_seeds"] == [0, 1, 2, 3] for c in rlt)
    adaptive = [c for c in cells if c["family"] == "adaptive"]
    assert {c["params"]["policy"] for c in adaptive} == {"lru", "fifo"}
    assert all(c["params"]["policy"] == c["policy"] for c in adaptive)
    # a flat list given to a list-typed parameter is one value; a list of lists is an axis
    gsp = [c["params"]["lengths"] for c in cells if c["family"] == "gsp"]
    assert gsp.count([8, 16]) == 2 and gsp.count([8]) == 2 and gsp.count([16]) == 2
    assert expand(spec) == cells  # the same spec, the same cells in the same order


def test_ids_do_not_depend_on_key_order_or_on_seeds_of_deterministic_policies():
    one = expand(
        {"budget": 7, "grid": [{"family": "cyclic", "params": {"k": 4, "L": 4}, "policies": "lru", "policy_seeds": 2}]}
    )
    two = expand(
        {
            "budget": 7,
            "grid": [{"family": "cyclic", "params": {"L": 4, "k": 4}, "policies": ["lru"], "policy_seeds": 9}],
        }
    )
    assert one[0]["id"] == two[0]["id"]


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"grid": [{"family": "nope", "budget": 4, "policies": ["lru"]}]}, "unknown family"),
        ({"grid": [{"family": "cyclic", "params": {"q": 1}, "budget": 4, "policies": ["lru"]}]}, "no parameter 'q'"),
        ({"grid": [{"family": "cyclic", "policies": ["lru"]}]}, "no budget"),
        ({"grid": [{"family": "cyclic", "budget": 4, "policies": ["xyz"]}]}, "unknown policy"),
        ({"grid": [{"family": "cyclic", "budget": "__import__('os')", "policies": ["lru"]}]}, "only numbers"),
        ({"grid": [{"family": "cyclic", "budget": 4, "policies": ["lru"], "sedes": 1}]}, "unknown key"),
        ({"budget": 4, "policies": ["lru"]}, "no \\[\\[grid\\]\\]"),
        ({"grid": [{"family": "cyclic", "budget": 4, "policies": ["lru"], "seeds": 0}]}, "at least one seed"),
    ],
)
def test_bad_specs_are_input_errors(spec, message):
    with pytest.raises(InputError, match=message):
        expand(spec)


def test_expressions():
    assert evaluate("k + L - 1", {"k": 4, "L": 8}) == 11
    assert evaluate("ceil(0.3 * distinct)", {"distinct": 10}) == 3
    assert evaluate("max(L_max, distinct // 4) + batch", {"L_max": 9, "distinct": 100, "batch": 2}) == 27
    with pytest.raises(InputError, match="unknown name 'x'"):
        evaluate("x + 1", {"k": 1})
    with pytest.raises(InputError, match="by zero"):
        evaluate("1 // k", {"k": 0})


def test_run_cell_record_and_error_record():
    spec = {
        "policy_seeds": 5,
        "grid": [
            {"family": "yao", "params": {"k": 3, "L": 2, "n": 300}, "budget": ["k + L - 1", 1], "policies": ["rlt"]}
        ],
    }
    good, bad = expand(spec)
    record = run_cell(good)
    assert record["cell"] == good["id"] and record["budget"] == 4 and record["k"] == 3
    assert len(record["ratios"]) == 5 and record["seeds"] == [0, 1, 2, 3, 4]
    low, high = record["ratio_ci95"]
    assert low <= record["ratio_mean"] <= high
    assert record["worst_ratio"] == max(record["ratios"]) == record["ratio_quantiles"][-1]
    assert record["ratios"][record["seeds"].index(record["worst_seed"])] == record["worst_ratio"]
    assert record["randomized"] and record["H_k"] == pytest.approx(1 + 1 / 2 + 1 / 3)
    failed = run_cell(bad)
    # built for B = 1 (an integer budget is the family's B), yao refuses: its queries have L = 2 tokens
    assert "B=1 must be >= L=2" in failed["error"] and failed["cell"] == bad["id"]
    rows = stability_rows([record, failed])
    assert rows[0]["worst_ratio"] == record["worst_ratio"] and rows[0]["worst_seed"] == record["worst_seed"]


def test_a_long_sweep_runs_every_cell_on_the_compiled_cores_with_the_same_record(monkeypatch):
    """The engine is the sweep's (dispatch.job_backend): the same short cell runs per edge alone and on the
    compiled core as one of a sweep whose cells serve CORE_MIN_QUERIES queries together; the records agree."""
    from kvtheory.policies import RandomizedLeafToken, dispatch

    grid = {"family": "yao", "params": {"k": 3, "L": 2, "n": 300}, "budget": "k + L - 1", "policies": ["rlt"]}
    spec = {"policy_seeds": 3, "grid": [grid]}
    (cell,) = expand(spec)
    cores = []
    real = dispatch.compiled_object
    monkeypatch.setattr(
        dispatch,
        "compiled_object",
        lambda cls, *a, **k: (cls is RandomizedLeafToken and cores.append(1)) or real(cls, *a, **k),
    )
    alone = run_cell(cell)
    assert cores == []  # 3 runs of 300 queries: per edge
    cells = -(-dispatch.CORE_MIN_QUERIES // (3 * 300))  # the fewest such cells that reach the threshold
    together = run_cell(cell, job_cells=cells)
    assert cores == [1, 1, 1] and together == alone
    assert run_cell(cell, job_cells=cells - 1) == alone and cores == [1, 1, 1]


# -- one code path: local pool and Dask, identical results -------------------------------------------
@pytest.mark.slow
def test_local_and_dask_give_identical_results(spec_200, clean_run, tmp_path):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "dask.jsonl"
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        summary = run_sweep(spec_200, out, client=client, progress=False)
    assert (summary.cells, summary.ran, summary.errors) == (200, 200, 0)
    assert sorted_lines(out) == sorted_lines(clean_run)  # the same bytes, line for line


def test_rerun_skips_everything_and_a_sequential_loop_agrees(spec_200, clean_run, tmp_path):
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(clean_run.read_bytes())
    summary = run_sweep(spec_200, copy, workers=2, progress=False)
    assert (summary.skipped, summary.ran) == (200, 0)
    assert copy.read_bytes() == clean_run.read_bytes()
    from kvtheory.experiments.grid import load_spec

    by_id = {orjson.loads(line)["cell"]: line for line in sorted_lines(clean_run)}
    for cell in expand(load_spec(spec_200))[::10]:  # a plain loop in this process gives the same lines
        assert orjson.dumps(run_cell(cell)) == by_id[cell["id"]]


def test_torn_last_line_is_cut_and_rerun(spec_200, clean_run, tmp_path):
    lines = clean_run.read_bytes().splitlines(keepends=True)
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b"".join(lines[:50]) + lines[50][:17])
    assert len(completed_ids(torn)) == 50 and len(read_results(torn)) == 50  # readers leave it out
    assert torn.read_bytes().endswith(lines[50][:17])  # and do not write
    summary = run_sweep(spec_200, torn, workers=2, progress=False)  # the writer cuts it, under its lock
    assert (summary.skipped, summary.ran) == (50, 150)
    assert sorted_lines(torn) == sorted_lines(clean_run)


@pytest.mark.slow
def test_resume_after_kill_loses_nothing_and_recomputes_nothing(spec_200, clean_run, tmp_path):
    """Kill a running `kvtheory sweep` (SIGKILL to its whole process group) once some lines are
    written; the rerun runs exactly the missing cells and the file equals a clean run."""
    spec = spec_200
    out = tmp_path / "killed.jsonl"
    command = [
        sys.executable,
        "-c",
        "import sys; from kvtheory.cli import main; sys.exit(main(sys.argv[1:]))",
        "sweep",
        str(spec),
        "-o",
        str(out),
        "--workers",
        "2",
        "--no-progress",
    ]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if out.exists() and out.read_bytes().count(b"\n") >= 10:
                break
            time.sleep(0.005)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    before = completed_ids(out)
    assert 10 <= len(before) < 200
    kept = out.read_bytes()
    summary = run_sweep(spec, out, workers=2, progress=False)
    assert (summary.skipped, summary.ran) == (len(before), 200 - len(before))  # nothing recomputed
    assert out.read_bytes().startswith(kept)  # the lines written before the kill stay as they were
    records = read_results(out)
    assert len(records) == 200 and len({r["cell"] for r in records}) == 200  # nothing lost, nothing twice
    assert sorted_lines(out) == sorted_lines(clean_run)


# -- command line -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sweep_and_plot_cli(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'policies = ["lru", "token-lru", "rlt"]\npolicy_seeds = 3\n'
        '[[grid]]\nfamily = "cyclic"\nparams = { k = [2, 4, 8], L = 3, n = 200 }\nbudget = "k + L - 1"\n'
        '[[grid]]\nfamily = "imbalanced"\nparams = { B = [8, 16, 32], k = 2, n = 60 }\nbudget = "B"\n'
    )
    out = tmp_path / "r.jsonl"
    assert main(["sweep", str(spec), "-o", str(out), "--dry-run"]) == 0
    assert "18 cells, 0 already" in capsys.readouterr().out
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "1"]) == 0
    printed = capsys.readouterr()
    assert "18 run" in printed.out and "seed stability" in printed.out and printed.err == ""  # no bar off a tty
    assert len(read_results(out)) == 18
    figure = tmp_path / "fig.png"
    assert main(["plot", str(out), "-o", str(figure), "--family", "cyclic"]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        main(
            [
                "plot",
                str(out),
                "-o",
                str(tmp_path / "b.png"),
                "--x",
                "B",
                "--family",
                "imbalanced",
                "--metric",
                "steady",
            ]
        )
        == 0
    )
    assert "1 panel(s) (imbalanced)" in capsys.readouterr().out
    assert main(["plot", str(out), "-o", str(tmp_path / "c.png"), "--family", "nope"]) == 2
    assert main(["sweep", str(tmp_path / "missing.toml"), "-o", str(out)]) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text('budget = 1\n[[grid]]\nfamily = "cyclic"\npolicies = ["lru"]\n')
    assert main(["sweep", str(bad), "-o", str(tmp_path / "bad.jsonl")]) == 1  # every cell fails: B < L
    assert "cell(s) failed" in capsys.readouterr().err


def test_example_specs_expand():
    root = Path(__file__).resolve().parents[2] / "examples" / "sweeps"
    from kvtheory.experiments.grid import load_spec

    counts = {path.name: len(expand(load_spec(path), where=str(path))) for path in root.glob("*.toml")}
    assert counts["small.toml"] < 50 and counts["ratios.toml"] >= 200
