"""Where sweep cells run: a local process pool or a Dask cluster, behind the same submit/as_completed calls."""

from __future__ import annotations

import itertools
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from kvtheory.errors import InputError

#: the objects a local pool's forked workers share with the sweep (:meth:`LocalExecutor.share`), by key
_SHARED: dict[int, object] = {}
_KEYS = itertools.count()


@dataclass(frozen=True)
class SharedObject:
    """A cell argument that stands for an object of :data:`_SHARED`, which a forked worker inherits."""

    key: int


def resolve(argument):
    """The object a cell argument stands for: the shared one for a :class:`SharedObject` (as the executor's
    ``share`` returned it), else the argument itself."""
    return _SHARED[argument.key] if isinstance(argument, SharedObject) else argument


# -- executors ----------------------------------------------------------------------------------------
def _leave_interrupts_to_the_sweep() -> None:
    """In a pool worker: ignore Ctrl-C (the terminal sends it to every process of the group) and let
    SIGTERM end the process plainly. A worker interrupted inside the pool's queue code can leave the
    pool hung; the sweep, which gets the signal too, stops the workers itself (``close(abort=True)``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class LocalExecutor:
    """A process pool (``concurrent.futures.ProcessPoolExecutor``) of ``workers`` processes, forked where the
    platform forks safely (Linux), so that objects :meth:`share` d before the first submit reach every worker
    without being copied through a pipe."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or default_workers()
        self._forked = sys.platform == "linux"
        context = multiprocessing.get_context("fork") if self._forked else None
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=context, initializer=_leave_interrupts_to_the_sweep
        )
        self._shared: list[int] = []
        self._started = False

    def share(self, value):
        """A cell argument standing for ``value`` (read by :func:`resolve` in the cell): a :class:`SharedObject`
        that the forked workers inherit when the workers are yet to start, else ``value`` itself (pickled with
        every cell that takes it)."""
        if not self._forked or self._started:
            return value
        key = next(_KEYS)
        _SHARED[key] = value
        self._shared.append(key)
        return SharedObject(key)

    def submit(self, function: Callable, argument, key: str):
        self._started = True  # the pool forks its workers at the first submit: later shares are not theirs
        return self._pool.submit(function, argument)

    def as_completed(self, futures: Iterable) -> Iterator:
        from concurrent.futures import as_completed

        return as_completed(futures)

    def close(self, abort: bool = False) -> None:
        """Shut the pool down; ``abort`` (the sweep was interrupted): end the running cells too (their
        results are lost and a rerun computes them) instead of waiting for them."""
        if abort:  # ProcessPoolExecutor has no public way to stop a running call before Python 3.14
            for process in list((self._pool._processes or {}).values()):
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for key in self._shared:
            _SHARED.pop(key, None)
        self._shared.clear()


class DaskExecutor:
    """A ``distributed.Client``: on the scheduler at ``scheduler``, on a given ``client``, or on a fresh
    ``LocalCluster`` of ``workers`` single-threaded worker processes."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None, client=None) -> None:
        from distributed import Client, LocalCluster

        self._own_cluster = None
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif scheduler:
            try:
                self.client = Client(scheduler, timeout="30s")
            except OSError as exc:
                raise InputError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from None
        else:
            self._own_cluster = LocalCluster(
                n_workers=workers or default_workers(), threads_per_worker=1, processes=True, dashboard_address=None
            )
            self.client = Client(self._own_cluster)

    def share(self, value):
        """``value`` scattered to every worker once (a future, which the cells receive as the value itself)."""
        return self.client.scatter(value, broadcast=True)

    def submit(self, function: Callable, argument, key: str):
        return self.client.submit(function, argument, key=f"kvtheory-cell-{key}", pure=False)

    def as_completed(self, futures: Iterable) -> Iterator:
        from distributed import as_completed

        return as_completed(list(futures))

    def close(self, abort: bool = False) -> None:
        """Close the client (and the LocalCluster it started), which ends its work, aborted or not."""
        if self._own_client:
            self.client.close()
        if self._own_cluster is not None:
            self._own_cluster.close()


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def make_executor(kind: str = "local", *, workers: int | None = None, scheduler: str | None = None):
    """``local`` (process pool) or ``dask`` (a scheduler address, or a LocalCluster of ``workers``)."""
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    if kind == "local":
        if scheduler:
            raise InputError("--scheduler goes with --executor dask")
        return LocalExecutor(workers)
    if kind == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:  # pragma: no cover - a declared dependency
            raise InputError(
                "--executor dask needs the 'distributed' package (pip install 'dask[distributed]')"
            ) from None
        return DaskExecutor(scheduler, workers)
    raise InputError(f"unknown executor {kind!r}; known: local, dask")
