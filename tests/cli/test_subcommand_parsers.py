"""``main`` builds the options of the one subcommand that runs (``kvtheory.cli.command_named`` finds it as the
whole parser would); what a user sees is the same as with every subcommand built."""

import json
from pathlib import Path

import pytest

from kvtheory.cli import SUBCOMMANDS, build_parser, command_named, main

PLUGIN = str(Path(__file__).resolve().parents[2] / "examples" / "custom_policy.py")


def subparser(parser, name: str):
    (commands,) = [action for action in parser._actions if action.dest == "command"]
    return commands.choices[name]


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_a_subcommand_built_alone_has_the_options_and_help_of_the_whole_parser(name):
    alone = subparser(build_parser([name]), name)
    assert alone.format_help() == subparser(build_parser(), name).format_help()
    assert len(alone._actions) > 2  # more than -h and --plugin


def test_the_top_level_help_is_the_same_with_no_subcommand_built():
    assert build_parser([]).format_help() == build_parser().format_help()
    assert [action.option_strings for action in subparser(build_parser([]), "evict")._actions] == [
        ["-h", "--help"],
        ["--plugin"],
    ]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["evict", "--workload", "w.jsonl"], "evict"),
        (["--plugin", "opt", "evict"], "evict"),  # --plugin's value is not the subcommand
        (["--plug", "opt", "evict"], "evict"),  # nor an abbreviated --plugin's
        (["--plugin=opt", "trace-stats", "--plugin", "x.py"], "trace-stats"),
        (["generate", "opt", "-o", "x.jsonl"], "generate"),
        (["--version"], None),
        (["-h"], None),
        ([], None),
        (["evicct"], None),
        (["--plugin"], None),
    ],
)
def test_command_named_finds_the_subcommand_as_the_parser_does(argv, named):
    assert command_named(argv) == named


def test_a_plugin_given_abbreviated_before_the_subcommand_still_runs_it(tmp_path, capsys):
    workload = tmp_path / "w.jsonl"
    workload.write_text('{"tokens": [1, 2]}\n{"tokens": [1, 3]}\n{"tokens": [1, 2]}\n')
    argv = ["--plug", PLUGIN, "evict", "--workload", str(workload), "--budget", "3", "--policy", "mru-leaf", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["policy"] == "mru-leaf"


def test_a_mistyped_subcommand_is_a_one_line_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["evicct"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'evicct'" in err and "'trace-stats'" in err and len(err.strip().splitlines()) == 1
