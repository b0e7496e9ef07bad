"""A command imports what it uses and nothing else (issue 30): ``kvtheory --version`` and ``--help`` load
no NumPy and no kvtheory module below the command line, and a small ``evict`` loads no solver, symbolic,
plotting, graph or compiling library. Checked on ``sys.modules`` in a fresh interpreter, structurally:
how long a start takes is measured by benchmarks/startup.py, never here."""

import json
import subprocess
import sys

import pytest

import kvtheory

#: libraries that none of the commands below uses (sympy: the claims; pulp/highspy: the MIPs; numba: the
#: compiled cores, which "auto" leaves unloaded on a small run)
HEAVY = ("sympy", "scipy", "matplotlib", "numba", "pulp", "highspy", "networkx", "pandas", "dask")

#: runs each argv (a JSON list of command lines) through kvtheory.cli.main in this one process, then prints
#: the top-level packages and the kvtheory modules it holds
PROGRAM = """
import json, sys
from kvtheory.cli import main
for argv in json.loads(sys.argv[1]):
    try:
        main(argv)
    except SystemExit:  # --version and --help exit
        pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(tmp_path, *argvs: list[str]) -> set[str]:
    """The modules a fresh interpreter holds after running the command lines ``argvs`` in turn."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, json.dumps(argvs)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in modules} & set(HEAVY))


@pytest.fixture
def small_workload(tmp_path):
    """20 one-token queries over 8 pages, as ``kvtheory generate paging --param requests=20`` writes them."""
    path = tmp_path / "paging.jsonl"
    path.write_text("".join(f'{{"tokens": [{(7 * i) % 8}]}}\n' for i in range(20)))
    return path


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_load_nothing_below_the_command_line(argv, tmp_path):
    modules = loaded_by(tmp_path, argv)
    kvtheory_modules = sorted(name for name in modules if name.split(".")[0] == "kvtheory")
    assert kvtheory_modules == ["kvtheory", "kvtheory.cli", "kvtheory.errors", "kvtheory.registry"]
    assert "numpy" not in modules and "adversaries" not in modules
    assert heavy_in(modules) == []


def test_a_small_evict_loads_no_heavy_library(tmp_path, small_workload):
    argv = ["evict", "--workload", str(small_workload), "--budget", "4", "--policy", "lru", "--json"]
    modules = loaded_by(tmp_path, ["--version"], argv)
    assert "kvtheory.simulate" in modules  # it ran
    assert heavy_in(modules) == []
    assert not any(name.startswith(("kvtheory.optimum", "kvtheory.cluster", "kvtheory.game")) for name in modules)


def test_the_check_sees_a_heavy_library_that_a_command_loads(tmp_path, small_workload):
    """The same check on a command that does use one: ``ratio`` evaluates the claims' bounds with sympy."""
    argv = ["ratio", "--workload", str(small_workload), "--budget", "4", "--policy", "lru"]
    assert "sympy" in heavy_in(loaded_by(tmp_path, argv))


def test_import_kvtheory_loads_its_names_on_first_use(tmp_path):
    program = (
        "import json, sys, kvtheory\n"
        "before = 'numpy' in sys.modules\n"
        "w = kvtheory.generate('cyclic', {'k': 2, 'L': 2, 'n': 6})\n"  # an adversary family: registered too
        "print(json.dumps([before, 'numpy' in sys.modules, len(w)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [False, True, 6]


def test_every_public_name_resolves_and_is_listed():
    assert len(set(kvtheory.__all__)) == len(kvtheory.__all__)
    assert set(kvtheory.__all__) == {"InputError", *kvtheory._LAZY}
    for name in kvtheory.__all__:
        assert getattr(kvtheory, name) is not None, name
    assert set(kvtheory.__all__) <= set(dir(kvtheory))
    namespace = {}
    exec("from kvtheory import *", namespace)
    assert set(kvtheory.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        kvtheory.nonexistent  # noqa: B018
