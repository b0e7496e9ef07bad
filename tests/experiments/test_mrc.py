"""Miss-ratio curves (docs/formats.md §Miss-ratio curves): every value is the single evict/opt run's, and OPT's
curve never decreases with the budget."""

import orjson
import pytest
from cli_runner import run_cli

from kvtheory.experiments.mrc import budget_range, miss_ratio_curve
from kvtheory.model.traces import read_workload, write_mooncake
from kvtheory.workloads import generate

PARAMS = {"conversations": "10", "turns": "1,3,5", "block_size": "8", "system_len": "20", "user_len": "12"}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("mrc") / "chat.jsonl"
    write_mooncake(generate("chat-blocks", PARAMS, seed=2), path)
    return path


def test_mrc_values_equal_single_evict_and_opt_runs(capsys, trace):
    workload = read_workload(trace, "mooncake", 8)
    low = workload.max_length
    budgets = sorted({low, 2 * low, 4 * low, workload.trie.distinct_tokens})
    assert len(budgets) == 4
    code, out, _ = run_cli(
        capsys,
        "mrc", "--workload", trace, "--hash-block-size", 8, "--budgets", ",".join(map(str, budgets)),
        "--policies", "lru,rlt,fif", "--seeds", 3, "--workers", 2, "--json",
    )  # fmt: skip
    assert code == 0
    result = orjson.loads(out)
    assert result["budgets"] == budgets and set(result["hit_rate"]) == {"lru", "rlt", "fif"}
    for i, budget in enumerate(budgets):
        common = ["--workload", trace, "--hash-block-size", 8, "--budget", budget, "--json"]
        _, out, _ = run_cli(capsys, "evict", *common, "--policy", "lru")
        single = orjson.loads(out)
        assert result["misses"]["lru"][i] == single["misses"] and result["hit_rate"]["lru"][i] == single["hit_rate"]
        _, out, _ = run_cli(capsys, "evict", *common, "--policy", "rlt", "--seeds", 3)
        assert result["misses"]["rlt"][i] == orjson.loads(out)["misses_mean"]
        _, out, _ = run_cli(capsys, "opt", *common)
        single = orjson.loads(out)
        assert result["misses"]["fif"][i] == single["misses"] and result["hit_rate"]["fif"][i] == single["hit_rate"]
    assert result["opt_status"] == ["optimal"] * len(budgets)
    assert result["misses"]["fif"][-1] == workload.trie.distinct_tokens  # everything fits: compulsory misses only


def test_at_batch_two_opt_is_the_exact_solver(trace):
    workload = read_workload(trace, "mooncake", 8)
    from kvtheory.optimum.exact import solve_optimum

    budgets = [2 * workload.max_length, 3 * workload.max_length]
    result = miss_ratio_curve(workload, budgets, ["fif", "token-lru"], batch=2, workers=1)
    for i, budget in enumerate(budgets):
        exact = solve_optimum(workload, budget, batch=2)
        assert (result["misses"]["fif"][i], result["opt_status"][i]) == (exact.misses, exact.status)


def test_opt_curve_never_decreases_with_the_budget(trace):
    workload = read_workload(trace, "mooncake", 8)
    budgets = budget_range(f"{workload.max_length}:{workload.trie.distinct_tokens}:12")
    result = miss_ratio_curve(workload, budgets, ["fif", "lru"], workers=2)
    rates = result["hit_rate"]["fif"]
    assert len(rates) == len(budgets) >= 10
    assert all(a <= b for a, b in zip(rates, rates[1:]))
    assert all(opt >= lru for opt, lru in zip(rates, result["hit_rate"]["lru"]))


def test_mrc_draws_a_plot(capsys, trace, tmp_path):
    figure = tmp_path / "mrc.png"
    code, _, _ = run_cli(
        capsys, "mrc", "--workload", trace, "--hash-block-size", 8, "--budget-range", "2000:8000:3",
        "--policies", "lru,fif", "--workers", 1, "--plot", figure,
    )  # fmt: skip
    assert code == 0 and figure.stat().st_size > 1000


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--budgets", "1"], "more than the budget B = 1"),  # with 2000 beside it, B = 1 is reported infeasible
        (["--budgets", "2000,x"], "--budgets expects integers"),
        (["--budget-range", "10:5:3"], "LO <= HI"),
        (["--budgets", "2000", "--format", "parquet"], "invalid choice: 'parquet'"),
        (["--budgets", "2000", "--policies", "lru,nope"], "nope"),
    ],
)
def test_mrc_bad_input_is_one_line_and_exit_2(capsys, trace, argv, message):
    if "--policies" not in argv:
        argv = [*argv, "--policies", "lru"]
    code, out, err = run_cli(capsys, "mrc", "--workload", trace, "--hash-block-size", 8, *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not out


@pytest.mark.slow
def test_dask_and_the_process_pool_give_the_same_curve(trace):
    pytest.importorskip("distributed")
    workload = read_workload(trace, "mooncake", 8)
    budgets = [workload.max_length, 2 * workload.max_length]
    local = miss_ratio_curve(workload, budgets, ["lru", "rlt", "fif"], seeds=2, workers=2)
    dask = miss_ratio_curve(workload, budgets, ["lru", "rlt", "fif"], seeds=2, executor="dask", workers=2)
    assert dask == local


def test_a_bad_trace_line_is_one_line_and_exit_2_on_every_command(capsys, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"timestamp": 5, "input_length": 3, "output_length": 0, "hash_ids": [1]}\n'
                    '{"timestamp": 4, "input_length": 3, "output_length": 0, "hash_ids": [1]}\n')  # fmt: skip
    for argv in (
        ["evict", "--policy", "lru", "--budget", 10],
        ["opt", "--budget", 10],
        ["ratio", "--policy", "lru", "--budget", 10],
        ["mrc", "--policies", "lru", "--budgets", 10],
    ):
        code, out, err = run_cli(capsys, *argv, "--workload", path)
        assert code == 2 and not out and err.count("\n") == 1, argv
        assert f"{path}:2: timestamp 4 is before the previous line's 5" in err


