"""Sweep specs (TOML) expanded into cells, and the arithmetic expressions cells may use for B and beta.

See :mod:`kvtheory.experiments.sweep` for the spec format.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import math
import tomllib
import typing
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson

from kvtheory.errors import InputError
from kvtheory.model.records import MAX_SEED, MAX_TOKENS, show

POLICY_PLACEHOLDER = "$policy"
MAX_SEEDS = 10**6  # instance or policy seeds given as a count N
_TOP_KEYS = {"policies", "seeds", "policy_seeds", "budget", "batch", "evict_amount", "grid", "name", "description"}
_GRID_KEYS = {"family", "params", "policies", "seeds", "policy_seeds", "budget", "batch", "evict_amount", "name"}
_FILE_KEYS = {"workload", "format", "block_size", "policies", "policy_seeds", "budget", "batch", "evict_amount", "name"}
DEFAULT_EVICT_AMOUNT = "shortfall"  # a cell evicting the shortfall leaves the key out: its id predates the option
FILE_FAMILY = "file"  # the family of a cell whose workload is a file: params {"workload", "format", "block_size"}

Cell = dict  # {"family", "params", "seed", "budget", "batch", "policy", "policy_seeds"[, "evict_amount"]}


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
        if value > MAX_SEEDS:
            raise InputError(f"{what} = {value}: at most {MAX_SEEDS} seeds")
        return list(range(value))
    if isinstance(value, list) and value and all(type(v) is int and 0 <= v <= MAX_SEED for v in value):
        return list(value)
    raise InputError(
        f"{what} must be an integer N (0..N-1) or a non-empty list of seeds (integers in 0 .. 2^63 - 1), "
        f"got {show(value)}"
    )


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
        raise InputError(f"{where}: {what} must be an integer or an expression string, got {show(value)}")
    if isinstance(value, int) and not 1 <= value <= MAX_TOKENS:
        raise InputError(f"{where}: {what} must be an integer in 1 .. 2^40 (or an expression), got {show(value)}")
    if isinstance(value, str):
        try:
            _parse_expression(value, what)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None


def _file_params(grid: Mapping, here: str, base: Path | None) -> dict:
    """The params of a grid that names a workload file: its path (relative ones from ``base``), format and
    block size, checked by the trace readers' rules."""
    from kvtheory.model.traces import DEFAULT_BLOCK_SIZE, TRACE_FORMATS, format_names

    unknown = set(grid) - _FILE_KEYS
    if unknown:
        raise InputError(f"{here}: unknown key(s) {sorted(unknown)} for a workload file; allowed: {sorted(_FILE_KEYS)}")
    path, fmt = grid["workload"], grid.get("format", "auto")
    if not isinstance(path, str) or not path:
        raise InputError(f"{here}: workload must be a file path, got {path!r}")
    if fmt not in format_names():
        raise InputError(f"{here}: unknown format {fmt!r}; known formats: {', '.join(format_names())}")
    # a format's own block size when it names one (bailian: 16); auto and the others keep 512, so their cells
    # keep the ids they had before formats carried a block size
    default = (TRACE_FORMATS[fmt].block_size if fmt != "auto" else None) or DEFAULT_BLOCK_SIZE
    block_size = grid.get("block_size", default)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise InputError(f"{here}: block_size must be a positive integer, got {block_size!r}")
    resolved = Path(path) if base is None or Path(path).is_absolute() else Path(base) / path
    return {"workload": str(resolved), "format": fmt, "block_size": block_size}


