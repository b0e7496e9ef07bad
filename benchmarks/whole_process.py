"""Measuring whole Python processes for the benchmarks: median wall and CPU seconds (user + sys, of the
child alone) and peak resident memory, read as VmHWM inside the child (execve resets it, unlike the
parent's ru_maxrss, which would count the benchmark process the child was forked from)."""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

_PRINT_PEAK = (
    "status = open('/proc/self/status').read()\n"
    "peak = [line for line in status.splitlines() if line.startswith('VmHWM')][0].split()[1]\n"
    "print(peak, file=sys.stderr)\n"
)


def printing_peak(program: str) -> str:
    """``program`` (which imports sys) followed by lines that print its peak resident memory in kB as the
    last word on stderr."""
    return program + _PRINT_PEAK


#: a whole ``kvtheory`` command, as the console script runs it (kvtheory_launcher): its arguments are the child's argv
KVTHEORY = printing_peak("import sys\nfrom kvtheory_launcher import main\ncode = main()\n") + "sys.exit(code)\n"


@dataclass(frozen=True)
class Measured:
    """Medians over the runs of a process, its largest peak, and the last run's stdout."""

    wall_seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    stdout: str


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(program: str, argv: list[str], repeats: int) -> Measured:
    """Run ``python -c program *argv`` ``repeats`` times; a failed run raises, naming it."""
    walls, cpus, peaks = [], [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run([sys.executable, "-c", program, *argv], capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        peaks.append(int(done.stderr.split()[-1]) / 1024)
    return Measured(statistics.median(walls), statistics.median(cpus), max(peaks), done.stdout)
