"""What a solver run needs from the process: a deadline that holds, no CBC left running, a quiet stdout.

A solver's own limit (CBC's ``-sec``, HiGHS's ``time_limit``) covers its branch and bound, not the
phases around it: PuLP handing a large model over (writing an MPS file, or adding HiGHS columns one by
one in Python) and CBC's root LP can each outlast the limit many times over. :func:`hard_deadline`
backs the solver's limit with an alarm that raises :class:`OutOfTime` in the main thread at the
deadline, and :func:`reaped_cbc` kills a CBC process that such an interruption leaves behind.
:func:`stdout_silenced` keeps what C libraries print (HiGHS's banner) off the output.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import time


class OutOfTime(Exception):
    """The deadline passed before the solve finished."""


#: seconds between repeated alarms once a deadline has passed
_REPEAT = 0.05


@contextlib.contextmanager
def hard_deadline(seconds: float | None):
    """Raise OutOfTime in the block once ``seconds`` have passed (None: never).

    A SIGALRM timer, so only in the main thread (elsewhere, e.g. in a Dask worker thread, the solvers'
    own limits are all there is). Once expired it fires again every ``_REPEAT`` seconds until the block
    is left: an exception raised while Python runs a weakref callback is dropped there, and the next alarm
    lands in ordinary code (an alarm inside a finalizer, a garbage-collector callback or ``sys.unraisablehook``
    waits for it, raising nothing there). An alarm that arrives while this generator itself
    runs (leaving the block) raises nothing, so the timer is always disarmed. An alarm armed by someone
    else (pytest-timeout, say) is put back, with what was left of it, on the way out.

    An error other than OutOfTime that leaves the block after an alarm has raised there is that alarm's,
    turned into another error by the C code it landed in (a pybind11 call converting its arguments, as
    HiGHS's ``addRow`` while PuLP builds the model, reports "incompatible function arguments"): it leaves as
    OutOfTime, with the error as its cause.
    """
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        if frame is not None and frame.f_code is own_code:
            return  # already leaving the block: the finally below disarms the timer
        if _dropped_there(frame):
            return  # a callback that would drop the exception, or the report of one: the next alarm raises
        raised.append(True)
        raise OutOfTime

    own_code = sys._getframe().f_code
    raised: list[bool] = []
    entered = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, expire)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3), _REPEAT)
    try:
        yield
    except OutOfTime:
        raise
    except Exception as exc:
        if raised:
            raise OutOfTime from exc
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:
            left = previous_delay - (time.monotonic() - entered)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), previous_interval)


def _dropped_there(frame) -> bool:
    """Whether ``frame`` runs where Python would drop the exception, inside a finalizer (``__del__``) or a
    garbage-collector callback (``gc.callbacks``, as hypothesis installs one), or inside ``sys.unraisablehook``,
    which reports such a drop (a Python function, or a partial of one, as pytest installs): the repeated alarm
    waits for the next ordinary frame instead of raising there."""
    codes = {getattr(getattr(hook, "func", hook), "__code__", None) for hook in (sys.unraisablehook, *gc.callbacks)}
    while frame is not None:
        if frame.f_code in codes or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def reaped_cbc():
    """Kill, on the way out of the block, every CBC process PuLP started in it and left running.

    Yields the list of those processes (``subprocess.Popen``), filled as PuLP starts them."""
    from pulp.apis import coin_api

    real = coin_api.subprocess
    started = []

    class Spawner:  # coin_api's view of the subprocess module: the same, but it remembers each child
        def __getattr__(self, name):
            return getattr(real, name)

        def Popen(self, *args, **kwargs):  # noqa: N802 - subprocess's name
            child = real.Popen(*args, **kwargs)
            started.append(child)
            return child

    coin_api.subprocess = Spawner()
    try:
        yield started
    finally:
        coin_api.subprocess = real
        for child in started:
            if child.poll() is None:
                child.kill()
                child.wait()


@contextlib.contextmanager
def stdout_silenced():
    """Send file descriptor 1 to /dev/null for the duration (what C libraries print, too)."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
