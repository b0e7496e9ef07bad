"""``kvtheory assumptions --workload FILE --budget B [--batch BETA] [--workers M] [--json]``.

Which claims' assumptions a workload and configuration satisfy, and by how much the others fail.
"""

from __future__ import annotations

import sys

import orjson

from kvtheory.cli import options
from kvtheory.cli.common import add_format_options, load_workload


def register(parser) -> None:
    parser.add_argument("--workload", required=True, metavar="FILE", help="workload file (see --format)")
    add_format_options(parser)
    parser.add_argument("--budget", required=True, type=options.budget, metavar="B", help="cache budget B in tokens")
    parser.add_argument("--batch", type=options.batch, default=1, metavar="BETA", help="batch size beta (default 1)")
    parser.add_argument("--workers", type=options.workers, default=1, metavar="M", help="identical workers (default 1)")
    parser.add_argument(
        "--a-cached", type=options.seconds_per_token, default=None, help="time per cached token (routing claims)"
    )
    parser.add_argument(
        "--a-miss", type=options.seconds_per_token, default=None, help="time per missed token (routing claims)"
    )
    parser.add_argument("--claims", nargs="*", metavar="CLAIM_ID", help="only these claims (default all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(run=run)


def run(args) -> int:
    from kvtheory.model.batches import slack_fields
    from proofs_check.assumptions import evaluate_assumptions
    from proofs_check.claims import select
    from proofs_check.instance import Instance

    a_cached = args.a_cached if args.a_cached is not None else (args.a_miss if args.a_miss is not None else 1.0)
    a_miss = args.a_miss if args.a_miss is not None else max(a_cached, 1.0)
    workload = load_workload(args)
    instance = Instance(workload, args.budget, args.batch, args.workers, a_cached, a_miss)
    claims = select(args.claims or [])
    rows = []
    for claim in claims:
        checks = evaluate_assumptions(claim.assumptions, instance)
        rows.append((claim, checks))
    header = (
        f"{args.workload}: {len(workload)} queries, {workload.total_tokens} tokens, "
        f"L_max = {instance.max_length}; B = {args.budget}, beta = {args.batch}, M = {args.workers}, "
        f"a_cached = {a_cached:g}, a_miss = {a_miss:g}; k = B - beta*L_max + 1 = {instance.k}"
    )
    if args.json:
        record = {
            "workload": args.workload,
            "queries": len(workload),
            "tokens": workload.total_tokens,
            "max_length": instance.max_length,
            "budget": args.budget,
            "batch": args.batch,
            "workers": args.workers,
            **slack_fields(args.budget, instance.max_length, args.batch),
            "claims": [
                {
                    "claim": claim.id,
                    "applies": all(ok for _, ok, _ in checks),
                    "check_finds": claim.expected_verdict,
                    "assumptions": [{"name": n, "holds": ok, "detail": d} for n, ok, d in checks],
                }
                for claim, checks in rows
            ],
        }
        sys.stdout.buffer.write(orjson.dumps(record) + b"\n")
        return 0
    print(header)
    width = max(len(c.id) for c, _ in rows)
    for claim, checks in rows:
        failing = [(n, d) for n, ok, d in checks if not ok]
        verdict = "applies" if not failing else "does not apply"
        print(f"{claim.id:<{width}}  {verdict:<14}  {claim.title}{_refuted(claim)}")
        for name, detail in failing:
            print(f"{'':<{width}}    {name}: {detail}")
    return 0


def _refuted(claim) -> str:
    """What ``kvtheory check`` finds when the claim, as stated, does not hold."""
    if claim.expected_verdict in ("verified", "holds", "realised", "equal"):
        return ""
    return f"  [kvtheory check finds it {claim.expected_verdict}; see docs/claims.md]"
