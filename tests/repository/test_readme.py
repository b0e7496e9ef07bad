"""The README is for a newcomer: at most 300 lines, the layout near the top, the two set-up commands as
.ci/run runs them; results and measurements live in docs/ (issue 26)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_the_readme_is_at_most_300_lines():
    assert len(README.splitlines()) <= 300


def test_the_layout_comes_before_the_set_up_and_the_results_are_linked_not_kept():
    sections = [line for line in README.splitlines() if line.startswith("## ")]
    assert sections.index("## Layout") < sections.index("## Set-up: the two commands") <= 2
    assert "docs/results.md" in README and "docs/performance.md" in README


def test_ci_runs_the_readme_test_command():
    command = "pip install -e .[dev] && pytest"
    assert f"```bash\n{command}\n```" in README and command in (ROOT / ".ci" / "run").read_text()
