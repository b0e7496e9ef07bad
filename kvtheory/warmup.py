"""Filling numba's on-disk cache with every compiled kernel kvtheory runs, so that no user run waits for a compile.

``pip install -e .`` runs ``python -m kvtheory.warmup`` from the in-tree build backend
(``build_backend/kvtheory_build.py``, docs/performance.md §No compile on the first run) on the installing machine,
with the numba the package then runs with: :func:`warm_up`, then :func:`build_ahead_of_time` (the streamed
flat-trace kernels and the whole-trie cores of the radix family, FIF and the one-pass curves as an
extension that runs without numba, :mod:`kvtheory.policies.native`). Running it by hand
does the same (after upgrading numba, after editing a kernel, or with a ``NUMBA_CACHE_DIR`` of one's own) and
prints what it compiled.

The signatures are not listed by hand: :func:`warm_up` runs every registered policy (and each policy that
follows predictions), FIF, the one-pass miss-ratio curves and lbgr-full's learning step through the same public
paths a user's run takes (:func:`~kvtheory.simulate.run_policy` with ``backend="compiled"``, the batch-by-batch
object the cluster serves, :func:`~kvtheory.optimum.fif.run_fif`,
:func:`~kvtheory.experiments.stack_mrc.stack_hits`), on tiny workloads of each shape the dispatcher tells apart:
a flat trie of one-token queries, a flat trie of longer queries and a branching trie, at batch sizes 1 and 2,
both eviction amounts and block sizes 1 and 2 (:data:`SETTINGS`), and the one-token queries read from an
oracleGeneral file (the streamed engines). Whatever types those paths hand the kernels
are the ones compiled.
``tests/repository/test_install_warmup.py`` checks that every kernel was run and that a later process running
the policies compiles nothing.
"""

from __future__ import annotations

import itertools
import sys

#: the tiny workloads (token lists): one-token queries on a flat trie; longer queries, still flat (each starts
#: with its own token); a branching trie (shared prefixes, a query ending inside another's path)
WORKLOADS = (
    [[1], [2], [3], [1], [4], [2], [5], [1], [3], [6], [2], [4]],
    [[1, 2, 3], [4, 5], [6], [1, 2, 3], [7, 8, 9, 10], [4, 5], [11], [6], [1, 2, 3], [7, 8, 9, 10]],
    [[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3, 6], [7, 8], [1, 2, 4], [7, 9], [1, 5], [1, 2], [7, 8], [1, 2, 3, 6]],
)
#: batch size -> the (eviction amount, block size) of its runs on each workload: blocks of 2 tokens at batch size 1
#: only (a batch must hold a query of a full block, which one-token queries are not)
SETTINGS = {1: (("shortfall", 1), ("allocation", 1), ("shortfall", 2)), 2: (("shortfall", 1), ("allocation", 1))}


def _budget(token_lists: list[list[int]], batch: int, block_size: int) -> int:
    """A budget that holds any batch (B >= beta L_max, in whole blocks) but not every distinct token, so that
    the run evicts."""
    longest = max(len(tokens) for tokens in token_lists)
    blocks = -(-longest // block_size)
    return block_size * (batch * blocks + 1)


def _policy_runs(workload, budget: int, batch: int, evict_amount: str, block_size: int) -> list[str]:
    """Every policy with a compiled engine for ``workload`` and ``evict_amount`` run on it, whole runs and, as
    the cluster's workers are served, batch by batch; each policy that follows predictions run with
    ``backend="compiled"`` where it has a compiled engine (block size 1). The failures, each as "policy: error"."""
    from kvtheory.errors import InputError
    from kvtheory.model.predictions import PREDICTORS
    from kvtheory.policies import ONLINE_POLICIES, PREDICTIVE_POLICIES
    from kvtheory.policies.dispatch import compiled_object
    from kvtheory.simulate import run_policy

    options = {"batch": batch, "seed": 0, "evict_amount": evict_amount, "backend": "compiled"}
    failures = []
    for cls in ONLINE_POLICIES.values():
        try:
            made = compiled_object(cls, workload.trie, budget, seed=0, evict_amount=evict_amount)
            if made is not None:  # else no compiled engine for such a run: nothing to compile
                run_policy(workload, budget, cls, block_size=block_size, **options)
                made.serve(list(range(batch)))
                made.cached_prefix(0)
                made.kept()
        except Exception as exc:  # the other policies' kernels are still warmed
            failures.append(f"{cls.name}: {exc!r}")
    for cls in PREDICTIVE_POLICIES.values() if block_size == 1 else ():
        predictor = {} if cls.predictor is not None else {"predictor": next(iter(PREDICTORS))}
        try:
            run_policy(workload, budget, cls, **options, **predictor)
        except InputError:  # no compiled engine for such a run: nothing to compile
            pass
        except Exception as exc:
            failures.append(f"{cls.name}: {exc!r}")
    return failures


def _streamed_runs(run_fif) -> list[str]:
    """The streamed engines of flat traces (:mod:`kvtheory.policies.flat_streams`, :mod:`kvtheory.optimum.flat_fif`):
    the one-token workload written as an oracleGeneral file and read back, every policy and FIF at batch size 1.
    The failures, as :func:`_policy_runs` gives them."""
    import os
    import tempfile

    import numpy as np

    from kvtheory.model.traces.flat import ORACLE_GENERAL, read_oracle_general

    token_lists = WORKLOADS[0]
    budget = _budget(token_lists, 1, 1)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "flat.oracleGeneral")
        rows = np.zeros(len(token_lists), dtype=ORACLE_GENERAL)
        rows["id"] = [tokens[0] for tokens in token_lists]
        rows.tofile(path)
        workload = read_oracle_general(path)
        failures = _policy_runs(workload, budget, 1, "shortfall", 1)
        run_fif(workload, budget, backend="compiled")
    return failures


