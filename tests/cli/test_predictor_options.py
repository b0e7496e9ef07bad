"""``--predictor P [--noise X]`` on evict, ratio, mrc and check (docs/predictions.md): the same runs as the
Python API and the ``NAME@P[=X]`` names, and bad combinations refused in one line with exit status 2."""

from __future__ import annotations

import orjson
import pytest
from cli_runner import run_cli

from kvtheory import run_policy, write_workload
from kvtheory.workloads import generate


@pytest.fixture(scope="module")
def cyclic(tmp_path_factory):
    path = tmp_path_factory.mktemp("predictions") / "cyclic.jsonl"
    write_workload(generate("cyclic", {"k": 4, "L": 3, "n": 200}), path)
    return path


def test_evict_and_ratio_tell_the_policy(capsys, cyclic):
    workload = generate("cyclic", {"k": 4, "L": 3, "n": 200})
    common = ["--workload", cyclic, "--budget", 6, "--json"]
    code, out, _ = run_cli(
        capsys, "evict", *common, "--policy", "blind-oracle", "--predictor", "logdis", "--noise", 0.5
    )
    assert code == 0
    assert orjson.loads(out) == run_policy(workload, 6, "blind-oracle@logdis=0.5", seed=0).to_dict()
    code, out, _ = run_cli(
        capsys, "ratio", *common, "--policy", "predictive-marker", "--predictor", "oracle", "--seeds", 3
    )
    record = orjson.loads(out)
    assert code == 0 and record["policy"] == "predictive-marker@oracle" and record["eta_mean"] == 0.0
    code, out, _ = run_cli(capsys, "evict", *common, "--policy", "blind-oracle@adversarial")
    assert code == 0 and orjson.loads(out)["predictor"] == "adversarial"


def test_mrc_tells_only_the_policies_that_follow_predictions(capsys, cyclic):
    argv = ["mrc", "--workload", cyclic, "--budgets", "6,8", "--policies", "lru,blind-oracle,opt", "--json"]
    code, out, _ = run_cli(capsys, *argv, "--predictor", "oracle")
    curves = orjson.loads(out)["misses"]
    assert code == 0 and set(curves) == {"lru", "blind-oracle@oracle", "opt"}
    assert curves["blind-oracle@oracle"] == curves["opt"]  # FIF's evictions at batch 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evict", "--policy", "blind-oracle"], "follows predictions: give a predictor"),
        (["evict", "--policy", "lru", "--predictor", "oracle"], "only a policy that follows predictions takes one"),
        (["evict", "--policy", "blind-oracle", "--noise", "1"], "--noise is the strength of a predictor"),
        (["evict", "--policy", "blind-oracle", "--predictor", "oracle", "--noise", "1"], "takes no noise"),
        (["evict", "--policy", "blind-oracle", "--predictor", "bin", "--noise", "2"], "a probability in [0, 1]"),
        (["evict", "--policy", "blind-oracle", "--predictor", "oracle", "--seeds", "2"], "deterministic"),
        (["ratio", "--policy", "rlt", "--predictor", "dis", "--noise", "1"], "only a policy that follows"),
    ],
)
def test_bad_combinations_are_one_line_errors(capsys, cyclic, argv, message):
    code, out, err = run_cli(capsys, argv[0], "--workload", cyclic, "--budget", 6, *argv[1:])
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_mrc_and_check_refuse_a_predictor_nobody_follows(capsys, cyclic):
    code, _, err = run_cli(
        capsys, "mrc", "--workload", cyclic, "--budgets", "6", "--policies", "lru,rlt", "--predictor", "oracle"
    )
    assert code == 2 and "none of lru, rlt follows predictions" in err
    code, _, err = run_cli(capsys, "check", "P1", "--predictor", "oracle")
    assert code == 2 and "give --policy too" in err
