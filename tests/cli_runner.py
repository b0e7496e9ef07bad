"""Running the command line in-process for a test: ``run_cli(capsys, *argv)`` -> (exit status, stdout, stderr)."""

from __future__ import annotations

from kvtheory.cli import main


def run_cli(capsys, *argv):
    """``kvtheory ARGV`` in this process; argparse's usage errors (SystemExit) give their exit status too."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    return code, out, err
