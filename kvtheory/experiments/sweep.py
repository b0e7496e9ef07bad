"""Competitive-ratio sweeps: a grid of cells from a TOML spec, run on a process pool or a Dask cluster.

A **cell** is one measurement: a workload (a registered generator or adversary family with fixed
parameters and an instance seed), a budget B, a batch size beta, one online policy and the policy seeds
(one for a deterministic policy). Running a cell builds the workload, computes the exact optimum
(FIF) and the policy's misses, and returns one JSON-able record with the ratio ALG / OPT (for a
randomized policy: the mean over the policy seeds with a 95% Student-t interval and the per-seed
distribution, worst seed included).

Spec (TOML)::

    # defaults for every [[grid]] table (each table may override any of them)
    policies = ["lru", "token-lru", "rlt"]  # online policy names
    seeds = [0, 1]                          # instance seeds (an integer N means 0..N-1)
    policy_seeds = 10                       # seeds of a randomized policy (N means 0..N-1, or a list)
    budget = "k + L - 1"                    # an integer, or an expression over the cell's names
    batch = 1                               # likewise
    evict_amount = "shortfall"              # or "allocation" (docs/policies.md §How much is evicted)

    [[grid]]
    family = "cyclic"                       # any name of `kvtheory generate --list`
    params = { k = [2, 4, 8], L = 4, n = 2000 }

A list value is an axis of the grid (for a list-typed parameter such as ``gsp.lengths``, a list of lists
is); ``budget``, ``batch``, ``evict_amount``, ``seeds`` and ``policies`` are axes too. A cell that evicts
the shortfall (the default) has no ``evict_amount`` key, so its id is the one it had before the option.
The string ``"$policy"`` as a parameter value is replaced by the cell's policy (``adaptive`` against the
policy it measures).
Expressions are arithmetic (``+ - * / // % **``, ``min max ceil floor round``) over the cell's
numeric parameters and ``L_max``, ``distinct`` (distinct token nodes), ``queries``, ``tokens`` and, in
``budget``, ``batch``; a non-integer result is rounded down.

The **cell id** is a stable hash (SHA-256 of the canonical JSON) of the cell's definition, so a rerun of
the same spec skips every cell whose id is already in the output file: an interrupted sweep loses only
the cells that were running. The executors share one loop, :func:`run_cells`: submit every pending
cell, then append one JSON line per finished cell (flushed at once) in completion order. The local
executor is a :class:`concurrent.futures.ProcessPoolExecutor`, the Dask one a ``distributed.Client``;
both are driven through the same ``submit`` / ``as_completed`` calls.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from kvtheory.errors import InputError
from kvtheory.experiments.executors import DaskExecutor, make_executor
from kvtheory.experiments.grid import (
    DEFAULT_EVICT_AMOUNT,
    FILE_FAMILY,
    WORKLOAD_NAMES,
    Cell,
    cell_id,
    evaluate,
    expand,
    load_spec,
)
from kvtheory.locking import exclusive_writer
from kvtheory.model.records import Anything, Bool, Int, Number, Numbers, Object, RecordType, Text


# -- running one cell -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _workload(key: bytes, budget: int | None = None):
    """The cell's workload; an integer ``budget`` builds an adversary family for it (its B follows the
    budget, and a k given with it must agree: :func:`kvtheory.workloads.registry.generate`)."""
    from kvtheory.workloads.registry import generate

    family, params, seed = orjson.loads(key)
    if family == FILE_FAMILY:
        from kvtheory.model.traces import read_workload

        return read_workload(params["workload"], params["format"], params["block_size"])
    return generate(family, params, seed=seed, budget=budget)


@functools.lru_cache(maxsize=16)
def _optimum(key: bytes, budget: int, batch: int, built_for: int | None = None, backend: str = "auto"):
    from kvtheory.optimum.exact import solve_optimum
    from kvtheory.ratio import OPT_TIME_LIMIT

    return solve_optimum(_workload(key, built_for), budget, batch=batch, time_limit=OPT_TIME_LIMIT, backend=backend)


def _names(params: Mapping, workload) -> dict[str, float]:
    names = {k: v for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    values = (workload.max_length, workload.trie.distinct_tokens, len(workload), workload.total_tokens)
    names.update(zip(WORKLOAD_NAMES, values))
    return names


def _quantiles(values: Sequence[float]) -> list[float]:
    return [float(q) for q in np.quantile(np.asarray(values, dtype=float), [0.0, 0.25, 0.5, 0.75, 1.0])]


def run_cell(cell: Cell, job_cells: int = 1) -> dict:
    """Measure one cell; the record holds the cell's definition and the ratio report.

    The policy's engine is the sweep's, not the cell's (:func:`kvtheory.policies.dispatch.job_backend`): a sweep
    of ``job_cells`` cells like this one serves about ``job_cells`` times this cell's queries (and tokens) in all,
    and its worker processes load numba once each, so a long sweep runs every cell on the compiled cores however
    short the cell. The hits are the same either way.

    An input error of the cell (an impossible budget, a bad parameter) becomes a record with an
    ``error`` message instead of stopping the sweep; it is not done: the next run tries it again.
    """
    from kvtheory.model.batches import validate
    from kvtheory.policies.dispatch import job_backend
    from kvtheory.ratio import competitive_ratio, harmonic

    base = {key: cell[key] for key in ("family", "params", "seed", "policy")}
    evict_amount = cell.get("evict_amount", DEFAULT_EVICT_AMOUNT)
    record: dict = {"cell": cell.get("id") or cell_id(cell), **base, "evict_amount": evict_amount}
    try:
        key = orjson.dumps([cell["family"], cell["params"], cell["seed"]])
        built_for = cell["budget"] if isinstance(cell["budget"], int) else None
        workload = _workload(key, built_for)
        names = _names(cell["params"], workload)
        batch = cell["batch"] if isinstance(cell["batch"], int) else evaluate(cell["batch"], names, "batch")
        budget = (
            cell["budget"] if isinstance(cell["budget"], int) else evaluate(cell["budget"], {**names, "batch": batch})
        )
        validate(workload, budget, batch)
        seeds = cell["policy_seeds"]  # a count, or the list of seeds
        runs = (seeds if isinstance(seeds, int) else len(seeds)) if _is_randomized(cell) else 1
        queries, tokens = job_cells * len(workload), job_cells * workload.total_tokens
        opt = _optimum(key, budget, batch, built_for, job_backend("auto", queries, tokens))
        backend = job_backend("auto", runs * queries, runs * tokens)
        report = competitive_ratio(
            workload,
            budget,
            cell["policy"],
            batch=batch,
            seeds=cell["policy_seeds"],
            optimum=opt,
            evict_amount=evict_amount,
            backend=backend,
        )
    except InputError as exc:
        record.update(budget=cell["budget"], batch=cell["batch"], error=str(exc))
        return record
    result = report.to_dict()
    distinct = workload.trie.distinct_tokens
    steady = report.steady_ratios
    steady_summary = _summary(steady)
    result.pop("policy")
    record.update(result)
    k = result["k"]
    record.update(
        spec={"budget": cell["budget"], "batch": cell["batch"]},
        randomized=_is_randomized(cell),
        distinct_tokens=distinct,
        ratio_quantiles=_quantiles(result["ratios"]),
        steady_ratios=steady,
        steady_ratio_mean=steady_summary[0],
        steady_ratio_ci95=steady_summary[1],
        H_k=None if k is None else harmonic(k),  # k is null, with a k_reason, when it is < 1
    )
    return record


def _is_randomized(cell: Cell) -> bool:
    from kvtheory.policies import policy_class

    return policy_class(cell["policy"]).randomized


def _summary(values: Sequence[float]) -> tuple[float, list[float]]:
    from kvtheory.stats import summarize

    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < len(values):
        return float("inf"), [float("inf"), float("inf")]
    summary = summarize(finite)
    return summary.mean, list(summary.ci)


# -- the loop ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepSummary:
    """Cells of the spec, cells found done in the output file, cells run now, and failed cells."""

    cells: int
    skipped: int
    ran: int
    errors: int
    seconds: float
    output: str


#: A line of a results file: the cell's id and definition, then its error or its measurements. Only the
#: fields the readers use are typed; others (added by later versions) pass through unchecked.
RESULT_RECORD = RecordType(
    "a sweep result",
    {
        "cell": Text("the cell's id"),
        "family": Text("a workload family name"),
        "params": Object("an object of workload parameters"),
        "seed": Int("an integer instance seed"),
        "policy": Text("a policy name"),
        "error": Text("an error message"),
        "budget": Anything("an integer or an expression"),
        "batch": Anything("an integer or an expression"),
    },
    required=frozenset({"cell", "family", "params", "seed", "policy"}),
    extra=True,
)
_MEASURED = RecordType(
    "an error-free sweep result",
    {
        "budget": Int("a positive integer", lo=1),
        "batch": Int("a positive integer", lo=1),
        "k": Int("an integer"),  # null (read as absent) when k < 1, with a k_reason
        "ratios": Numbers("a list of ratios"),
        "steady_ratios": Numbers("a list of ratios"),
        "ratio_mean": Number("a number"),
        "ratio_ci95": Numbers("a pair of numbers", length=2),
        "worst_ratio": Number("a number"),
        "worst_seed": Int("an integer seed"),
        "randomized": Bool(),
    },
    required=frozenset({"budget", "batch", "ratios", "worst_seed"}),
    extra=True,
)


def read_results(path: str | Path) -> list[dict]:
    """The records of a results file, each checked (:data:`RESULT_RECORD`), blank lines skipped.

    A last line without its newline is a record still being written (or a killed writer's): it is left
    out, and a resumed sweep runs its cell again. A cell id on two lines (a file that two sweeps wrote at
    once, before outputs were locked) is an InputError naming both lines, as is any malformed line.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read results ({exc.strerror})") from None
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    records, first_line = [], {}
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        record = RESULT_RECORD.parse(line, where)
        if "error" not in record:
            record = _MEASURED.check(record, where)
        cell = record["cell"]
        if cell in first_line:
            raise InputError(
                f"{where}: cell {cell} is already on line {first_line[cell]}; a results file holds each cell "
                "once (two sweeps wrote this file at once?): delete one of the two lines"
            )
        first_line[cell] = number
        records.append(record)
    return records


def completed_ids(output: str | Path) -> set[str]:
    """Ids of the cells already in ``output`` (none if it does not exist); see :func:`read_results`."""
    if not Path(output).exists():
        return set()
    return {record["cell"] for record in read_results(output)}


def _cut_torn_line(path: Path) -> None:
    """Remove a last line that lacks its newline (a killed writer's), so appending starts a fresh line."""
    if not path.exists():
        return
    with open(path, "r+b") as handle:
        size = handle.seek(0, 2)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        data = path.read_bytes()
        handle.truncate(data.rfind(b"\n") + 1)


def progress_bar(total: int, initial: int, enabled: bool | None):
    from tqdm import tqdm

    if enabled is None:
        enabled = sys.stderr.isatty()
    return tqdm(total=total, initial=initial, disable=not enabled, unit="cell", file=sys.stderr, dynamic_ncols=True)


def run_cells(
    cells: Sequence[Cell],
    output: str | Path,
    executor,
    *,
    progress: bool | None = None,
    function: Callable[[Cell], dict] | None = None,
) -> SweepSummary:
    """Run the cells not yet in ``output`` on ``executor``; append one flushed JSON line per finished cell.

    The same loop serves every executor: ``submit`` each pending cell, then take the futures
    ``as_completed`` and write each record as soon as it arrives. Records carry no timing, so a cell's
    line is the same whichever executor or worker computed it.
    """
    start = time.perf_counter()
    with exclusive_writer(output, "sweep output"):
        _cut_torn_line(Path(output))
        _drop_failed(Path(output))
        done = completed_ids(output)
        todo = [cell for cell in cells if cell["id"] not in done]
        skipped = len(cells) - len(todo)
        if function is None:  # every cell knows the size of the job it is part of (run_cell)
            function = functools.partial(run_cell, job_cells=len(todo))
        errors = _append_records(todo, output, executor, len(cells), skipped, progress, function)
    return SweepSummary(len(cells), skipped, len(todo), errors, time.perf_counter() - start, str(output))


def _drop_failed(output: Path) -> None:
    """Remove the lines of failed cells (records with an ``error``) so that this run tries them again:
    a failed cell is not done. The other lines stay byte for byte; the file is replaced whole (a
    temporary file, then a rename)."""
    if not output.exists() or not any("error" in record for record in read_results(output)):
        return
    lines = output.read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if line.strip() and "error" not in orjson.loads(line)]
    partial = output.with_name(output.name + ".partial")
    partial.write_bytes(b"".join(kept))
    os.replace(partial, output)


