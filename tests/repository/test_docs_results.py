"""The run-derived tables of the documentation match their stored results (scripts/docs_results.py).

Every generated block of a page is drawn again from its stored result file (docs/results/*.jsonl) and from
the claims' registry; a page that differs fails here: a number edited by hand in a generated block, a
result recorded again but not rendered (``python scripts/docs_results.py render`` fixes both), or a finding
changed in ``Claim.findings`` without rendering.
"""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("docs_results", ROOT / "scripts" / "docs_results.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


docs_results = load_script()


@pytest.mark.parametrize("page", docs_results.PAGES)
def test_every_generated_block_matches_its_stored_results(page):
    text = (ROOT / page).read_text()
    rendered = docs_results.render_text(text)
    if rendered != text:
        stale = [
            old["renderer"]
            for old, new in zip(docs_results.BLOCK.finditer(text), docs_results.BLOCK.finditer(rendered), strict=True)
            if old["body"] != new["body"]
        ]
        pytest.fail(
            f"{page}: generated blocks {stale} differ from their stored results; run scripts/docs_results.py render"
        )


def test_the_pages_hold_their_generated_blocks():
    """Removing a block's markers (and typing the table instead) is caught too."""
    found = {page: docs_results.blocks((ROOT / page).read_text()) for page in docs_results.PAGES}
    assert "claims-table" in found["docs/claims.md"] and "claim-findings" in found["docs/claims.md"]
    assert {"costmodel-table", "engine-locks-table"} <= set(found["docs/cluster.md"])
    assert {"claims-summary", "table1-tables", "model-types-table"} <= set(found["docs/results.md"])
    assert {"cluster-main-tables", "cluster-offline-table", "cluster-sweeps-tables"} <= set(found["docs/results.md"])
    assert "page-size-table" in found["docs/results.md"]
    assert "game-sizes-table" in found["docs/game.md"]
    generated = {"batched-optimum-table", "sweeps-table", "traces-table", "flat-trace-table"}
    generated |= {"cluster-simulation-table", "cluster-mip-table", "single-worker-table", "mip-scaling-table"}
    assert generated <= set(found["docs/performance.md"])
    assert "recorded by hand" not in (ROOT / "docs" / "performance.md").read_text().lower()


@pytest.mark.parametrize("page", ["docs/results.md", "docs/cluster.md", "docs/game.md", "docs/mutation-testing.md"])
def test_pages_drawn_wholly_from_stored_results_keep_no_hand_recorded_section(page):
    """These pages' run figures all come from generated blocks: none is marked as copied from a run by hand."""
    assert "recorded by hand" not in (ROOT / page).read_text().lower()


def test_a_number_edited_by_hand_is_caught():
    text = (ROOT / "docs" / "claims.md").read_text()
    block = next(m for m in docs_results.BLOCK.finditer(text) if m["renderer"] == "claims-table")
    body = block["body"]
    digit = re.search(r"(?<=\s)\d(?=\.\d)", body)  # a ratio's first digit in the table
    edited = body[: digit.start()] + str((int(digit.group()) + 1) % 10) + body[digit.end() :]
    tampered = text[: block.start("body")] + edited + text[block.end("body") :]
    assert docs_results.render_text(tampered) == text


def test_every_stored_record_says_what_ran_and_where():
    files = sorted((ROOT / "docs" / "results").glob("*.jsonl"))
    assert files
    used = {m["source"] for page in docs_results.PAGES for m in docs_results.BLOCK.finditer((ROOT / page).read_text())}
    for path in files:
        assert f"docs/results/{path.name}" in used, f"{path.name} is drawn by no page"
        for line in path.read_text().splitlines():
            record = json.loads(line)
            assert record["command"].split()[0] in ("kvtheory", "python"), record["command"]
            assert re.fullmatch(r"[0-9a-f]{7,40}", record["commit"]), record["commit"]
            assert isinstance(record["output"], dict)


def test_a_missing_stored_result_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_results, "ROOT", tmp_path)
    page = "<!-- generated: claims-table from docs/results/none.jsonl by scripts/docs_results.py; do not edit -->\n"
    with pytest.raises(SystemExit, match="does not exist"):
        docs_results.render_text(page + "<!-- end generated -->")