def expand(spec: Mapping, *, where: str = "spec", base: str | Path | None = None) -> list[Cell]:
    """All cells of a spec, in a fixed order (grids, parameters, seeds, budget, batch, policy).

    Each cell carries its ``id``; a cell repeated in the spec appears once. A grid may name a workload
    file (``workload``, with ``format`` and ``block_size``) instead of a ``family``: its cells have family
    ``file``; relative paths are taken from ``base`` (the spec's folder), else the current folder.
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
        file_params = _file_params(grid, here, base) if "workload" in grid else None
        unknown = set(grid) - _GRID_KEYS - (_FILE_KEYS if file_params else set())
        if unknown:
            raise InputError(f"{here}: unknown key(s) {sorted(unknown)}; allowed: {', '.join(sorted(_GRID_KEYS))}")
        family = FILE_FAMILY if file_params else grid.get("family")
        if not file_params and (not isinstance(family, str) or family not in GENERATORS):
            raise InputError(f"{here}: unknown family {show(family)}; known: {', '.join(sorted(GENERATORS))}")
        setting = {
            key: grid.get(key, spec.get(key))
            for key in ("policies", "seeds", "policy_seeds", "budget", "batch", "evict_amount")
        }
        if setting["budget"] is None:
            raise InputError(f'{here}: no budget (give budget = B or an expression such as "k + L - 1")')
        policies = _axis(setting["policies"] if setting["policies"] is not None else [])
        if not policies:
            raise InputError(f"{here}: no policies")
        if not all(isinstance(name, str) for name in policies):
            raise InputError(f"{here}: policies must be policy names, got {show(policies)}")
        try:
            classes = {name: policy_class(name) for name in policies}
        except InputError as exc:
            raise InputError(f"{here}: {exc}") from None
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
        amounts = _evict_amounts(setting["evict_amount"], here)
        params = grid.get("params", {})
        if not isinstance(params, dict):
            raise InputError(f"{here}: params must be a table")
        if file_params:
            seeds = [0]  # a file is one instance
        axes = (
            [(name, [value]) for name, value in file_params.items()]
            if file_params
            else _param_axes(family, params, here)
        )
        names = [name for name, _ in axes]
        for combo in itertools.product(*(values for _, values in axes)):
            for seed, budget, batch, amount, policy in itertools.product(seeds, budgets, batches, amounts, policies):
                resolved = {
                    name: (policy if value == POLICY_PLACEHOLDER else value) for name, value in zip(names, combo)
                }
                resolved = _budget_parameter(family, resolved, budget, here)
                cell = {
                    "family": family,
                    "params": resolved,
                    "seed": seed,
                    "budget": budget,
                    "batch": batch,
                    "policy": classes[policy].name,
                    "policy_seeds": policy_seeds if classes[policy].randomized else policy_seeds[:1],
                }
                if amount != DEFAULT_EVICT_AMOUNT:
                    cell["evict_amount"] = amount
                try:
                    cell["id"] = cell_id(cell)
                except (TypeError, orjson.JSONEncodeError):
                    raise InputError(f"{here}: a parameter value does not fit in 64 bits: {show(resolved)}") from None
                if cell["id"] not in seen:
                    _check_names(cell, here)
                    seen.add(cell["id"])
                    cells.append(cell)
    return cells


def _budget_parameter(family: str, params: dict, budget, where: str) -> dict:
    """``params`` with the family's budget parameter B set to an integer ``budget`` when the spec leaves it
    out (as ``kvtheory.workloads.registry.generate`` builds it, so that the cell id names the instance); a B
    that differs from an integer budget is an InputError. Budget expressions leave ``params`` as they are."""
    from kvtheory.workloads.registry import BUDGET_PARAMETER, GENERATORS

    if family == FILE_FAMILY or isinstance(budget, str) or BUDGET_PARAMETER not in GENERATORS[family].parameters():
        return params
    given = params.get(BUDGET_PARAMETER)
    if given is None:
        return {**params, BUDGET_PARAMETER: budget}
    if given != budget:
        raise InputError(
            f"{where}: {family} parameter B = {show(given)} differs from budget = {budget}; "
            'give one of them (budget = "B" serves each instance with its own B)'
        )
    return params


def _evict_amounts(value, where: str) -> list[str]:
    """The ``evict_amount`` axis: a name of :data:`~kvtheory.policies.base.EVICT_AMOUNTS` or a list of them."""
    from kvtheory.policies.base import EVICT_AMOUNTS

    amounts = _axis(DEFAULT_EVICT_AMOUNT if value is None else value)
    if not amounts or any(amount not in EVICT_AMOUNTS for amount in amounts):
        raise InputError(
            f"{where}: evict_amount must be one of {', '.join(EVICT_AMOUNTS)} or a list of them, got {show(value)}"
        )
    return amounts


#: names an expression may use besides the cell's numeric workload parameters (known once it is generated)
WORKLOAD_NAMES = ("L_max", "distinct", "queries", "tokens")


def _check_names(cell: Cell, where: str) -> None:
    """Every name in the cell's budget and batch expressions must exist for it: checked before any cell
    runs, so that a typo stops the sweep at once instead of failing every cell."""
    numeric = {k for k, v in cell["params"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for what, extra in (("batch", ()), ("budget", ("batch",))):
        text = cell[what]
        if not isinstance(text, str):
            continue
        known = numeric | set(WORKLOAD_NAMES) | set(extra)
        tree = _parse_expression(text, what)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id not in known and node.id not in _FUNCTIONS:
                raise InputError(
                    f"{where}: {what} expression {text!r}: unknown name {node.id!r} "
                    f"(known for {cell['family']}: {', '.join(sorted(known))})"
                )


# -- arithmetic expressions for budget and batch ----------------------------------------------------
_FUNCTIONS: dict[str, Callable] = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor, "round": round}
_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: _power(a, b),
}
_LARGEST = 2.0**63  # an expression's values stay below this in magnitude (int64)


def _power(base, exponent):
    """``base ** exponent``, refused before it is computed when the result would pass 2^63."""
    if abs(base) > 1 and abs(exponent) * math.log2(abs(base)) >= 63 and exponent > 0:
        raise OverflowError("result too large")
    return base**exponent


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
            result = _OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        else:
            result = _FUNCTIONS[node.func.id](*(walk(arg) for arg in node.args))
        if isinstance(result, (int, float)) and abs(result) >= _LARGEST:
            raise OverflowError("result too large")
        return result

    try:
        value = walk(tree)
    except InputError:
        raise
    except (ZeroDivisionError, OverflowError, TypeError, ValueError) as exc:
        raise InputError(f"{what} expression {text!r}: {exc}") from None
    if not math.isfinite(value) or abs(value) >= _LARGEST:
        raise InputError(f"{what} expression {text!r} is not a finite number below 2^63")
    return int(math.floor(value))
