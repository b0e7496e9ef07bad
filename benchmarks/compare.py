"""Compare a benchmark's new run with its stored one: names every timing figure more than 20% slower and
every result that must be identical but differs; exits 1 if there is any, 0 otherwise (2 on bad input).

    python benchmarks/flat_trace.py --json --repeats 3 > new.json
    python benchmarks/compare.py new.json docs/results/flat-trace.jsonl
    python benchmarks/compare.py new.json old.json --threshold 0.5     # name only figures 1.5x slower

Each file is a benchmark's JSON output, a stored record (``scripts/docs_results.py record``: the command,
its commit and its ``output``), or a stored result file of such records (docs/results/NAME.jsonl). Of a
file of several records, the one compared is the record of ``--command``, else of the new run's command
when the new run is a record, else the only one.

Figures are found by their key anywhere in the JSON, at the same path in both runs (a list of objects is
matched item by item by the fields that name an item: workload, router, eviction, policy, solver, beta,
budget, B, seed, workers, queries; by position when those do not tell the items apart):

* a time, lower is better: a key ``seconds`` or ending in ``_seconds`` or ``_s`` (not ``time_limit...``,
  a setting), and every number inside an object under such a key; slower when new / old > 1 + threshold;
* a rate, higher is better: a key ending in ``per_second``, ``per_cpu_second`` or ``per_s``; slower when
  old / new > 1 + threshold (the time per unit grew by that factor), the ratio reported so;
* a result, which a rerun of the same command must reproduce exactly: ``misses``, ``hits``, ``hit_rate``,
  ``opt``, ``fif`` and ``fif_misses`` (numbers, not objects), ``identical_records``, ``identical_to_reference_on_slice``
  and ``exhaustive_agrees``; a benchmark that serves different hits is a bug, not noise. A result in an
  object whose ``status`` is not ``optimal`` (a solver stopped at its time limit) is the incumbent of that
  moment, which depends on speed, and is not compared.

Everything else (settings, sizes, ratios derived from the figures above, peak memory, ``provenance``) is
not compared. A figure of one run missing from the other is counted, not failed: two runs of different
settings compare only where they overlap, and the last line says how many were left out. Where both runs
store their provenance, a line gives the load average each started under: on a shared machine a wall-clock
figure slower under a higher load is the machine's, the CPU figures much less so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

THRESHOLD = 0.2
#: fields of a list item that tell the items apart, in the order they appear in its label
IDENTITY = ("workload", "router", "eviction", "policy", "solver", "beta", "budget", "B", "seed", "workers", "queries")
EXACT = {
    "misses",
    "hits",
    "hit_rate",
    "opt",
    "fif",
    "fif_misses",
    "identical_records",
    "identical_to_reference_on_slice",
    "exhaustive_agrees",
}


class CompareError(Exception):
    """Input the comparison cannot use: reported in one line, exit status 2."""


def kind(key: str) -> str | None:
    """``"time"``, ``"rate"`` or ``"exact"`` for a figure's key (see the module docstring), else None."""
    if key.endswith(("per_second", "per_cpu_second", "per_s")):
        return "rate"
    if key.startswith("time_limit"):
        return None
    if key == "seconds" or key.endswith(("_seconds", "_s")):
        return "time"
    if key in EXACT:
        return "exact"
    return None


def _labels(items: list) -> list[str]:
    """A label per list item: its identifying fields, or its position where those repeat or are absent."""
    labels = []
    for position, item in enumerate(items):
        fields = [f"{k}={item[k]}" for k in IDENTITY if isinstance(item, dict) and isinstance(item.get(k), str | int)]
        labels.append(",".join(fields) or str(position))
    return labels if len(set(labels)) == len(labels) else [str(i) for i in range(len(items))]


