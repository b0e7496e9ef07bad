"""Start-up of whole ``kvtheory`` processes on a small input; prints one JSON object.

    python benchmarks/startup.py --json              # 5 runs of each command (median reported)
    python benchmarks/startup.py --json --repeats 11

Each command runs as the console script next to the interpreter (``python -m kvtheory`` where there is
none): ``--version``, ``--help``, and ``generate``, ``evict``, ``opt`` and ``ratio`` on a 20-query paging
workload at B = 4. For each, the median wall and CPU seconds (user + sys, of the child alone) of --repeats
runs, and, from one more run of the same command line under ``python -X importtime``, the seconds its
imports took after the interpreter's own start (the top-level imports' cumulative times), how many modules
it held at the end and which of the heavy libraries (HEAVY) among them (read from ``sys.modules``, which
also holds the modules imported through importlib, which -X importtime does not list). ``floor`` is the
interpreter's own start (``python -c pass``) and its start with NumPy, under every figure above: what
kvtheory adds is the difference. Every process runs in a fresh temporary folder, so that the kvtheory it
imports is the installed one (or PYTHONPATH's), never a checkout in the folder the benchmark started from.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import provenance

#: libraries that no small command should pay for unless it uses them
HEAVY = ("sympy", "scipy", "matplotlib", "numba", "pulp", "networkx", "pandas", "dask", "highspy", "hypothesis")


def _kvtheory() -> list[str]:
    script = Path(sys.executable).with_name("kvtheory")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kvtheory"]


def _commands(workload: str) -> dict[str, list[str]]:
    small = ["--workload", workload, "--budget", "4"]
    return {
        "version": ["--version"],
        "help": ["--help"],
        "generate": ["generate", "paging", "--param", "requests=20", "-o", workload],
        "evict": ["evict", *small, "--policy", "lru"],
        "opt": ["opt", *small],
        "ratio": ["ratio", *small, "--policy", "lru"],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], repeats: int, folder: str) -> dict:
    """Median wall and CPU seconds of ``repeats`` runs of ``argv`` in ``folder``; a failed run raises, naming it."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return {"wall_seconds": statistics.median(walls), "cpu_seconds": statistics.median(cpus)}


#: runs the command line of its arguments, then prints the modules it holds as the last line on stderr
_LISTING = """
import sys
from kvtheory.cli import main
try:
    main(sys.argv[1:])
except SystemExit:  # --version and --help exit
    pass
print(" ".join(sys.modules), file=sys.stderr)
"""


def _imports(args: list[str], folder: str) -> dict:
    """What ``kvtheory *args`` imported, from a run in ``folder`` under ``python -X importtime`` (see the
    module docstring)."""
    program = [sys.executable, "-X", "importtime", "-c", _LISTING, *args]
    done = subprocess.run(program, cwd=folder, capture_output=True, text=True, check=True)
    lines = done.stderr.splitlines()
    top = []  # (name, cumulative microseconds) of each import made at the top level, in order
    for line in lines:
        if line.startswith("import time:") and "self [us]" not in line:
            _, cumulative, name = line[len("import time:") :].split("|")
            if not name.startswith("  "):  # depth 0: one space after the bar
                top.append((name.strip(), int(cumulative)))
    after_site = len(top) - [name for name, _ in top][::-1].index("site")
    modules = lines[-1].split()
    return {
        "import_seconds": sum(cumulative for _, cumulative in top[after_site:]) / 1e6,
        "modules_loaded": len(modules),
        "heavy_loaded": sorted({name.split(".")[0] for name in modules} & set(HEAVY)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per command (median reported)")
    args = parser.parse_args()
    started = provenance()

    kvtheory = _kvtheory()
    with tempfile.TemporaryDirectory() as folder:
        report = {
            "repeats": args.repeats,
            "floor": {
                "python": _timed([sys.executable, "-c", "pass"], args.repeats, folder),
                "python_numpy": _timed([sys.executable, "-c", "import numpy"], args.repeats, folder),
            },
            "commands": {},
        }
        for name, argv in _commands(str(Path(folder) / "paging.jsonl")).items():
            timed = _timed([*kvtheory, *argv], args.repeats, folder)
            entry = {"argv": ["kvtheory", *argv], **timed, **_imports(argv, folder)}
            report["commands"][name] = entry
            print(f"{name}: {entry['wall_seconds']:.3f}s", file=sys.stderr)
    report["provenance"] = started
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
