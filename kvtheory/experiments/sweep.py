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

    [[grid]]
    family = "cyclic"                       # any name of `kvtheory generate --list`
    params = { k = [2, 4, 8], L = 4, n = 2000 }

A list value is an axis of the grid (for a list-typed parameter such as ``gsp.lengths``, a list of lists
is); ``budget``, ``batch``, ``seeds`` and ``policies`` are axes too. The string ``"$policy"`` as a
parameter value is replaced by the cell's policy (``adaptive`` against the policy it measures).
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

import ast
import functools
import hashlib
import itertools
import math
import os
import sys
import time
import tomllib
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from kvtheory.errors import InputError

POLICY_PLACEHOLDER = "$policy"
_TOP_KEYS = {"policies", "seeds", "policy_seeds", "budget", "batch", "grid", "name", "description"}
_GRID_KEYS = {"family", "params", "policies", "seeds", "policy_seeds", "budget", "batch", "name"}

Cell = dict  # {"family", "params", "seed", "budget", "batch", "policy", "policy_seeds"}


# -- the spec -> cells ------------------------------------------------------------------------------
def cell_id(cell: Mapping) -> str:
    """Stable id of a cell: the first 16 hex digits of SHA-256 over its canonical (sorted-key) JSON.

    >>> cell_id({"family": "cyclic", "params": {"k": 2}, "seed": 0})
    '863b634e1adee5be'
    """
    canonical = {key: value for key, value in cell.items() if key != "id"}
    return hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def load_spec(path: str | Path) -> dict:
    """Read a TOML sweep spec; an unreadable or malformed file is an InputError naming it."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise InputError(f"{path}: cannot read sweep spec ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None


def _seed_list(value, what: str) -> list[int]:
    if isinstance(value, bool):
        raise InputError(f"{what} must be an integer N (0..N-1) or a list of integers, got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise InputError(f"{what} = {value}: give at least one seed")
        return list(range(value))
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    raise InputError(f"{what} must be an integer N (0..N-1) or a non-empty list of integers, got {value!r}")


def _axis(value) -> list:
    return list(value) if isinstance(value, list) else [value]


def _is_list_type(annotation) -> bool:
    return typing.get_origin(annotation) in (list, tuple)


def _param_axes(family: str, params: Mapping, where: str) -> list[tuple[str, list]]:
    """(name, values) per parameter: a list is an axis, except a flat list given to a list-typed one."""
    from kvtheory.workloads.registry import GENERATORS

    generator = GENERATORS[family]
    accepted = generator.parameters()
    hints = typing.get_type_hints(generator.function)
    axes = []
    for name, value in params.items():
        if name not in accepted:
            raise InputError(f"{where}: {family} takes no parameter {name!r}; it takes: {', '.join(accepted)}")
        if _is_list_type(hints.get(name)):
            values = value if isinstance(value, list) and value and all(isinstance(v, list) for v in value) else [value]
        else:
            values = _axis(value)
        if not values:
            raise InputError(f"{where}: parameter {name!r} has an empty list of values")
        axes.append((name, values))
    return axes


def _check_expression_or_int(value, what: str, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"{where}: {what} must be an integer or an expression string, got {value!r}")
    if isinstance(value, str):
        _parse_expression(value, what)


def expand(spec: Mapping, *, where: str = "spec") -> list[Cell]:
    """All cells of a spec, in a fixed order (grids, parameters, seeds, budget, batch, policy).

    Each cell carries its ``id``; a cell repeated in the spec appears once.
    """
    import adversaries  # noqa: F401  (registers the adversary families)
    import kvtheory.workloads  # noqa: F401  (registers the workload generators)
    from kvtheory.policies import policy_class
    from kvtheory.workloads.registry import GENERATORS

    unknown = set(spec) - _TOP_KEYS
    if unknown:
        raise InputError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    grids = spec.get("grid")
    if not isinstance(grids, list) or not grids:
        raise InputError(f"{where}: no [[grid]] table: a spec needs at least one grid")
    cells: list[Cell] = []
    seen: set[str] = set()
    for number, grid in enumerate(grids):
        here = f"{where}: grid {number}"
        if not isinstance(grid, dict):
            raise InputError(f"{here}: must be a table")
        unknown = set(grid) - _GRID_KEYS
        if unknown:
            raise InputError(f"{here}: unknown key(s) {sorted(unknown)}; allowed: {', '.join(sorted(_GRID_KEYS))}")
        family = grid.get("family")
        if family not in GENERATORS:
            raise InputError(f"{here}: unknown family {family!r}; known: {', '.join(sorted(GENERATORS))}")
        setting = {
            key: grid.get(key, spec.get(key)) for key in ("policies", "seeds", "policy_seeds", "budget", "batch")
        }
        if setting["budget"] is None:
            raise InputError(f'{here}: no budget (give budget = B or an expression such as "k + L - 1")')
        policies = _axis(setting["policies"] if setting["policies"] is not None else [])
        if not policies:
            raise InputError(f"{here}: no policies")
        classes = {name: policy_class(name) for name in policies}
        seeds = _seed_list(setting["seeds"] if setting["seeds"] is not None else [0], f"{here}: seeds")
        policy_seeds = _seed_list(
            setting["policy_seeds"] if setting["policy_seeds"] is not None else 1, f"{here}: policy_seeds"
        )
        budgets = _axis(setting["budget"])
        batches = _axis(setting["batch"] if setting["batch"] is not None else 1)
        for value in budgets:
            _check_expression_or_int(value, "budget", here)
        for value in batches:
            _check_expression_or_int(value, "batch", here)
        params = grid.get("params", {})
        if not isinstance(params, dict):
            raise InputError(f"{here}: params must be a table")
        axes = _param_axes(family, params, here)
        names = [name for name, _ in axes]
        for combo in itertools.product(*(values for _, values in axes)):
            for seed, budget, batch, policy in itertools.product(seeds, budgets, batches, policies):
                resolved = {
                    name: (policy if value == POLICY_PLACEHOLDER else value) for name, value in zip(names, combo)
                }
                cell = {
                    "family": family,
                    "params": resolved,
                    "seed": seed,
                    "budget": budget,
                    "batch": batch,
                    "policy": classes[policy].name,
                    "policy_seeds": policy_seeds if classes[policy].randomized else policy_seeds[:1],
                }
                cell["id"] = cell_id(cell)
                if cell["id"] not in seen:
                    seen.add(cell["id"])
                    cells.append(cell)
    return cells


# -- arithmetic expressions for budget and batch ----------------------------------------------------
_FUNCTIONS: dict[str, Callable] = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor, "round": round}
_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


@functools.lru_cache(maxsize=256)
def _parse_expression(text: str, what: str) -> ast.Expression:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise InputError(f"{what} expression {text!r} is not valid arithmetic") from None
    for node in ast.walk(tree):
        allowed = isinstance(
            node,
            (
                ast.Expression,
                ast.BinOp,
                ast.UnaryOp,
                ast.Constant,
                ast.Name,
                ast.Call,
                ast.Load,
                ast.operator,
                ast.UAdd,
                ast.USub,
            ),
        )
        if isinstance(node, ast.BinOp) and type(node.op) not in _OPERATORS:
            allowed = False
        if isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, (int, float))
        ):
            allowed = False
        if isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS or node.keywords
        ):
            allowed = False
        if not allowed:
            raise InputError(
                f"{what} expression {text!r}: only numbers, names, + - * / // % ** and "
                f"{', '.join(_FUNCTIONS)} are allowed"
            )
    return tree


def evaluate(text: str, names: Mapping[str, float], what: str = "budget") -> int:
    """Evaluate an arithmetic expression over ``names``; a non-integer result is rounded down.

    >>> evaluate("k + L - 1", {"k": 4, "L": 8})
    11
    >>> evaluate("max(L_max, distinct // 4)", {"L_max": 9, "distinct": 100})
    25
    """
    tree = _parse_expression(text, what)

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                known = ", ".join(sorted(names))
                raise InputError(f"{what} expression {text!r}: unknown name {node.id!r} (known: {known})")
            return names[node.id]
        if isinstance(node, ast.UnaryOp):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            return _OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        return _FUNCTIONS[node.func.id](*(walk(arg) for arg in node.args))

    try:
        value = walk(tree)
    except (ZeroDivisionError, OverflowError, TypeError, ValueError) as exc:
        raise InputError(f"{what} expression {text!r}: {exc}") from None
    if not math.isfinite(value):
        raise InputError(f"{what} expression {text!r} is not finite")
    return int(math.floor(value))


# -- running one cell -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _workload(key: bytes):
    from kvtheory.workloads.registry import generate

    family, params, seed = orjson.loads(key)
    return generate(family, params, seed=seed)


@functools.lru_cache(maxsize=16)
def _opt_misses(key: bytes, budget: int, batch: int) -> int:
    from kvtheory.simulate import run_fif

    return run_fif(_workload(key), budget, batch=batch).misses


def _names(params: Mapping, workload) -> dict[str, float]:
    names = {k: v for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    names.update(
        L_max=workload.max_length,
        distinct=workload.trie.distinct_tokens,
        queries=len(workload),
        tokens=workload.total_tokens,
    )
    return names


def _quantiles(values: Sequence[float]) -> list[float]:
    return [float(q) for q in np.quantile(np.asarray(values, dtype=float), [0.0, 0.25, 0.5, 0.75, 1.0])]


def run_cell(cell: Cell) -> dict:
    """Measure one cell; the record holds the cell's definition and the ratio report.

    An input error of the cell (an impossible budget, a bad parameter) becomes a record with an
    ``error`` message instead of stopping the sweep: the cell is done, and will fail the same way again.
    """
    from kvtheory.ratio import competitive_ratio, harmonic, steady_ratio
    from kvtheory.simulate import validate

    base = {key: cell[key] for key in ("family", "params", "seed", "policy")}
    record: dict = {"cell": cell.get("id") or cell_id(cell), **base}
    try:
        key = orjson.dumps([cell["family"], cell["params"], cell["seed"]])
        workload = _workload(key)
        names = _names(cell["params"], workload)
        batch = cell["batch"] if isinstance(cell["batch"], int) else evaluate(cell["batch"], names, "batch")
        budget = (
            cell["budget"] if isinstance(cell["budget"], int) else evaluate(cell["budget"], {**names, "batch": batch})
        )
        validate(workload, budget, batch)
        opt = _opt_misses(key, budget, batch)
        report = competitive_ratio(
            workload, budget, cell["policy"], batch=batch, seeds=cell["policy_seeds"], opt_misses=opt
        )
    except InputError as exc:
        record.update(budget=cell["budget"], batch=cell["batch"], error=str(exc))
        return record
    result = report.to_dict()
    distinct = workload.trie.distinct_tokens
    steady = [steady_ratio(run.misses, opt, distinct) for run in report.runs]
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
        H_k=harmonic(k) if k >= 1 else None,
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


# -- executors ----------------------------------------------------------------------------------------
class LocalExecutor:
    """A process pool (``concurrent.futures.ProcessPoolExecutor``) of ``workers`` processes."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or default_workers()
        self._pool = ProcessPoolExecutor(max_workers=self.workers)

    def submit(self, function: Callable, argument, key: str):
        return self._pool.submit(function, argument)

    def as_completed(self, futures: Iterable) -> Iterator:
        from concurrent.futures import as_completed

        return as_completed(futures)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


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

    def submit(self, function: Callable, argument, key: str):
        return self.client.submit(function, argument, key=f"kvtheory-cell-{key}", pure=False)

    def as_completed(self, futures: Iterable) -> Iterator:
        from distributed import as_completed

        return as_completed(list(futures))

    def close(self) -> None:
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