def figures(value, path: str = "", inherited: str | None = None) -> dict[str, tuple[str, object]]:
    """Every figure of a benchmark's output: path -> (kind, value). ``inherited``: the kind of the key an
    object sits under, which only a time passes on (every number in ``"total_seconds": {...}`` is one)."""
    found: dict[str, tuple[str, object]] = {}
    if isinstance(value, list):
        if all(isinstance(item, dict) for item in value):
            for label, item in zip(_labels(value), value, strict=True):
                found.update(figures(item, f"{path}[{label}]", inherited))
        return found
    settled = value.get("status", "optimal") == "optimal"
    for key, child in value.items():
        where, what = f"{path}.{key}" if path else key, inherited or kind(key)
        if key == "provenance":
            continue
        if isinstance(child, dict | list):
            found.update(figures(child, where, what if what == "time" else None))
        elif what == "exact" and settled:
            found[where] = (what, child)
        elif what in ("time", "rate") and isinstance(child, int | float) and not isinstance(child, bool):
            found[where] = (what, child)
    return found


def _shown(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def compare(new: dict, old: dict, threshold: float = THRESHOLD) -> tuple[list[str], dict]:
    """The lines naming each figure of ``new`` more than ``1 + threshold`` times slower than in ``old`` and
    each result that differs, and counts of what was compared."""
    before, after = figures(old), figures(new)
    lines = []
    counts = {"timings": 0, "results": 0, "slower": 0, "different": 0, "unmatched": 0}
    for path in sorted(before.keys() | after.keys()):
        if path not in before or path not in after or before[path][0] != after[path][0]:
            counts["unmatched"] += 1
            continue
        what, was = before[path]
        now = after[path][1]
        if what == "exact":
            counts["results"] += 1
            if now != was:
                counts["different"] += 1
                lines.append(f"different: {path}: {was} -> {now}")
            continue
        counts["timings"] += 1
        if was <= 0 or now <= 0:  # rounded to zero: no ratio to speak of
            continue
        ratio = now / was if what == "time" else was / now
        if ratio > 1 + threshold:
            counts["slower"] += 1
            lines.append(f"slower: {path}: {_shown(was)} -> {_shown(now)} ({ratio:.2f}x)")
    return lines, counts


def _records(path: Path) -> list[dict]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise CompareError(f"cannot read {path}: {exc.strerror}") from None
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        raise CompareError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None


def load(path: Path, command: str | None) -> tuple[dict, str | None]:
    """The benchmark output a file holds (see the module docstring) and the command it came from, if stored."""
    records = _records(path)
    if not records or not all(isinstance(r, dict) for r in records):
        raise CompareError(f"{path}: holds no JSON object")
    stored = [r for r in records if "command" in r and "output" in r]
    if len(records) == 1 and not stored:
        return records[0], None
    if len(stored) != len(records):
        raise CompareError(f"{path}: a file of several lines must hold stored records (command and output)")
    chosen = [r for r in stored if r["command"] == command] if command else stored
    if len(chosen) != 1:
        commands = "; ".join(r["command"] for r in stored)
        if command:
            raise CompareError(f"{path}: holds no record of {command!r}, only: {commands}")
        raise CompareError(f"{path}: holds {len(stored)} records ({commands}); choose one with --command")
    return chosen[0]["output"], chosen[0]["command"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("new", type=Path, help="the new run: a benchmark's JSON output or a stored record")
    parser.add_argument("stored", type=Path, help="the stored run: JSON, or docs/results/NAME.jsonl")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="name figures slower than 1 + this")
    parser.add_argument("--command", help="the stored command to compare with, in a file of several")
    args = parser.parse_args(argv)
    try:
        if args.threshold < 0:
            raise CompareError(f"--threshold must be >= 0, not {args.threshold}")
        new, new_command = load(args.new, args.command)
        old, old_command = load(args.stored, args.command or new_command)
    except CompareError as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    lines, counts = compare(new, old, args.threshold)
    print("\n".join(lines + [""]) if lines else "", end="")
    loads = [run.get("provenance", {}).get("machine", {}).get("load_average") for run in (old, new)]
    if all(loads):
        print(f"load average at the start: stored {loads[0][0]:g}, new {loads[1][0]:g}")
    against = f" (stored: {old_command})" if old_command else ""
    print(
        f"compared {counts['timings']} timing figures and {counts['results']} results{against}: "
        f"{counts['slower']} more than {1 + args.threshold:.2f}x slower, {counts['different']} different"
        + (f"; {counts['unmatched']} figures in only one run, not compared" if counts["unmatched"] else "")
    )
    return 1 if counts["slower"] or counts["different"] else 0


if __name__ == "__main__":
    sys.exit(main())
