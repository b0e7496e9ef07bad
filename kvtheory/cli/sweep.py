"""``kvtheory sweep SPEC -o results.jsonl [--executor local|dask] [--scheduler ADDRESS] [--workers N]``."""

from __future__ import annotations

import sys
from pathlib import Path

from kvtheory.cli import options


def register(parser) -> None:
    parser.description = "Run every cell of SPEC not yet in the output file; one JSON line per finished cell."
    parser.add_argument("spec", metavar="SPEC", help="TOML sweep spec (see examples/sweeps/)")
    parser.add_argument(
        "-o", "--output", required=True, type=options.output_file, metavar="FILE", help="JSON Lines results (appended)"
    )
    parser.add_argument("--executor", default="local", choices=("local", "dask"), help="process pool or Dask")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler (default: a LocalCluster)")
    parser.add_argument(
        "--workers", type=options.workers, metavar="N", help="pool processes / LocalCluster workers (default: CPUs)"
    )
    parser.add_argument("--dry-run", action="store_true", help="count the cells (and those already done); run none")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    parser.set_defaults(run=run)


def run(args) -> int:
    from kvtheory.experiments.grid import expand, load_spec
    from kvtheory.experiments.sweep import (
        completed_ids,
        read_results,
        run_sweep,
        stability_rows,
    )

    cells = expand(load_spec(args.spec), where=args.spec, base=Path(args.spec).parent)
    if args.dry_run:
        done = completed_ids(args.output) & {cell["id"] for cell in cells}
        print(f"{args.spec}: {len(cells)} cells, {len(done)} already in {args.output}, {len(cells) - len(done)} to run")
        return 0
    summary = run_sweep(
        args.spec,
        args.output,
        executor=args.executor,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=False if args.no_progress else None,
    )
    rate = summary.ran / summary.seconds if summary.seconds > 0 else float("inf")
    print(
        f"sweep: {summary.cells} cells: {summary.skipped} already in {summary.output}, "
        f"{summary.ran} run in {summary.seconds:.1f} s ({rate:.1f} cells/s, {args.executor})"
    )
    ids = {cell["id"] for cell in cells}
    records = [r for r in read_results(args.output) if r.get("cell") in ids]
    rows = stability_rows(records)
    if rows:
        print("\nseed stability of randomized policies (per family and policy, over its cells):")
        print(
            f"{'family':<12} {'policy':<12} {'cells':>5} {'seeds':>5} {'max CI95/mean':>13} {'max/min seed':>12} "
            f"{'worst ratio':>11}  worst seed (cell)"
        )
        for row in rows:
            print(
                f"{row['family']:<12} {row['policy']:<12} {row['cells']:>5} {row['seeds']:>5} "
                f"{row['ci_rel']:>12.1%} {row['spread']:>12.3f} {row['worst_ratio']:>11.4g}  "
                f"{row['worst_seed']} ({row['worst_cell']})"
            )
    failed = [r for r in records if "error" in r]
    if failed:
        print(f"\n{len(failed)} cell(s) failed; first ({failed[0]['cell']}): {failed[0]['error']}", file=sys.stderr)
        return 1
    return 0