def completed_ids(output: str | Path) -> set[str]:
    """Ids of the cells already in ``output``, after cutting a torn last line (a killed writer's).

    A line that is not a JSON object with a ``cell`` id is an InputError naming it, except the last
    line when it lacks its newline: that one is removed, and its cell runs again.
    """
    path = Path(output)
    if not path.exists():
        return set()
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as handle:
            handle.truncate(cut)
        data = data[:cut]
    done = set()
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            done.add(record["cell"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise InputError(
                f"{path}:{number}: not a sweep result line (expected a JSON object with a 'cell' id)"
            ) from None
    return done


def _progress(total: int, initial: int, enabled: bool | None):
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
    function: Callable[[Cell], dict] = run_cell,
) -> SweepSummary:
    """Run the cells not yet in ``output`` on ``executor``; append one flushed JSON line per finished cell.

    The same loop serves every executor: ``submit`` each pending cell, then take the futures
    ``as_completed`` and write each record as soon as it arrives. Records carry no timing, so a cell's
    line is the same whichever executor or worker computed it.
    """
    start = time.perf_counter()
    done = completed_ids(output)
    todo = [cell for cell in cells if cell["id"] not in done]
    skipped = len(cells) - len(todo)
    errors = 0
    with open(output, "ab") as handle, _progress(len(cells), skipped, progress) as bar:
        futures = [executor.submit(function, cell, cell["id"]) for cell in todo]
        for future in executor.as_completed(futures):
            record = future.result()
            errors += "error" in record
            handle.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
            handle.flush()
            bar.update(1)
    return SweepSummary(len(cells), skipped, len(todo), errors, time.perf_counter() - start, str(output))


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
    cells = expand(parsed, where=where)
    if client is not None:
        runner = DaskExecutor(client=client)
    else:
        runner = make_executor(executor, workers=workers, scheduler=scheduler)
    try:
        return run_cells(cells, output, runner, progress=progress)
    finally:
        runner.close()


def read_results(path: str | Path) -> list[dict]:
    """The records of a results file (torn or blank lines skipped)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read results ({exc.strerror})") from None
    records = []
    for line in data.split(b"\n"):
        if line.strip():
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return records


def stability_rows(records: Iterable[Mapping]) -> list[dict]:
    """Seed stability of the randomized cells, one row per (family, policy).

    Each row: cells, the largest 95% CI half-width relative to the mean, the widest per-seed spread
    (max/min ratio over seeds in one cell) and the single worst (cell, seed, ratio).
    """
    rows: dict[tuple[str, str], dict] = {}
    for record in records:
        ratios = [r for r in record.get("ratios") or () if isinstance(r, (int, float)) and math.isfinite(r)]
        if "error" in record or len(ratios) < 2 or len(ratios) < len(record["ratios"]):
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
        mean, (low, high) = record["ratio_mean"], record["ratio_ci95"]
        if mean and math.isfinite(mean):
            row["ci_rel"] = max(row["ci_rel"], (high - low) / 2 / mean)
        lowest, highest = min(ratios), max(ratios)
        if lowest > 0 and math.isfinite(highest):
            row["spread"] = max(row["spread"], highest / lowest)
        if record["worst_ratio"] > row["worst_ratio"]:
            row.update(worst_ratio=record["worst_ratio"], worst_seed=record["worst_seed"], worst_cell=record["cell"])
    return list(rows.values())
