"""The ``kvtheory`` command line: a thin layer over the public API, one module per subcommand.

A subcommand's module (``kvtheory.cli.<name>``, with ``-`` as ``_``) is imported, and its ``register(parser)``
adds its options to its parser, only when that subcommand runs (:func:`build_parser` builds them all when
asked for every one): ``kvtheory --version`` and ``kvtheory --help`` import none, and each command imports
what it uses and nothing another command needs.

Bad input exits with status 2 and one line on stderr; nothing prints a traceback for it. Options are
checked where argparse reads them (``kvtheory.cli.options``). Ctrl-C and SIGTERM stop a command with
"interrupted" and exit status 130 (``opt`` and ``check`` print what they have first).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from kvtheory.errors import InputError

#: the subcommands in the order of ``kvtheory --help``, each with its one-line help there
SUBCOMMANDS = {
    "generate": "write a generated workload or adversary as JSON Lines",
    "evict": "serve a workload with an online eviction policy",
    "opt": "the exact offline optimum, with a proof (or a bracket)",
    "ratio": "a policy's misses over the exact optimum (FIF)",
    "mrc": "hit rate against the budget for every policy and OPT (miss-ratio curves)",
    "sweep": "run a grid of competitive-ratio cells from a TOML spec (resumable; process pool or Dask)",
    "plot": "plot sweep results: ratio against k (or B) per policy, with k, 2*H_k, H_k and the claims' bounds",
    "costmodel": "a_miss, a_cached, decode time, KV bytes per token and the budget B of a GPU + model",
    "route": "simulate M workers behind a router (latency, TTFT, throughput)",
    "check": "check the claims of docs/claims.md (proofs_check): table of verdicts",
    "assumptions": "which claims' assumptions a workload and configuration meet",
    "demo": "every policy and the optimum on embedded workloads, with a plot",
    "game": "exact competitive analysis on small universes",
    "trace-stats": "a trace's size, blocks, reuse, ideal hit rate and prefix-closure check",
}


def one_line(text: str) -> str:
    """``text`` with line breaks escaped, so that an error stays one line whatever a path or value holds."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the command line with the options of the subcommands ``commands`` (default: all of
    them); every other subcommand is listed by ``--help`` but takes no options."""
    built = set(SUBCOMMANDS if commands is None else commands)
    parser = _OneLineParser(prog="kvtheory", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--version", action=_Version, nargs=0, default=argparse.SUPPRESS, help="show program's version number and exit"
    )
    _add_plugin_option(parser, default=[])
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    for name, summary in SUBCOMMANDS.items():
        subparser = subparsers.add_parser(name, help=summary)
        if name in built:
            importlib.import_module(f"{__name__}.{name.replace('-', '_')}").register(subparser)
    for subparser in subparsers.choices.values():  # --plugin before or after the subcommand
        _add_plugin_option(subparser, default=argparse.SUPPRESS)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed version, read (importlib.metadata) only when asked for it."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        import importlib.metadata

        print(f"kvtheory {importlib.metadata.version('kvtheory')}")
        parser.exit()


def command_named(argv: list[str]) -> str | None:
    """The subcommand that ``argv`` runs, found as :func:`build_parser`'s parser finds it (after ``--plugin``
    and its value, abbreviated or not); None where ``argv`` names none (``--version``, ``--help``, a typo,
    which that parser then answers without any subcommand's options)."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("-h", "--help", "--version", action="store_true")
    _add_plugin_option(parser, default=[])
    subparsers = parser.add_subparsers(dest="command")
    for name in SUBCOMMANDS:
        subparsers.add_parser(name, add_help=False)
    try:
        return parser.parse_known_args(argv)[0].command
    except argparse.ArgumentError:
        return None


def _add_plugin_option(parser: argparse.ArgumentParser, *, default) -> None:
    """``--plugin``, read by :func:`load_plugins` wherever it stands; the parsers only accept it."""
    parser.add_argument(
        "--plugin",
        action="append",
        default=default,
        metavar="FILE|MODULE",
        help="import a Python file or module first (repeatable): policies, routers or generators it registers "
        "become known by name, e.g. examples/custom_policy.py; before or after the subcommand",
    )


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _interrupts():
    """SIGTERM (what a scheduler sends before killing) stops a command as Ctrl-C does, and an interrupt
    that Python drops is delivered again.

    Python drops, with a traceback on stderr, an exception raised while a garbage-collector callback runs
    (hypothesis installs one, so ``kvtheory check`` ran on after a Ctrl-C landed there about one time in
    six): the unraisable-exception hook sees the dropped KeyboardInterrupt and has another thread send
    SIGTERM again once the hook has returned, 10 ms later, so that it lands after the callback, in
    ordinary code (a signal that arrived while the hook still ran would be dropped again, inside it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    previous_hook = sys.unraisablehook
    over = threading.Event()  # the command ended: too late to stop it

    def send_again(hook_returned: threading.Event) -> None:
        hook_returned.wait()
        if not over.wait(0.01):
            os.kill(os.getpid(), signal.SIGTERM)

    def redeliver(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            hook_returned = threading.Event()
            threading.Thread(target=send_again, args=(hook_returned,), daemon=True).start()
            hook_returned.set()
        else:
            previous_hook(unraisable)

    sys.unraisablehook = redeliver
    try:
        yield
    finally:
        over.set()
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGTERM, previous)


def load_plugins(argv: list[str] | None) -> None:
    """Import every ``--plugin`` before the command line is parsed, so that names it registers (a
    policy given to ``--policy``, say) are known; InputError if one cannot be loaded."""
    found, _ = _plugin_parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    for plugin in found.plugin:
        try:
            if plugin.endswith(".py") or os.sep in plugin:
                name = f"kvtheory_plugin_{Path(plugin).resolve()}"
                if name in sys.modules:  # loaded before in this process: its names are registered
                    continue
                spec = importlib.util.spec_from_file_location(name, plugin)
                if spec is None:
                    raise ImportError("not a Python file")
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module
                spec.loader.exec_module(module)
            else:
                importlib.import_module(plugin)
        except Exception as exc:  # noqa: BLE001 - whatever the plugin raised, say it in one line
            raise InputError(f"cannot load plugin {plugin!r}: {str(exc) or type(exc).__name__}") from None


def _plugin_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--plugin", action="append", default=[])
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        load_plugins(argv)
    except InputError as exc:
        print(f"kvtheory: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    command = command_named(sys.argv[1:] if argv is None else argv)
    parser = build_parser([command] if command else [])
    args = parser.parse_args(argv)
    try:
        with _interrupts():
            return args.run(args) or 0
    except InputError as exc:
        print(f"kvtheory {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kvtheory {args.command}: interrupted", file=sys.stderr)
        return 130
    except MemoryError:  # a workload or grid larger than this machine: say so in one line
        print(f"kvtheory {args.command}: error: out of memory (the input asks for more than is free)", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:  # a path the system refused (missing, a directory, no permission): one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"kvtheory {args.command}: error: {one_line(f'{where}{exc.strerror or exc}')}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
