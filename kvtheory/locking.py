"""Advisory locks on outputs that accumulate (sweep results): one writer at a time, a second one refused.

:func:`exclusive_writer` holds an exclusive POSIX record lock (``fcntl.lockf``) on ``<output>.lock``
for as long as the caller appends to ``<output>``, and writes the holder's identity (pid, host, command,
start time) into that file. A second writer does not wait: its request fails at once and it gets an
:class:`~kvtheory.errors.InputError` naming the holder, so the command line refuses with one line and
exit status 2. Nothing is computed twice and no line is written twice; once the first writer is done,
running the second again resumes (every cell the first wrote is skipped).

Why a hand-held ``lockf`` rather than ``flock`` or the ``filelock`` package: the kernel releases a
record lock when its process exits, however it exits (SIGKILL included), so a leftover lock file is
harmless (its content is only read while someone holds the lock) and no stale-lock guessing is needed;
the lock belongs to the process, so the process pool's forked workers do not inherit it and cannot keep
it after the sweep itself was killed (a ``flock`` belongs to the open file, which forked children
share; ``filelock`` uses ``flock`` and truncates the lock file on every attempt, so it could not hold
the holder's identity either). Record locks work on local file systems and over NFS. One process takes
a given lock once (a second request from the same process is refused too: POSIX would grant it, and
closing it would drop the first). POSIX only: where ``fcntl`` is missing, taking a lock is an
InputError rather than a silent unlocked write.

Only writers that take the lock are kept apart: a file written before locking existed may hold a cell
twice, which the readers detect (``kvtheory.experiments.sweep.read_results``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from kvtheory.errors import InputError


def lock_path(output: str | Path) -> Path:
    """The lock file of ``output``: ``<output>.lock`` beside it."""
    output = Path(output)
    return output.with_name(output.name + ".lock")


def _identity() -> str:
    command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    return f"pid {os.getpid()} on {socket.gethostname()}, since {started} ({command[:200]})"


_HELD: set[str] = set()  # lock files this process holds


@contextlib.contextmanager
def exclusive_writer(output: str | Path, what: str = "output") -> Iterator[None]:
    """Hold the write lock of ``output`` for the duration, or raise InputError naming its holder."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        raise InputError(f"{output}: cannot lock the {what} (file locks need a POSIX system)") from None
    path = lock_path(output)
    key = os.path.realpath(path)
    if key in _HELD:
        raise InputError(f"{output}: the {what} is already being written by this process")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(f"{path}: cannot create the lock file ({exc.strerror})") from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise InputError(f"{path}: cannot lock ({exc.strerror})") from None
            holder = os.pread(fd, 1000, 0).decode("utf-8", "replace").strip() or "another process"
            raise InputError(
                f"{output}: the {what} is being written by {holder.splitlines()[0]}; "
                "wait for it to finish (a rerun then resumes) or write to another file"
            ) from None
        _HELD.add(key)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (_identity() + "\n").encode(), 0)
            yield
        finally:
            _HELD.discard(key)
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
