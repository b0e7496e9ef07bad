"""The ``kvtheory`` console script, outside the ``kvtheory`` package so that it runs before the package
is imported.

Importing what a command uses (NumPy, the policies, a solver, ...) takes a moment; a Ctrl-C or SIGTERM
then, or while the arguments are parsed, would otherwise end in a Python traceback. Here it ends like any other
interrupted command: ``kvtheory: interrupted`` on stderr and exit status 130. It also keeps NumPy's BLAS to one
thread (``OPENBLAS_NUM_THREADS``, unless the environment sets it): see :func:`main`.
"""

import os
import signal
import sys


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, _terminated)  # kvtheory.cli.main installs its own for the command
    # NumPy's OpenBLAS starts a thread per CPU when NumPy is imported, and they spin about a tenth of a second of
    # CPU; no command multiplies large matrices, so one thread, unless the user says otherwise
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from kvtheory.cli import main as run

        return run()
    except KeyboardInterrupt:
        print("kvtheory: interrupted", file=sys.stderr)
        return 130
