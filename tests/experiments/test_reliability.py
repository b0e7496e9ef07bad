"""Concurrent use and faults, with real processes: two sweeps on one output, a Dask worker killed mid-sweep,
and SIGINT / SIGTERM during a sweep, a MIP (``opt``) and ``check``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from kvtheory.experiments.sweep import read_results, run_sweep

CLI = [sys.executable, "-c", "import sys; from kvtheory.cli import main; sys.exit(main(sys.argv[1:]))"]

# 6 k x 2 L x 2 n x 2 seeds x 5 policies = 240 small cells: a few seconds on two processes
SPEC = """
policies = ["lru", "token-lru", "rlt", "fifo", "random-leaf"]
policy_seeds = 3
seeds = 2
budget = "k + L - 1"

[[grid]]
family = "cyclic"
params = { k = [2, 3, 4, 5, 6, 7], L = [2, 3], n = [200, 400] }
"""
CELLS = 240


def sorted_lines(path: Path) -> list[bytes]:
    return sorted(path.read_bytes().splitlines())


def wait_for(condition, timeout: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("reliability") / "spec.toml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def clean(spec, tmp_path_factory) -> Path:
    """The sweep run once, undisturbed, on the local process pool."""
    out = tmp_path_factory.mktemp("clean") / "results.jsonl"
    summary = run_sweep(spec, out, workers=2, progress=False)
    assert (summary.cells, summary.ran, summary.errors) == (CELLS, CELLS, 0)
    return out


def sweep_command(spec: Path, out: Path, workers: int = 2) -> list[str]:
    return [*CLI, "sweep", str(spec), "-o", str(out), "--workers", str(workers), "--no-progress"]


# -- two writers --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_sweep_on_the_same_output_is_refused_and_each_cell_is_written_once(spec, clean, tmp_path):
    out = tmp_path / "shared.jsonl"
    first = subprocess.Popen(sweep_command(spec, out, workers=1), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: line_count(out) >= 5 or first.poll() is not None, what="the first sweep's lines")
        assert first.poll() is None, "the first sweep ended before the second could start"
        # the first sweep is stopped (alive, holding the output) while the second runs: with the compiled
        # cores its 240 cells can take less time than the second process needs to start
        stopped = psutil.Process(first.pid)
        stopped.suspend()
        try:
            second = subprocess.run(sweep_command(spec, out), capture_output=True, text=True, timeout=120)
        finally:
            stopped.resume()
        assert first.poll() is None, "the first sweep ended while the second ran: the test proves nothing"
    finally:
        out_first, err_first = first.communicate(timeout=300)
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr.count("\n") == 1 and f"is being written by pid {first.pid} on " in second.stderr
    assert first.returncode == 0, err_first
    records = read_results(out)  # would reject a cell written twice
    assert len(records) == CELLS and sorted_lines(out) == sorted_lines(clean)
    again = subprocess.run(sweep_command(spec, out), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and f"{CELLS} already in" in again.stdout and " 0 run in " in again.stdout
    assert sorted_lines(out) == sorted_lines(clean)


# -- a Dask worker killed mid-sweep -------------------------------------------------------------------
@pytest.mark.slow
def test_a_dask_worker_killed_mid_sweep_loses_no_cell(spec, clean, tmp_path):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "dask.jsonl"
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        victim = sorted(client.run(os.getpid).values())[0]
        lines_at_kill = []

        def kill_once_lines_appear() -> None:
            wait_for(lambda: line_count(out) >= 20, what="20 lines before the kill")
            lines_at_kill.append(line_count(out))
            os.kill(victim, signal.SIGKILL)

        killer = threading.Thread(target=kill_once_lines_appear, daemon=True)
        killer.start()
        summary = run_sweep(spec, out, client=client, progress=False)
        killer.join(timeout=5)
    assert lines_at_kill and lines_at_kill[0] < CELLS, "the sweep finished before the worker was killed"
    assert not psutil.pid_exists(victim) or psutil.Process(victim).status() == psutil.STATUS_ZOMBIE
    assert (summary.cells, summary.ran, summary.errors) == (CELLS, CELLS, 0)
    assert sorted_lines(out) == sorted_lines(clean)  # every record, once, identical to the undisturbed run


# -- SIGINT / SIGTERM during a sweep ------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("signum, whole_group", [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_a_signalled_sweep_exits_130_with_whole_lines_and_a_rerun_completes(spec, clean, tmp_path, signum, whole_group):
    """SIGTERM to the sweep alone (as a scheduler sends it), SIGINT to its whole group (Ctrl-C)."""
    out = tmp_path / "signalled.jsonl"
    process = subprocess.Popen(
        sweep_command(spec, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    wait_for(lambda: line_count(out) >= 10 or process.poll() is not None, what="10 lines")
    assert process.poll() is None, "the sweep finished before it could be signalled"
    if whole_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert err.decode().splitlines()[-1] == "kvtheory sweep: interrupted"
    data = out.read_bytes()
    assert data.endswith(b"\n")  # whole lines only
    done = len(read_results(out))
    assert 10 <= done < CELLS
    summary = run_sweep(spec, out, workers=2, progress=False)
    assert (summary.skipped, summary.ran) == (done, CELLS - done)
    assert sorted_lines(out) == sorted_lines(clean)


# -- SIGINT / SIGTERM during a MIP (opt) --------------------------------------------------------------
@pytest.fixture(scope="module")
def hard_joint(tmp_path_factory) -> Path:
    """64 random-tree queries on two workers: neither CBC nor HiGHS proves the optimum within 40 s."""
    path = tmp_path_factory.mktemp("mip") / "tree.jsonl"
    argv = ["generate", "random-tree", "--param", "queries=64", "--param", "max_length=12", "--param", "alphabet=3"]
    subprocess.run([*CLI, *argv, "-o", str(path)], check=True, capture_output=True)
    return path


def opt_command(workload: Path, solver: str) -> list[str]:
    return [
        *CLI,
        "opt",
        "--workload",
        str(workload),
        "--workers",
        "2",
        "--budget",
        "24",
        "--a-miss",
        "1",
        "--a-cached",
        "0.1",
        "--solver",
        solver,
        "--method",
        "mip",
        "--time-limit",
        "300",
        "--json",
    ]


def _solver_processes(tmp: Path) -> list[psutil.Process]:
    """CBC processes working on files of this test (their model file lies in its TMPDIR)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        if (process.info["name"] or "").startswith("cbc") and str(tmp) in " ".join(process.info["cmdline"] or ()):
            found.append(process)
    return found


