"""Where and when a benchmark ran, stored with its result: every script of benchmarks/ calls
:func:`provenance` first thing (so the load average is the one the run started under) and prints it in its
JSON output under ``"provenance"``.

A figure is comparable with another only on the same machine under a similar load; this records what is
needed to judge that: the commit (``git rev-parse --short HEAD``, and whether the working tree had
uncommitted changes), the UTC date, the CPU model and core counts (the machine's and those this process may
run on), total memory, the Python, numpy and numba versions (read from the installed metadata, without
importing numba), and the 1, 5 and 15 minute load averages at the start. ``benchmarks/compare.py`` ignores
this block when it compares two runs.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def provenance() -> dict:
    """The commit, date and machine of a benchmark run (see the module docstring), as a JSON-ready dict."""
    return {
        "commit": _git("rev-parse", "--short", "HEAD") or "unknown",
        "dirty": bool(_git("status", "--porcelain", "-uno")),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "cpu": _cpu_model(),
            "cores": os.cpu_count(),
            "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "memory_gb": _memory_gb(),
            "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(),
            "numpy": _version("numpy"),
            "numba": _version("numba"),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
    }
