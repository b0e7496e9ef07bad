"""The README's commands run as written: every ``kvtheory`` line of its fenced bash blocks and the
Quickstart's Python, in a scratch directory, in README order (later commands use earlier files).

A line the tests cannot run here ends with ``# not run by the tests: <why>`` (a Dask scheduler that must
already exist, a paper-size run of minutes); the reason is part of the README. A line that ends with
``# -> {JSON object}`` states what its ``--json`` output holds, and the test checks every field of it: a
figure in the README is the command's output, not a number typed beside it.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = "# not run by the tests:"


def fenced_blocks(text: str):
    """(section heading, language, body) of every fenced block, in order."""
    section, blocks = "", []
    for match in re.finditer(r"^(#{1,6} [^\n]*)$|^ *```(\w*)\n(.*?)^ *```", text, re.M | re.S):
        if match.group(1):
            section = match.group(1).lstrip("# ").strip()
        else:
            blocks.append((section, match.group(2), match.group(3)))
    return blocks


EXPECT = "# -> "


def command_lines(text: str) -> list[str]:
    """Every ``kvtheory`` command line of the bash blocks (continuation lines joined), comments kept, skips
    left out."""
    found = []
    for _, language, body in fenced_blocks(text):
        if language != "bash":
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("kvtheory ") and SKIP not in line:
                found.append(line)
    return found


def commands(text: str) -> list[str]:
    """The command lines of :func:`command_lines` without their comments."""
    return [line.split("  #")[0].split(" # ")[0].strip() for line in command_lines(text)]


def expected_output(line: str) -> dict:
    """The fields a command line's ``# -> {...}`` comment says its JSON output holds ({} without one)."""
    return json.loads(line.split(EXPECT, 1)[1]) if EXPECT in line else {}


README = (ROOT / "README.md").read_text()


def test_every_skip_says_why():
    for _, _, body in fenced_blocks(README):
        for line in body.splitlines():
            if SKIP in line:
                assert len(line.split(SKIP, 1)[1].strip()) > 5, line


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    path = tmp_path_factory.mktemp("readme")
    (path / "examples").symlink_to(ROOT / "examples")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(commands(README))))
def test_readme_command_runs_as_written(scratch, index):
    line = commands(README)[index]
    argv = [sys.executable, "-m", "kvtheory", *shlex.split(line)[1:]]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
    expected = expected_output(command_lines(README)[index])
    if expected:
        output = json.loads(done.stdout)
        assert {key: output.get(key) for key in expected} == expected, line


def test_stated_outputs_are_json_objects_of_json_commands():
    stated = [line for line in command_lines(README) if EXPECT in line]
    assert stated, "the README states no command's output"
    for line in stated:
        assert "--json" in line.split(" #")[0] and isinstance(expected_output(line), dict) and expected_output(line)


def test_quickstart_python_runs_as_written(scratch):
    (python,) = [
        body for section, language, body in fenced_blocks(README) if section == "Quickstart" and language == "python"
    ]
    done = subprocess.run([sys.executable, "-c", python], cwd=scratch, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == "optimal"
