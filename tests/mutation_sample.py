"""A seeded uniform sample of mutmut's mutants, per core (reports/mutation-log.md §Sampled scores of every core).

    python tests/mutation_sample.py policies=120 optimum=120 > sample.txt   # names, one per line
    mutmut run $(cat sample.txt)

Reads the mutants mutmut generated under ``mutants/`` (run ``mutmut run`` once, on any name, to make them).
Each core's mutants are listed in file order and sampled without replacement with a generator seeded by
``--seed`` and the core's name, so the same sizes and seed give the same names on the same code.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

#: each core: the paths (relative to the mutated copy) whose mutants it holds
CORES = {
    "policies": ("kvtheory/policies/",),
    "optimum": ("kvtheory/optimum/",),
    "readers": ("kvtheory/model/traces/", "kvtheory/model/workload.py", "kvtheory/model/records.py"),
    "model-other": ("kvtheory/model/trie.py", "kvtheory/model/query.py", "kvtheory/model/batches.py"),
    "simulate-ratio-stats": ("kvtheory/simulate.py", "kvtheory/ratio.py", "kvtheory/stats.py"),
    "cluster": ("kvtheory/cluster/",),
}
MUTANT = re.compile(r"^\s*def (x\S+__mutmut_\d+)\(", re.M)


def mutants_of(root: Path) -> dict[str, list[str]]:
    """{core: every mutant name of its files}, names as ``mutmut run`` takes them."""
    names: dict[str, list[str]] = {core: [] for core in CORES}
    for path in sorted((root / "kvtheory").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        module = relative[:-3].replace("/", ".").removesuffix(".__init__")
        for core, prefixes in CORES.items():
            if relative.startswith(prefixes):
                names[core] += [f"{module}.{name}" for name in MUTANT.findall(path.read_text())]
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="+", metavar="CORE=N", help=f"cores: {', '.join(CORES)}")
    parser.add_argument("--mutants", type=Path, default=Path("mutants"), help="mutmut's mutated copy")
    parser.add_argument("--seed", default="20261130")
    args = parser.parse_args()
    names = mutants_of(args.mutants)
    for size in args.sizes:
        core, _, count = size.partition("=")
        if core not in CORES or not count.isdigit():
            parser.error(f"expected CORE=N with CORE one of {', '.join(CORES)}, got {size!r}")
        chosen = random.Random(f"{args.seed}-{core}").sample(names[core], min(int(count), len(names[core])))
        print(f"{core}: {len(chosen)} of {len(names[core])} mutants", file=sys.stderr)
        print("\n".join(sorted(chosen)))


if __name__ == "__main__":
    main()
