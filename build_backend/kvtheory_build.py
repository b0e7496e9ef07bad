"""kvtheory's build backend: setuptools' own, and, for an editable install (``pip install -e .``), numba's
on-disk cache filled on the installing machine, so that a user's first run waits for no compile
(docs/performance.md §No compile on the first run).

After setuptools has built the editable wheel, ``python -m kvtheory.warmup`` runs in the build environment
on the sources the install points at: numba writes each kernel's code into ``__pycache__`` next to its
source, keyed by the source file's stamp, the numba version and this machine's CPU, which are the ones the
installed package then runs with. The build environment gets numba and the other libraries the warm-up
imports (:data:`WARMUP_NEEDS`) with the very requirement strings of ``[project].dependencies``, so that pip
resolves them as it resolves the runtime ones: in a fresh environment, the same newest releases. Where they
still differ (an environment that keeps an older numba) numba finds the cache stale and compiles on first use,
as it would without the warm-up; so does a failed warm-up, which is reported and does not fail the install.

A wheel (``pip install .``) is left as setuptools builds it: its files get new stamps when installed, which
no cache made here would match; ``python -m kvtheory.warmup`` after installing does the same warm-up.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (every other hook is setuptools' own)

ROOT = Path(__file__).resolve().parents[1]
#: the distributions the warm-up imports (numba's, and kvtheory's modules on its path: the policies, FIF, lbgr-full)
WARMUP_NEEDS = ("numpy", "numba", "orjson", "sortedcontainers")


def runtime_requirements(names: tuple[str, ...] = WARMUP_NEEDS) -> list[str]:
    """The requirement strings of ``[project].dependencies`` that name one of ``names``, as written there."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [spec for spec in dependencies if re.split(r"[\s<>=!~\[;]", spec, maxsplit=1)[0].lower() in names]


def get_requires_for_build_editable(config_settings=None) -> list[str]:
    return [*_setuptools.get_requires_for_build_editable(config_settings), *runtime_requirements()]


def build_editable(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    wheel = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    done = subprocess.run([sys.executable, "-m", "kvtheory.warmup"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode == 0:
        print(done.stderr.strip(), file=sys.stderr)
    else:  # the first run of each kernel compiles it, as without a warm-up; the install itself is fine
        print(
            f"kvtheory: warning: compiling the kernels failed; each compiles on first use:\n{done.stderr}",
            file=sys.stderr,
        )
    return wheel
