"""The cluster report's building blocks (kvtheory/cluster/report.py), on workloads small enough for the fast
tier: a point is the mean over seeds of single simulations, the offered load brackets the work, and a
verdict reads the metrics the right way round."""

import orjson
import pytest

from kvtheory.cluster import simulate
from kvtheory.cluster.report import METRICS, _cluster, _verdict, _workload, offered_load, run_point

SMALL = {"groups": 2, "prompts": 4}


def test_a_point_is_the_mean_of_its_seeds_single_runs():
    cluster = _cluster("Llama-3.1-8B", "L40", 1, 2)
    point = run_point("gsp", SMALL, cluster, "cache-aware", "lru", (0, 1))
    runs = [
        simulate(_workload("gsp", tuple(sorted(SMALL.items())), s), cluster, "cache-aware", "lru", seed=s).to_dict()
        for s in (0, 1)
    ]
    assert point == {m: pytest.approx((runs[0][m] + runs[1][m]) / 2) for m in METRICS}


def test_the_offered_load_brackets_the_work_and_hits_only_lower_it():
    cluster = _cluster("Llama-3.1-8B", "L40", 1, 2)
    all_miss, best = offered_load("gsp", SMALL, cluster, 0)
    assert 0 < best < all_miss  # the groups share a system prompt: the best case hits it


def test_a_verdict_reads_higher_hit_rates_and_lower_latencies_as_ahead():
    base = {"hit_rate": 0.5, "latency_p50": 2.0, "latency_p95": 4.0, "throughput_qps": 10.0}
    better = {"hit_rate": 0.6, "latency_p50": 1.0, "latency_p95": 3.0, "throughput_qps": 12.0}
    assert _verdict(better, base) == "hit rate ahead, p50 ahead, p95 ahead, throughput ahead"
    assert _verdict(base, better) == "hit rate behind, p50 behind, p95 behind, throughput behind"
    assert _verdict(base, dict(base)) == "hit rate tie, p50 tie, p95 tie, throughput tie"


def test_json_goes_to_stdout_only(capsys):
    from kvtheory.cluster.report import main

    with pytest.raises(SystemExit):
        main(["--quick", "--json", "--out", "report.md"])
    assert "--json prints to stdout" in capsys.readouterr().err


@pytest.mark.slow
def test_the_json_report_holds_the_markdown_tables_rows(capsys):
    """``--json`` (what docs/results.md stores) holds the same points as the markdown table: one row per
    router + eviction of every workload, each the mean over the seeds that run_point gives."""
    from kvtheory.cluster.report import EXTRA_ROUTERS, MAIN_ROUTERS, QUICK, main

    assert main(["--quick", "--json", "--only", "main", "--model", "Llama-3.1-8B"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    (setting,) = out["main"]["settings"]
    assert setting["model"] == "Llama-3.1-8B" and [w["name"] for w in setting["workloads"]] == list(QUICK)
    gsp = setting["workloads"][0]
    assert len(gsp["rows"]) == 2 * (len(MAIN_ROUTERS) + len(EXTRA_ROUTERS))
    first = gsp["rows"][0]
    cluster = _cluster("Llama-3.1-8B", "L40", 1, 4)
    expected = run_point("gsp", QUICK["gsp"], cluster, first["router"], first["eviction"], (0,))
    assert {m: first[m] for m in METRICS} == pytest.approx(expected)
