"""Rough edges a new user hit, each kept fixed by a test."""

import json

import pytest

from kvtheory.cli import main
from kvtheory.cluster.routers.base import parse_options
from kvtheory.errors import InputError


@pytest.mark.parametrize("written", ["[16,32]", "[16, 32]", "16,32"])
def test_list_parameters_accept_the_form_generate_list_prints(tmp_path, capsys, written):
    path = tmp_path / "g.jsonl"
    argv = ["generate", "gsp", "--param", f"lengths={written}", "--param", "groups=2", "--param", "prompts=1"]
    assert main([*argv, "-o", str(path)]) == 0
    lengths = sorted(len(json.loads(line)["tokens"]) for line in path.read_text().splitlines())
    assert lengths == [16, 32]
    assert main(["generate", "--list"]) == 0
    assert "lengths=[512, 1024, 2048, 4096, 8192]" in capsys.readouterr().out


def test_router_options_and_generator_parameters_share_one_parser():
    options = parse_options("r", {"flag": False, "count": 3, "rate": 0.5, "limit": None}, {"flag": "yes"})
    assert options == {"flag": True, "count": 3, "rate": 0.5, "limit": None}
    assert parse_options("r", {"limit": None}, {"limit": "7"}) == {"limit": 7}
    with pytest.raises(InputError, match="router option count='x' is not a valid int"):
        parse_options("r", {"count": 3}, {"count": "x"})


def test_the_notebooks_extra_installs_what_opening_and_converting_them_needs():
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", requirement)[0] for requirement in extras["notebooks"]}
    assert {"jupyterlab", "nbconvert", "ipykernel"} <= names
    assert "pip install -e .[notebooks]" in (root / "README.md").read_text()
