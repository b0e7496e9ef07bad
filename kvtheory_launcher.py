"""The ``kvtheory`` console script, outside the ``kvtheory`` package so that it runs before the package
is imported.

Importing what a command uses (NumPy, the policies, a solver, ...) takes a moment; a Ctrl-C or SIGTERM
then, or while the arguments are parsed, would otherwise end in a Python traceback. Here it ends like any other
interrupted command: ``kvtheory: interrupted`` on stderr and exit status 130.
"""

import signal
import sys


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, _terminated)  # kvtheory.cli.main installs its own for the command
    try:
        from kvtheory.cli import main as run

        return run()
    except KeyboardInterrupt:
        print("kvtheory: interrupted", file=sys.stderr)
        return 130
