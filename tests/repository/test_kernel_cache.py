"""Every kernel takes numba's ``njit`` through :mod:`kvtheory.jit`, whose check keeps numba's on-disk cache in step
with the kernel sources: a kernel that compiles in a function of another file runs that function's current code
after the file changes, where numba's own cache (keyed by the kernel's file alone) would keep the old one."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kvtheory import jit

ROOT = Path(__file__).resolve().parents[2]


def test_every_kernel_module_takes_njit_from_kvtheory_jit():
    direct = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "kvtheory").rglob("*.py"))
        if path.name != "jit.py" and ("from numba import" in path.read_text() and "njit" in path.read_text())
    ]
    assert direct == [], "modules that take numba's njit directly, past kvtheory.jit's cache check"
    sources = jit.kernel_sources()
    assert ROOT / "kvtheory" / "policies" / "compiled" / "radix.py" in sources
    assert ROOT / "kvtheory" / "jit.py" not in sources
    assert len(sources) >= 15 and all("njit(" in path.read_text() for path in sources)


def _serve(package: Path, refresh: bool) -> str:
    """The caller kernel's result in a fresh process (numba's cache under ``package``), after
    :func:`kvtheory.jit.refresh_cache` of ``package`` if ``refresh``."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kvtheory import jit\n"
        f"package = Path({str(package)!r})\n"
        f"deleted = jit.refresh_cache(package) if {refresh} else []\n"
        "sys.path.insert(0, str(package))\n"
        "from caller import total\n"
        "print(total(), len(deleted))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.slow  # four processes that load numba and compile
def test_an_edited_callee_in_another_file_is_compiled_afresh(tmp_path):
    package = tmp_path / "kernels"
    package.mkdir()
    callee = package / "callee.py"
    callee.write_text("from kvtheory.jit import njit\n\n\n@njit\ndef part():\n    return 1\n")
    (package / "caller.py").write_text(
        textwrap.dedent(
            """\
            from kvtheory.jit import njit

            from callee import part


            @njit(cache=True)
            def total():
                return part() + 10
            """
        )
    )
    assert _serve(package, refresh=True) == "11 0"  # compiled and cached; nothing to delete yet
    assert list((package / "__pycache__").glob("caller.total-*.nbi"))
    assert _serve(package, refresh=True) == "11 0"  # the same sources: the cache is kept
    callee.write_text(callee.read_text().replace("return 1", "return 2"))
    first, deleted = _serve(package, refresh=True).split()
    assert first == "12" and int(deleted) >= 2  # the caller's index and code, compiled from the old callee
    assert _serve(package, refresh=True) == "12 0"
