"""The ``kvtheory`` command line: a thin layer over the public API, one module per subcommand.

Bad input exits with status 2 and one line on stderr; nothing prints a traceback for it.
"""

from __future__ import annotations

import argparse
import os
import sys

from kvtheory.cli import assumptions, check, costmodel, demo, evict, generate, mrc, opt, plot, ratio, route, sweep
from kvtheory.errors import InputError

SUBCOMMANDS = [generate, evict, opt, ratio, mrc, sweep, plot, costmodel, route, check, assumptions, demo]


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="kvtheory", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    for module in SUBCOMMANDS:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args) or 0
    except InputError as exc:
        print(f"kvtheory {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kvtheory {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