def _mip_cpu_seconds(pid: int) -> float:
    """CPU seconds of the CBC branch and bound that process ``pid`` runs (0 before it starts)."""
    try:
        for child in psutil.Process(pid).children():
            if child.name().startswith("cbc") and "-solve" in child.cmdline():
                return sum(child.cpu_times()[:2])
    except psutil.Error:
        pass
    return 0.0


def _check_interrupted(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.decode().splitlines()[-1] == "kvtheory opt: interrupted; the result above is what the solver had"
    record = json.loads(out)
    assert record["status"] == "interrupted"
    return record


@pytest.mark.slow
@pytest.mark.parametrize("signum, whole_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_signal_during_the_cbc_mip_prints_incumbent_and_bound_and_exits_130(
    hard_joint, tmp_path, signum, whole_group
):
    """Ctrl-C (SIGINT to the group, CBC included) or SIGTERM to opt alone, once CBC has an incumbent."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    started = time.monotonic()
    process = subprocess.Popen(
        opt_command(hard_joint, "mip"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    # CBC's log is block-buffered, so watch the branch-and-bound process itself (``-solve``; the LP
    # relaxation runs first with ``-initialSolve``): its feasibility pump finds an incumbent within its
    # first second of CPU, so 3 s of CPU leave a wide margin
    wait_for(lambda: process.poll() is not None or _mip_cpu_seconds(process.pid) > 3.0, what="CBC's search")
    assert process.poll() is None, process.communicate()
    if whole_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    record = _check_interrupted(process)
    assert time.monotonic() - started < 120  # stopped, not run to the 300 s limit
    assert record["makespan"] is not None and record["bound"] is not None
    assert record["bound"] <= record["makespan"] and record["gap"] > 0
    assert len(record["routing"]) == 64
    assert not _solver_processes(tmp_path), "a CBC process was left running"


@pytest.mark.slow
def test_a_signal_during_the_highs_mip_stops_it_with_its_incumbent(hard_joint, tmp_path):
    pytest.importorskip("highspy")
    process = subprocess.Popen(opt_command(hard_joint, "highs"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watched = psutil.Process(process.pid)
    # HiGHS runs inside the process: wait until it has worked a while (imports and the model take about
    # two seconds of CPU; the branch and bound then runs for minutes)
    wait_for(lambda: process.poll() is not None or sum(watched.cpu_times()[:2]) > 6.0, what="HiGHS at work")
    assert process.poll() is None, process.communicate()
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    record = _check_interrupted(process)
    assert time.monotonic() - sent < 30
    assert record["bound"] is not None and record["bound"] <= record["makespan"]


# -- SIGTERM during check -------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_terminated_check_prints_the_verdicts_so_far_and_exits_130(tmp_path):
    command = [*CLI, "check", "C1", "C5", "--instances", "30", "--no-algebra", "--out", str(tmp_path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = process.stderr.readline()
    assert first.startswith("  C1: "), first
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert err.splitlines()[-1] == "kvtheory check: interrupted; not checked: C5"
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["claim", "status"] and lines[1].split()[0] == "C1"  # the table so far
    assert "C5" not in out and "checked 1 claims" in out


def test_the_exact_optimum_stopped_before_its_mip_keeps_fif_as_incumbent(monkeypatch):
    """Inside ``stoppable`` (as ``kvtheory opt`` runs), Ctrl-C while the flow bound is computed returns
    FIF's misses with the distinct-token bound, status interrupted; outside, KeyboardInterrupt."""
    from kvtheory import Workload
    from kvtheory.optimum import exact, interrupt

    workload = Workload.from_token_lists([[2], [3], [1], [4, 1], [2, 1], [0], [3, 4], [3]])

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(exact, "weighted_paging_bound", interrupted)
    with interrupt.stoppable():
        try:
            result = exact.solve_optimum(workload, 4, batch=2)
        except KeyboardInterrupt:  # escaping, it would end the whole test session instead of failing here
            pytest.fail("KeyboardInterrupt escaped a stoppable scope")
    assert (result.status, result.misses, result.fif_misses) == ("interrupted", 10, 10)
    assert result.bound == workload.trie.distinct_tokens <= 9  # OPT is 9 (the docstring's instance)
    with pytest.raises(KeyboardInterrupt):
        exact.solve_optimum(workload, 4, batch=2)


def test_a_workload_file_is_replaced_whole_so_a_reader_never_sees_half_of_one(tmp_path):
    """Two counterexamples saved to one path (two `kvtheory check` runs): readers see one or the other."""
    from kvtheory import Workload, read_workload, write_workload

    path = tmp_path / "C3-token-lru.jsonl"
    versions = [Workload.from_token_lists([[i, i + 1, i + 2]] * 1000) for i in (1, 7)]
    write_workload(versions[0], path)
    wanted = [v.token_lists() for v in versions]
    stop = threading.Event()

    def write_again_and_again() -> None:
        n = 0
        while not stop.is_set():
            write_workload(versions[n % 2], path)
            n += 1

    writer = threading.Thread(target=write_again_and_again)
    writer.start()
    try:
        for _ in range(30):
            assert read_workload(path).token_lists() in wanted
    finally:
        stop.set()
        writer.join()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind


def test_an_interrupt_that_python_drops_in_a_gc_callback_is_delivered_again():
    """Python drops an exception raised in a garbage-collector callback (where hypothesis, which
    ``kvtheory check`` runs, has one), and a Ctrl-C or SIGTERM landing there was lost: the command
    line's hook sends it again, so it still stops the command."""
    import gc

    from kvtheory.cli import _interrupts

    def lands_in_a_gc_callback(phase, info):
        gc.callbacks.remove(lands_in_a_gc_callback)
        raise KeyboardInterrupt  # what a signal handler does when the signal arrives there

    with pytest.raises(KeyboardInterrupt), _interrupts():
        gc.callbacks.append(lands_in_a_gc_callback)
        gc.collect()  # the KeyboardInterrupt is dropped here
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # and delivered again
            time.sleep(0.001)
    assert lands_in_a_gc_callback not in gc.callbacks