def _append_records(todo, output, executor, total: int, skipped: int, progress, function) -> int:
    """Submit every cell of ``todo``; append each record as one whole line, flushed, as it arrives."""
    errors = 0
    try:
        handle = open(output, "ab")
    except OSError as exc:
        raise InputError(f"{output}: cannot write results ({exc.strerror})") from None
    with handle, progress_bar(total, skipped, progress) as bar:
        futures = [executor.submit(function, cell, cell["id"]) for cell in todo]
        for future in executor.as_completed(futures):
            record = future.result()
            errors += "error" in record
            handle.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
            handle.flush()
            bar.update(1)
    return errors


def run_sweep(
    spec: str | Path | Mapping,
    output: str | Path,
    *,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    client=None,
    progress: bool | None = None,
) -> SweepSummary:
    """Expand ``spec`` (a TOML path or a parsed dict) and run its cells into ``output`` (JSON Lines).

    ``client``: an existing ``distributed.Client`` to run on (implies the Dask executor).
    """
    where = str(spec) if isinstance(spec, (str, Path)) else "spec"
    parsed = load_spec(spec) if isinstance(spec, (str, Path)) else spec
    cells = expand(parsed, where=where, base=Path(spec).parent if isinstance(spec, (str, Path)) else None)
    if client is not None:
        runner = DaskExecutor(client=client)
    else:
        runner = make_executor(executor, workers=workers, scheduler=scheduler)
    aborted = False
    try:
        return run_cells(cells, output, runner, progress=progress)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the cells in flight are dropped; a rerun does them
        aborted = True
        raise
    finally:
        runner.close(abort=aborted)