def build_ahead_of_time(directory: str | None = None) -> str:
    """Compile the kernels of :data:`kvtheory.policies.native.EXPORTS` ahead of time (numba's ``pycc``) into the
    extension module ``_ahead`` in ``directory`` (default: beside the kernels, where
    :func:`~kvtheory.policies.native.ahead_of_time` looks), with the digest of their sources beside it (written
    last: a half-built extension is never taken for current). Returns the extension's path."""
    import importlib
    import warnings
    from pathlib import Path

    from numba import types
    from numba.core.errors import NumbaPendingDeprecationWarning

    from kvtheory.policies import native

    folder = Path(directory) if directory is not None else native.DIGEST_FILE.parent
    digest_file = folder / native.DIGEST_FILE.name
    digest_file.unlink(missing_ok=True)
    draw = types.ExternalFunctionPointer(types.uint32(types.voidptr), get_pointer=native.function_address)
    names = {**vars(types), "draw": draw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)
        from numba.pycc import CC

        extension = CC(native.EXTENSION.rsplit(".", 1)[1])
        extension.output_dir = str(folder)
        for name, (where, signature) in native.EXPORTS.items():
            module, function = where.split(":")
            kernel = getattr(importlib.import_module(module), function)
            extension.export(name, eval(signature, names))(kernel.py_func)  # noqa: S307 (our own table)
        extension.compile()
    digest_file.write_text(native.sources_digest() + "\n")
    return str(folder / extension.output_file)


def _rls_steps() -> None:
    """lbgr-full's compiled prediction and RLS step, on the arrays and floats its router passes them
    (:class:`~kvtheory.cluster.routers.lbgr_calibrated.LBGRFull`: weights M x 5, covariances M x 25)."""
    import numpy as np

    from kvtheory.cluster.routers.compiled import rls

    weights = np.array([[1.0, 1.0, 1.0, 1.0, 0.0]] * 2)
    covariance = np.array([[1.0 if r == c else 0.0 for r in range(5) for c in range(5)]] * 2)
    error = 0.5 - rls.predict(weights, 1, 2.0, 3.0, 0.25, 0.0)
    rls.rls_update(weights, covariance, 1, 2.0, 3.0, 0.25, 0.0, error, 0.99, 1e6)


def warm_up() -> None:
    """Run every compiled kernel once on the tiny workloads (module docstring), numba's even where the extension
    compiled ahead of time is current (:func:`~kvtheory.policies.native.just_in_time`: after an edit of a kernel
    the runs fall back on them); numba caches each signature on disk (``cache=True``). A run that fails does not
    stop the others: a RuntimeError names them all at the end."""
    from kvtheory.policies.native import just_in_time

    with just_in_time():
        _warm_up()


def _warm_up() -> None:
    from kvtheory.experiments.fif_stack import fif_stack_hits
    from kvtheory.experiments.stack_mrc import stack_hits
    from kvtheory.model.workload import Workload
    from kvtheory.optimum.fif import run_fif

    failures = []
    for token_lists, batch in itertools.product(WORKLOADS, SETTINGS):
        workload = Workload.from_token_lists(token_lists)
        for evict_amount, block_size in SETTINGS[batch]:
            budget = _budget(token_lists, batch, block_size)
            failures += _policy_runs(workload, budget, batch, evict_amount, block_size)
        run_fif(workload, _budget(token_lists, batch, 1), batch=batch, backend="compiled")
    failures += _streamed_runs(run_fif)
    for whole_node in (True, False):  # the miss-ratio curves of lru and token-lru in one pass
        stack_hits(Workload.from_token_lists(WORKLOADS[0]).trie, [1, 2], whole_node=whole_node, compiled=True)
    fif_stack_hits(Workload.from_token_lists(WORKLOADS[0]).trie, [1, 2], compiled=True)  # OPT's, on one-token queries
    _rls_steps()
    if failures:
        raise RuntimeError("the warm-up failed on:\n" + "\n".join(failures))


def main() -> int:
    import time

    start = time.perf_counter()
    warm_up()
    print(f"kvtheory: compiled kernels cached ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    start = time.perf_counter()
    try:
        built = build_ahead_of_time()
    except Exception as exc:  # numba's kernels serve those runs instead, with the same results
        print(f"kvtheory: warning: the kernels compiled ahead of time were not built ({exc!r})", file=sys.stderr)
    else:
        print(
            f"kvtheory: kernels compiled ahead of time: {built} ({time.perf_counter() - start:.1f} s)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
