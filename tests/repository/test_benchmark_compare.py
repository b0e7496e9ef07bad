"""benchmarks/compare.py, the regression check of a benchmark's new run against its stored one, on small
synthetic results: which figures it names slower (times and rates, by the threshold), which results it names
different, how it matches list items and picks a stored record, and that bad input is one line, exit 2.
Also: every benchmark script stores where and when it ran (benchmarks/provenance.py)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


compare = load("compare")


def run(**changes) -> dict:
    """A small benchmark output; ``changes`` replaces figures of the lru entry."""
    lru = {"process_seconds": 2.0, "process_cpu_seconds": 1.0, "queries_per_second": 500, "misses": 40, **changes}
    return {
        "budget": 10,
        "time_limit_s": 60.0,
        "policies": {"lru": lru, "fif": {"process_seconds": 1.0, "misses": 30}},
        "runs": [
            {"router": "random", "eviction": "lru", "cpu_seconds": 0.5, "hit_rate": 0.25},
            {"router": "lbgr", "eviction": "lru", "cpu_seconds": 0.8, "hit_rate": 0.5},
        ],
        "summary": {"total_seconds": {"highs": 3.0, "cbc": 1.0}},
        "provenance": {"commit": "abc1234", "machine": {"load_average": [0.5, 0.5, 0.5]}},
    }


def test_identical_runs_pass():
    lines, counts = compare.compare(run(), run())
    assert lines == []
    assert counts["timings"] == 8 and counts["results"] == 4  # time_limit_s and the budget are settings
    assert counts["slower"] == counts["different"] == counts["unmatched"] == 0


def test_a_time_more_than_20_percent_slower_is_named_with_its_path_old_new_and_ratio():
    lines, counts = compare.compare(run(process_cpu_seconds=1.25), run())
    assert lines == ["slower: policies.lru.process_cpu_seconds: 1 -> 1.25 (1.25x)"]
    assert counts["slower"] == 1
    assert compare.compare(run(process_cpu_seconds=1.19), run())[0] == []
    assert compare.compare(run(process_cpu_seconds=0.5), run())[0] == []  # faster is never named


def test_a_rate_is_slower_when_it_falls():
    lines, _ = compare.compare(run(queries_per_second=400), run())
    assert lines == ["slower: policies.lru.queries_per_second: 500 -> 400 (1.25x)"]
    assert compare.compare(run(queries_per_second=600), run())[0] == []


def test_the_threshold_is_a_parameter():
    assert compare.compare(run(process_seconds=2.5), run(), threshold=0.3)[0] == []
    assert len(compare.compare(run(process_seconds=2.5), run(), threshold=0.2)[0]) == 1


def test_a_different_result_is_named_even_when_every_time_is_faster():
    lines, counts = compare.compare(run(misses=41, process_seconds=1.0), run())
    assert lines == ["different: policies.lru.misses: 40 -> 41"]
    assert counts["different"] == 1 and counts["slower"] == 0


def test_an_incumbent_at_a_time_limit_is_not_a_result():
    old = {"cells": [{"workload": "gsp", "status": "optimal", "opt": 7, "seconds": 1.0}]}
    stopped = {"cells": [{"workload": "gsp", "status": "time_limit", "opt": 8, "seconds": 1.0}]}
    assert compare.compare(stopped, old)[0] == []
    proven = {"cells": [{"workload": "gsp", "status": "optimal", "opt": 8, "seconds": 1.0}]}
    assert compare.compare(proven, old)[0] == ["different: cells[workload=gsp].opt: 7 -> 8"]


def test_list_items_are_matched_by_their_names_not_their_order():
    new = run()
    new["runs"].reverse()
    assert compare.compare(new, run())[0] == []
    new["runs"][0]["cpu_seconds"] = 2.0  # lbgr, now first
    assert compare.compare(new, run())[0] == ["slower: runs[router=lbgr,eviction=lru].cpu_seconds: 0.8 -> 2 (2.50x)"]


def test_every_number_under_a_time_key_is_a_time_and_settings_and_provenance_are_not_compared():
    new = run()
    new["summary"]["total_seconds"]["cbc"] = 1.5
    new["time_limit_s"] = 600.0
    new["provenance"]["machine"]["load_average"] = [9.0, 9.0, 9.0]
    assert compare.compare(new, run())[0] == ["slower: summary.total_seconds.cbc: 1 -> 1.5 (1.50x)"]


def test_figures_in_only_one_run_are_counted_not_failed():
    new = run()
    del new["policies"]["fif"]
    lines, counts = compare.compare(new, run())
    assert lines == [] and counts["unmatched"] == 2


def write(path: Path, *objects) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


def test_the_command_line_exits_1_when_slower_and_picks_the_stored_record_of_the_same_command(tmp_path, capsys):
    quick = {"command": "python benchmarks/x.py --quick", "commit": "abc1234", "output": run(misses=1)}
    full = {"command": "python benchmarks/x.py", "commit": "abc1234", "output": run()}
    stored = write(tmp_path / "x.jsonl", quick, full)
    new = write(tmp_path / "new.json", {**full, "output": run(process_seconds=3.0)})
    assert compare.main([str(new), str(stored)]) == 1
    out = capsys.readouterr().out
    assert "slower: policies.lru.process_seconds: 2 -> 3 (1.50x)" in out
    assert "load average at the start: stored 0.5, new 0.5" in out
    assert "1 more than 1.20x slower, 0 different" in out and "(stored: python benchmarks/x.py)" in out
    plain = write(tmp_path / "plain.json", run())
    assert compare.main([str(plain), str(stored), "--command", "python benchmarks/x.py"]) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]\n", "holds no JSON object"),
        (None, "cannot read"),
        ("two records", "holds 2 records"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    stored = tmp_path / "stored.jsonl"
    if content == "two records":
        write(stored, *({"command": c, "commit": "abc1234", "output": run()} for c in ("a", "b")))
    elif content is not None:
        stored.write_text(content)
    new = write(tmp_path / "new.json", run())
    assert compare.main([str(new), str(stored)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("compare: ")


def test_every_benchmark_script_stores_its_provenance():
    helpers = {"compare.py", "provenance.py", "whole_process.py"}
    scripts = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if p.name not in helpers)
    assert scripts
    for script in scripts:
        assert "started = provenance()" in script.read_text(), f"{script.name} does not record its provenance"
    facts = load("provenance").provenance()
    assert set(facts) == {"commit", "dirty", "date", "machine"}
    machine = facts["machine"]
    assert {"cpu", "cores", "python", "numpy", "numba", "load_average"} <= set(machine)
    assert machine["cores"] >= 1 and len(machine["load_average"]) == 3