def test_the_engine_is_chosen_for_the_block_runs_work(monkeypatch, tmp_path):
    """numba is loaded for a curve by the work its engines step through: the block-level workload's queries and
    tokens (hash blocks of 2^20 tokens: 94M tokens, but 90 blocks), once per per-budget run and once for a one-pass
    traversal (lru on queries that are identical or disjoint), so this curve runs on the per-edge engines."""
    import kvtheory.experiments.mrc as mrc

    h = 1 << 20
    query = {"timestamp": 0, "input_length": 3 * h, "output_length": 0}
    lines = [{**query, "hash_ids": [3 * (j % 5) + i for i in range(3)]} for j in range(30)]
    path = tmp_path / "big-blocks.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    workload = read_workload(path, "mooncake", h)
    sizes = []
    real = mrc.job_backend
    monkeypatch.setattr(mrc, "job_backend", lambda *args: sizes.append(args) or real(*args))
    budgets = [3 * h, 6 * h]
    curve = miss_ratio_curve(workload, budgets, ["lru", "fif"], block_size=h)
    assert curve["method"] == {"lru": "one-pass", "fif": "per-budget"}
    assert sizes == [("auto", (1 + 2) * 30, (1 + 2) * 90)] and real(*sizes[0]) == "python"
    per_budget = miss_ratio_curve(workload, budgets, ["lru", "fif"], block_size=h, method="per-budget")
    assert curve["misses"] == per_budget["misses"]


@pytest.mark.parametrize("progress", [True, False])
def test_the_progress_bar_is_drawn_when_asked_only(capsys, trace, progress):
    workload = read_workload(trace, "mooncake", 8)
    miss_ratio_curve(workload, [workload.max_length, 2 * workload.max_length], ["fifo"], progress=progress)
    err = capsys.readouterr().err
    assert ("2/2" in err) is progress


def _pid_and_length(shared) -> tuple[int, int]:
    import os

    from kvtheory.experiments.executors import resolve

    return os.getpid(), len(resolve(shared))


@pytest.mark.skipif(__import__("sys").platform != "linux", reason="the local pool forks on Linux only")
def test_a_local_pool_shares_an_object_with_its_forked_workers_without_sending_it():
    """Shared before the first submit: the cells get a small stand-in (pickled: bytes, not the object) and the
    workers, forked after, resolve it to the object; shared after it: the object itself. Closing forgets it."""
    import pickle

    from kvtheory.experiments import executors

    runner = executors.LocalExecutor(2)
    big = list(range(100_000))
    try:
        stand_in = runner.share(big)
        assert isinstance(stand_in, executors.SharedObject) and len(pickle.dumps(stand_in)) < 200
        results = [runner.submit(_pid_and_length, stand_in, f"cell-{i}").result() for i in range(4)]
        assert {length for _, length in results} == {100_000}
        assert {pid for pid, _ in results} != {__import__("os").getpid()}
        assert runner.share(big) is big  # the workers have started: they would not see it
    finally:
        runner.close()
    assert stand_in.key not in executors._SHARED


def test_mrc_takes_a_pool_by_default_only_for_runs_long_enough(monkeypatch, trace):
    """workers=None: the per-budget runs go to a pool of every CPU when the curve's runs take the compiled engines
    (here forced by a lower threshold), else stay in this process; the curves are the same either way."""
    from kvtheory.experiments import mrc
    from kvtheory.policies import dispatch

    made = []
    real = mrc.make_executor
    monkeypatch.setattr(mrc, "make_executor", lambda *a, **k: made.append(k) or real(*a, **k))
    monkeypatch.setattr(mrc, "default_workers", lambda: 2)
    workload = read_workload(trace, "mooncake", 8)
    budgets = [workload.max_length, 2 * workload.max_length]
    in_process = miss_ratio_curve(workload, budgets, ["lru", "fif"])
    assert made == []
    monkeypatch.setattr(dispatch, "CORE_MIN_QUERIES", 1)
    pooled = miss_ratio_curve(workload, budgets, ["lru", "fif"])
    assert made == [{"workers": 2}]  # every CPU (here patched to two)
    assert pooled == in_process
