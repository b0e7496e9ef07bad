"""Stopping a MIP solver on Ctrl-C (SIGINT) or SIGTERM (what a scheduler sends) and keeping what it found.

The solver adapters of :mod:`kvtheory.optimum.mip` run every solve inside :func:`solving`. While a
solver runs, SIGINT and SIGTERM do not raise in Python: they ask the solver to stop, and the solve ends
with what the solver had, its incumbent and its proven bound. Then:

* inside :func:`stoppable` (``kvtheory opt`` runs in one), the solve returns status ``"interrupted"``
  with that incumbent and bound (a bound that already meets the incumbent is still a proof: status
  ``"optimal"``), and every later solve in the same scope returns ``"interrupted"`` at once without
  solving, so a caller that solves several models (an LP bound, then the MIP) stops as a whole;
* outside any scope (library calls, ``kvtheory check``), the signal is raised as KeyboardInterrupt once
  the solver has stopped, as if it had arrived a moment later: no solver process is left running.

Outside a solve, signals behave as usual (the command line turns SIGTERM into KeyboardInterrupt too).
Signal handlers belong to the main thread: a solve in another thread is not stoppable this way.

How each solver stops:

* CBC runs as a child process. It is sent SIGINT, on which it ends its branch and bound and writes its
  incumbent ("Stopped on ctrl-c"). CBC ignores SIGINT while it solves the root LP, so a CBC still
  running :data:`GRACE_SECONDS` after it was asked, or at a second signal, is killed: there is no
  incumbent then, and the bound is the last one its log shows. A CBC that starts after the request
  (the model was still being written) is asked as soon as it appears. (Also on a hard deadline's
  ``OutOfTime``, any CBC left is killed by ``solver_runtime.reaped_cbc``.) A SIGTERM that reaches CBC
  itself (sent to the whole process group, as some schedulers do) kills it at once: only the bound of its
  log is left.
* HiGHS runs in this process: an interrupt callback (simplex, interior point, branch and bound) sees the
  request and stops it, with its incumbent and dual bound (the HiGHS adapter of :mod:`kvtheory.optimum.solvers`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

GRACE_SECONDS = 3.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_depth = 0  # nesting of stoppable() scopes (solving() opens one too)
_requested = False  # a signal asked the running solves of the outermost scope to stop


def in_scope() -> bool:
    """Whether the caller runs inside :func:`stoppable` (then an interrupted computation that holds an
    incumbent may return it instead of raising KeyboardInterrupt)."""
    return _depth > 0


def stop_requested() -> bool:
    """Whether a signal asked the solves of the current scope to stop."""
    return _requested


@contextlib.contextmanager
def stoppable() -> Iterator[None]:
    """A scope whose interrupted solves return status ``"interrupted"`` instead of raising."""
    global _depth, _requested
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _requested = False


class _ChildSolver:
    """Stops solver child processes (``subprocess.Popen``, in a list the caller fills as it starts them):
    SIGINT first, SIGKILL after the grace period."""

    def __init__(self, children: list) -> None:
        self.children = children
        self.asked: dict[int, float] = {}  # pid -> when it was sent SIGINT
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def running(self) -> list:
        return [child for child in list(self.children) if child.poll() is None]

    def request(self, again: bool) -> None:
        """A signal arrived (``again``: not the first): start watching, or kill at once."""
        if again:
            self.kill()
        elif self.thread is None:
            self.thread = threading.Thread(target=self._watch, name="kvtheory-stop-solver", daemon=True)
            self.thread.start()

    def _watch(self) -> None:
        while not self.done.is_set():
            now = time.monotonic()
            for child in self.running():
                with contextlib.suppress(OSError):
                    if child.pid not in self.asked:
                        child.send_signal(signal.SIGINT)
                        self.asked[child.pid] = now
                    elif now - self.asked[child.pid] > GRACE_SECONDS:
                        child.kill()
            self.done.wait(0.05)

    def kill(self) -> None:
        for child in self.running():
            with contextlib.suppress(OSError):
                child.kill()

    def close(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()


@contextlib.contextmanager
def solving(children: list | None = None) -> Iterator[None]:
    """Run one solve stoppably (module docstring); ``children``: the solver's child processes as the
    caller starts them (CBC, see ``solver_runtime.reaped_cbc``), None for an in-process solver (HiGHS,
    which polls :func:`stop_requested`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopper = _ChildSolver(children) if children is not None else None
    signalled = []

    def handler(signum, frame) -> None:
        global _requested
        _requested = True
        signalled.append(signum)
        if stopper is not None:
            stopper.request(again=len(signalled) > 1)

    with stoppable():
        outermost = _depth == 1
        previous = {number: signal.signal(number, handler) for number in _SIGNALS}
        try:
            yield
        finally:
            for number, action in previous.items():
                signal.signal(number, action)
            if stopper is not None:
                stopper.close()
                if signalled:
                    stopper.kill()  # one that was still starting, or that ignored the request
        if signalled and outermost:
            raise KeyboardInterrupt
