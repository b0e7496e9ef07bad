"""The install-time warm-up (kvtheory.warmup, called by build_backend/kvtheory_build.py): after it, a process that
runs every policy, FIF and lbgr-full's step compiles nothing; the build environment it runs in has every
library it imports. Each check runs fresh interpreters on a fresh numba cache (NUMBA_CACHE_DIR in tmp_path)."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: the numba dispatchers of every kvtheory module that compiles with numba (found by its source), as
#: {module.name: dispatcher}, each once (under the first name found), those made by njit(f) of a function of
#: another module too, less those inlined into their callers (no code of their own)
COMMON = """
import json, sys
from importlib import import_module
from pathlib import Path
import kvtheory
from numba.core.registry import CPUDispatcher

def dispatchers():
    root = Path(kvtheory.__file__).parent
    found, seen = {}, set()
    for path in sorted(root.rglob("*.py")):
        if "njit" in path.read_text():
            name = ".".join(("kvtheory", *path.relative_to(root).with_suffix("").parts))
            module = import_module(name)
            for attribute, value in vars(module).items():
                if isinstance(value, CPUDispatcher) and id(value) not in seen:
                    seen.add(id(value))
                    if value.targetoptions.get("inline") != "always":  # else compiled inside its callers only
                        found[f"{name}.{attribute}"] = value
    return found
"""

#: warms the cache, then prints the dispatchers left without a signature and the third-party top-level modules
#: that the kvtheory modules it loaded import when loaded
WARM = (
    COMMON
    + """
import ast
from kvtheory.warmup import warm_up
warm_up()
idle = sorted(name for name, d in dispatchers().items() if not d.signatures)
imported = set()
for name, module in list(sys.modules.items()):
    if name.split(".")[0] == "kvtheory" and str(getattr(module, "__file__", "")).endswith(".py"):  # not _ahead
        for node in ast.parse(Path(module.__file__).read_text()).body:  # the imports made on loading it
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
third_party = sorted(m for m in imported if m not in sys.stdlib_module_names and m != "kvtheory")
print(json.dumps({"idle": idle, "third_party": third_party}), file=sys.stderr)
"""
)

#: runs the policy named in argv[2] ("all": every one with a compiled engine, and FIF) through the command line on
#: the compiled engine, numba's even where the extension compiled ahead of time is current, then prints
#: {dispatcher: cache misses} for those that missed
RUN = (
    COMMON
    + """
from kvtheory.cli import main
from kvtheory.model.traces import read_workload
from kvtheory.optimum.fif import run_fif
from kvtheory.policies import ONLINE_POLICIES
from kvtheory.policies.native import just_in_time
numba_kernels = just_in_time()
numba_kernels.__enter__()  # for the whole process (kept referenced: collecting it would leave the block)
folder, wanted = sys.argv[1], sys.argv[2]
flat = Path(folder, "flat.jsonl")
flat.write_text("".join(f'{{"tokens": [{(5 * i) % 9}]}}\\n' for i in range(40)))
tree = Path(folder, "tree.jsonl")
tree.write_text("".join(f'{{"tokens": [{i % 3}, {i % 5}, {i % 2}, {i}]}}\\n' for i in range(40)))
names = [n for n, c in ONLINE_POLICIES.items() if c.__dict__.get("compiled_core")] if wanted == "all" else [wanted]
for workload in (flat, tree) if wanted == "all" else (flat,):
    for batch in ("1", "3"):
        common = ["--workload", str(workload), "--budget", "13", "--batch", batch, "--backend", "compiled", "--json"]
        for name in names:
            for amount in ("shortfall", "allocation"):
                assert main(["evict", "--policy", name, "--evict-amount", amount, *common]) == 0
        if wanted == "all":  # `kvtheory opt` has no --backend: FIF through the API
            run_fif(read_workload(workload), 13, batch=int(batch), backend="compiled")
missed = {name: sum(d.stats.cache_misses.values()) for name, d in dispatchers().items() if d.stats.cache_misses}
print(json.dumps(missed), file=sys.stderr)
"""
)


def run(program: str, cache: Path, *args: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", program, *args], cwd=cache.parent, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.splitlines()[-1])


def load_backend():
    spec = importlib.util.spec_from_file_location("kvtheory_build", ROOT / "build_backend" / "kvtheory_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_environment_gets_the_runtime_requirement_strings():
    """numba and the warm-up's other libraries are asked for with pyproject's own strings (the same resolution)."""
    backend = load_backend()
    import tomllib

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = backend.runtime_requirements()
    assert len(wanted) == len(backend.WARMUP_NEEDS) and set(wanted) <= set(dependencies)
    assert any(spec.startswith("numba") for spec in wanted)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # it compiles every kernel: a minute or two of CPU, several on a loaded machine
def test_after_the_warm_up_running_the_policies_compiles_nothing(tmp_path):
    cache = tmp_path / "numba"
    warmed = run(WARM, cache)
    assert warmed["idle"] == [], "kernels the warm-up never ran"
    assert set(warmed["third_party"]) <= set(load_backend().WARMUP_NEEDS), "the build environment lacks these"
    assert run(RUN, cache, str(tmp_path), "all") == {}


@pytest.mark.slow
def test_the_check_sees_a_compile(tmp_path):
    """The same run on an empty cache compiles: what the test above counts is there to be seen."""
    missed = run(RUN, tmp_path / "numba", str(tmp_path), "lru")
    assert missed.get("kvtheory.policies.compiled.radix.radix_serve", 0) >= 1
