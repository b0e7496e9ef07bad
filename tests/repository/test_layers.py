"""The import graph of kvtheory, adversaries and proofs_check respects the layers of docs/layers.md:
a module imports only from its own layer or the layers below it (imports inside functions count)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: lowest first; a module belongs to the layer of the longest prefix naming it
LAYERS = [
    (
        "base",
        [
            "kvtheory.errors",
            "kvtheory.jit",
            "kvtheory.locking",
            "kvtheory.params",
            "kvtheory.registry",
            "kvtheory.stats",
        ],
    ),
    ("model", ["kvtheory.model"]),
    ("workloads", ["kvtheory.workloads"]),
    ("policies", ["kvtheory.policies", "kvtheory.reference"]),
    ("simulation", ["kvtheory.simulate"]),
    ("optima", ["kvtheory.optimum"]),
    ("adversaries", ["adversaries"]),
    ("ratios", ["kvtheory.ratio"]),
    ("game", ["kvtheory.game"]),
    ("cluster", ["kvtheory.cluster"]),
    ("testing", ["kvtheory.testing"]),
    ("experiments", ["kvtheory.experiments"]),
    ("claims", ["proofs_check"]),
    ("interface", ["kvtheory.cli", "kvtheory.__main__", "kvtheory"]),
]
PACKAGES = ("kvtheory", "adversaries", "proofs_check")


def layer_of(module: str) -> int:
    best, rank = -1, None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank is not None, f"{module} is in no layer: add it to LAYERS and docs/layers.md"
    return rank


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def upward_imports(here: str, source: str) -> list[tuple[int, str]]:
    """(line, imported module) for each import of ``source`` (module ``here``) from a higher layer."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [node.module]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] in PACKAGES and layer_of(target) > layer_of(here):
                found.append((node.lineno, target))
    return found


def test_no_module_imports_from_a_higher_layer():
    upward = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            here = module_name(path)
            for line, target in upward_imports(here, path.read_text()):
                upward.append(
                    f"{path.relative_to(ROOT)}:{line}: {here} ({LAYERS[layer_of(here)][0]}) imports {target} "
                    f"({LAYERS[layer_of(target)][0]})"
                )
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_an_upward_import_is_caught_even_inside_a_function():
    source = "from kvtheory.errors import InputError\n\ndef f():\n    from kvtheory.optimum.fif import run_fif\n"
    assert upward_imports("kvtheory.model.workload", source) == [(4, "kvtheory.optimum.fif")]
    assert upward_imports("kvtheory.cli.opt", source) == []


def test_the_layers_are_the_documented_ones():
    text = (ROOT / "docs" / "layers.md").read_text()
    for name, prefixes in LAYERS:
        assert f"**{name}**" in text, name
        for prefix in prefixes:
            assert f"`{prefix}`" in text, prefix