def stability_rows(records: Iterable[Mapping]) -> list[dict]:
    """Seed stability of the randomized cells, one row per (family, policy).

    Each row: cells, the largest 95% CI half-width relative to the mean, the widest per-seed spread
    (max/min ratio over seeds in one cell) and the single worst (cell, seed, ratio).
    """
    rows: dict[tuple[str, str], dict] = {}
    for record in records:
        ratios = [r for r in record.get("ratios") or () if isinstance(r, (int, float)) and math.isfinite(r)]
        mean, interval, worst = record.get("ratio_mean"), record.get("ratio_ci95"), record.get("worst_ratio")
        if "error" in record or len(ratios) < 2 or len(ratios) < len(record["ratios"]):
            continue
        if mean is None or worst is None or interval is None or None in interval:
            continue
        row = rows.setdefault(
            (record["family"], record["policy"]),
            {
                "family": record["family"],
                "policy": record["policy"],
                "cells": 0,
                "seeds": 0,
                "ci_rel": 0.0,
                "spread": 1.0,
                "worst_ratio": -math.inf,
                "worst_seed": None,
                "worst_cell": None,
            },
        )
        row["cells"] += 1
        row["seeds"] = max(row["seeds"], len(record["ratios"]))
        low, high = interval
        if mean and math.isfinite(mean):
            row["ci_rel"] = max(row["ci_rel"], (high - low) / 2 / mean)
        lowest, highest = min(ratios), max(ratios)
        if lowest > 0 and math.isfinite(highest):
            row["spread"] = max(row["spread"], highest / lowest)
        if worst > row["worst_ratio"]:
            row.update(worst_ratio=worst, worst_seed=record["worst_seed"], worst_cell=record["cell"])
    return list(rows.values())
