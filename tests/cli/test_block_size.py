"""``--block-size b`` (the cache's block size, docs/model.md §Blocks) on evict, opt, ratio and mrc, beside
``--hash-block-size`` (how a block trace is read): the values are the Python runs', bad input is one line."""

from __future__ import annotations

import orjson
import pytest
from cli_runner import run_cli

from kvtheory import run_fif, run_policy
from kvtheory.model.traces import read_workload, write_mooncake
from kvtheory.workloads import generate

PARAMS = {"conversations": "10", "turns": "1,3,5", "block_size": "8", "system_len": "20", "user_len": "12"}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("blocks") / "chat.jsonl"
    write_mooncake(generate("chat-blocks", PARAMS, seed=2), path)
    return path


def test_evict_opt_and_ratio_at_a_block_size_are_the_python_runs(capsys, trace):
    workload = read_workload(trace, "mooncake", 8)
    b = 16
    budget = b * (workload.max_length // b + 4)
    common = ["--workload", trace, "--hash-block-size", 8, "--budget", budget, "--block-size", b, "--json"]
    code, out, _ = run_cli(capsys, "evict", *common, "--policy", "lru")
    lru = run_policy(workload, budget, "lru", seed=0, block_size=b)
    assert code == 0 and orjson.loads(out) == lru.to_dict()
    code, out, _ = run_cli(capsys, "opt", *common)
    opt = orjson.loads(out)
    assert code == 0 and opt["misses"] == run_fif(workload, budget, block_size=b).misses and opt["block_size"] == b
    code, out, _ = run_cli(capsys, "ratio", *common, "--policy", "lru")
    assert code == 0 and orjson.loads(out)["ratio_mean"] == lru.misses / opt["misses"]


@pytest.mark.slow  # a process pool
def test_mrc_at_a_block_size_is_the_single_runs(capsys, trace):
    workload = read_workload(trace, "mooncake", 8)
    b = 16
    budget = b * (workload.max_length // b + 4)
    budgets = [budget, 2 * budget]
    code, out, _ = run_cli(
        capsys, "mrc", "--workload", trace, "--hash-block-size", 8, "--block-size", b,
        "--budgets", ",".join(map(str, budgets)), "--policies", "lru,rlt,opt", "--seeds", 2, "--workers", 1, "--json",
    )  # fmt: skip
    curve = orjson.loads(out)
    assert code == 0 and curve["block_size"] == b
    for i, size in enumerate(budgets):
        single = run_policy(workload, size, "lru", block_size=b)
        assert (curve["misses"]["lru"][i], curve["hit_rate"]["lru"][i]) == (single.misses, single.hit_rate)
        rlt = [run_policy(workload, size, "rlt", seed=s, block_size=b).misses for s in (0, 1)]
        assert curve["misses"]["rlt"][i] == sum(rlt) / 2
        assert curve["misses"]["opt"][i] == run_fif(workload, size, block_size=b).misses


@pytest.mark.parametrize(
    "argv,message",
    [
        (["evict", "--policy", "lru", "--budget", 1000, "--block-size", 16], "B = 1000 is not a multiple of"),
        (["opt", "--budget", 1000, "--block-size", 16], "B = 1000 is not a multiple of the block size b = 16"),
        (["ratio", "--policy", "lru", "--budget", 1000, "--block-size", 16], "not a multiple of the block size"),
        (["mrc", "--policies", "lru", "--budgets", "1024,1000", "--block-size", 16], "B = 1000 is not a multiple"),
        (["mrc", "--policies", "lru", "--budget-range", "1000:4096:3", "--block-size", 16], "multiples of the block"),
        (["evict", "--policy", "lru", "--budget", 1024, "--block-size", 0], "argument --block-size: must be a posit"),
        (["evict", "--policy", "lru", "--budget", 1024, "--hash-block-size", 0], "argument --hash-block-size"),
        (["opt", "--budget", 1024, "--block-size", 16, "--solver", "highs"], "runs the token MIP"),
        (["opt", "--budget", 1024, "--block-size", 16, "--workers", 2], "--block-size applies to one worker"),
        (["evict", "--policy", "lru", "--budget", 32, "--block-size", 16], "full blocks of b = 16 tokens, more than"),
    ],
)
def test_bad_block_sizes_are_one_line_and_exit_2(capsys, trace, argv, message):
    code, out, err = run_cli(capsys, *argv[:1], "--workload", trace, "--hash-block-size", 8, *argv[1:])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not out


def test_the_help_tells_the_two_block_sizes_apart(capsys):
    code, out, _ = run_cli(capsys, "evict", "--help")
    text = " ".join(out.split())
    assert code == 0 and "--block-size b the cache's block size" in text
    assert "--hash-block-size N how the file is read: tokens per hash id of a block trace" in text
