"""``kvtheory check [CLAIM_ID ...] [--instances N] [--seed S] [--json]``: the claims of docs/claims.md, checked.

Also ``--drop ASSUMPTION CLAIM_ID`` (search without one assumption), ``--workload FILE --budget B ...``
(evaluate claims on one given instance, e.g. a saved counterexample) and ``--list``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import orjson

from kvtheory.cli import options
from kvtheory.cli.common import add_evict_amount_option, add_format_options, add_predictor_options, load_workload, told
from kvtheory.errors import InputError


def register(parser) -> None:
    parser.formatter_class = _ClaimListHelp
    parser.add_argument("claims", nargs="*", metavar="CLAIM_ID", help="(the claim ids; C9 = C9a C9b C9c); none: all")
    parser.add_argument(
        "--instances",
        type=options.instances,
        default=100,
        metavar="N",
        help="random instances per search (hypothesis examples; default 100)",
    )
    parser.add_argument(
        "--seed", type=options.seed, default=0, metavar="S", help="hypothesis seed and first policy seed"
    )
    parser.add_argument(
        "--seeds",
        type=options.runs,
        default=10,
        metavar="N",
        help="runs per instance of a randomized policy (default 10)",
    )
    parser.add_argument(
        "--level", type=options.confidence, default=0.95, help="one-sided confidence level (default 0.95)"
    )
    parser.add_argument(
        "--margin",
        type=options.margin,
        default=0.10,
        help="lower bounds: realised when the ratio reaches (1 - margin) * bound (default 0.10)",
    )
    parser.add_argument(
        "--exact-horizon",
        type=_exact_horizon,
        default=None,
        metavar="H",
        help="exact verification of upper bounds on small universes: every sequence of up to H queries "
        "(default: the claim's, 7 to 10; larger H takes longer)",
    )
    parser.add_argument("--drop", metavar="ASSUMPTION", help="search counterexamples without this assumption")
    parser.add_argument(
        "--out",
        default="counterexamples",
        metavar="DIR",
        help="where counterexamples are saved (default ./counterexamples)",
    )
    parser.add_argument("--workload", metavar="FILE", help="evaluate the claims on this one instance instead")
    add_format_options(parser)
    parser.add_argument("--budget", type=options.budget, metavar="B", help="with --workload: the budget B")
    parser.add_argument("--batch", type=options.batch, default=1, metavar="BETA", help="with --workload: batch size")
    parser.add_argument("--workers", type=options.workers, default=1, metavar="M", help="with --workload: workers")
    parser.add_argument(
        "--a-cached", type=options.seconds_per_token, default=1.0, help="with --workload: a_cached (default 1)"
    )
    parser.add_argument(
        "--a-miss", type=options.seconds_per_token, default=1.0, help="with --workload: a_miss (default 1)"
    )
    parser.add_argument(
        "--a-out", type=options.seconds_per_token, default=1.0, help="with --workload: time per output token"
    )
    parser.add_argument("--policy", help="check this registered eviction policy instead of the claim's")
    add_predictor_options(parser)
    add_evict_amount_option(parser, where="the single-worker eviction claims' online policies: ")
    parser.add_argument("--router", help="check this router instead of the claim's (least-load, round-robin, affinity)")
    parser.add_argument("--list", action="store_true", help="list the claims and exit")
    parser.add_argument("--no-algebra", action="store_true", help="skip the sympy derivations")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every claim's notes")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(run=run)


def _exact_horizon(text: str) -> int:
    return options._integer(text, 1, 100, "the exact verification's horizon (queries)")


def _options(args):
    from proofs_check.results import Options

    if args.policy is not None:
        from kvtheory.policies import policy_class

        args.policy = told(args.policy, args)
        policy_class(args.policy)
    elif args.predictor is not None or args.noise is not None:
        raise InputError("--predictor tells the policy given with --policy: give --policy too")
    if args.router is not None:
        from proofs_check.routing import ROUTERS

        if args.router not in ROUTERS:
            raise InputError(f"unknown router {args.router!r}; known here: {', '.join(ROUTERS)}")
    return Options(
        instances=args.instances,
        seed=args.seed,
        seeds=args.seeds,
        level=args.level,
        margin=args.margin,
        policy=args.policy,
        evict_amount=args.evict_amount,
        router=args.router,
        out_dir=Path(args.out),
        exact_horizon=args.exact_horizon,
    )


class _ClaimListHelp(argparse.HelpFormatter):
    """Lists the claim ids in ``check --help`` only when the help is printed: the claims' bounds are sympy
    expressions, and importing sympy for every command would cost each of them about 0.2 s."""

    def _get_help_string(self, action):
        if action.dest == "claims":
            return f"{_claim_ids()} (C9 = C9a C9b C9c); none: all"
        return super()._get_help_string(action)


def _claim_ids() -> str:
    """Every registered claim id, the repaired ones (C3r, ...) included."""
    from proofs_check.claims import all_claims

    return ", ".join(claim.id for claim in all_claims())


def _number(value) -> str:
    if value is None:
        return "-"
    value = float(value)
    if math.isinf(value):
        return "inf"
    return f"{value:.4g}"


def _row(result, expectations: bool = True) -> list[str]:
    claim, worst = result.claim, result.worst
    verdict = result.verdict
    if expectations and result.dropped is None and verdict != claim.expected_verdict:
        verdict += " (changed)"
    return [
        claim.id,
        claim.status_text,
        claim.kind,
        str(result.tried),
        _number(worst.ratio if worst else None),
        _number(worst.bound if worst else None),
        verdict,
        result.bound_text,
    ]


HEADER = ["claim", "status", "kind", "tried", "worst ratio (search)", "bound there", "verdict", "bound"]


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in [HEADER] + rows) for c in range(len(HEADER))]
    right = {3, 4, 5}
    lines = []
    for r in [HEADER] + rows:
        cells = [r[c].rjust(widths[c]) if c in right else r[c].ljust(widths[c]) for c in range(len(r))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _explain(result) -> list[str]:
    lines = []
    m = result.counterexample
    if m is not None:
        what = "stays below" if result.claim.kind == "lower" else "breaks"
        shrunk = result.worst is not None and m.instance is not result.worst.instance
        label = "smallest counterexample (the table's worst ratio is another instance)" if shrunk else "counterexample"
        lines.append(
            f"{result.claim.id} {result.verdict}: {label}: {m.policy} on {m.instance.describe()} "
            f"({m.instance.origin or 'given'}): ratio {_number(m.ratio)} {what} the bound "
            f"({_number(m.bound)} there){'; ' + m.note if m.note else ''}"
        )
        if result.saved is not None:
            lines.append(f"   saved {result.saved}; reproduce: {result.command}")
        elif result.command:
            lines.append(f"   reproduce: {result.command}")
    return lines


def run(args) -> int:
    from proofs_check.claims import all_claims, select

    if args.list:
        return _list(all_claims(), args.json)
    opts = _options(args)
    claims = select(args.claims)
    if args.drop:
        return _drop(args, claims, opts)
    if args.workload:
        return _replay(args, claims, opts)
    started = time.perf_counter()
    from proofs_check.checker import check_claim

    results = []
    try:
        for claim in claims:
            result = check_claim(claim, opts)
            results.append(result)
            if not args.json:
                print(f"  {claim.id}: {result.verdict} ({result.seconds:.1f} s)", file=sys.stderr, flush=True)
        interrupted = False
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: report the verdicts so far, exit 130
        interrupted = True
    algebra = [] if args.no_algebra or interrupted else _algebra()
    seconds = time.perf_counter() - started
    changed = [r.claim.id for r in results if r.verdict != r.claim.expected_verdict]
    overridden = args.policy is not None or args.router is not None
    if args.json:
        record = {
            "claims": [
                dict(r.to_dict(), expected=r.claim.expected_verdict, findings=list(r.claim.findings)) for r in results
            ],
            "algebra": [{"name": a, "statement": s, "verified": ok, "failed_step": why} for a, s, ok, why in algebra],
            "seconds": round(seconds, 1),
            "options": {
                "instances": opts.instances,
                "seed": opts.seed,
                "seeds": opts.seeds,
                "level": opts.level,
                "margin": opts.margin,
                "evict_amount": opts.evict_amount,
                "exact_horizon": opts.exact_horizon,
            },
            "changed": changed,
            "interrupted": interrupted,
        }
        sys.stdout.buffer.write(orjson.dumps(record) + b"\n")
    else:
        print(_table([_row(r) for r in results]))
        print()
        for r in results:
            for line in _explain(r):
                print(line)
            if args.verbose:
                for note in r.notes:
                    print(f"   {r.claim.id}: {note}")
        for r in results:
            for finding in r.claim.findings if r.verdict != r.claim.expected_verdict or r.claim.findings else ():
                print(f"{r.claim.id} finding: {finding}")
        if algebra:
            good = sum(ok for _, _, ok, _ in algebra)
            print(
                f"algebra: {good}/{len(algebra)} derivations verified by sympy ("
                + "; ".join(a for a, _, _, _ in algebra)
                + ")"
            )
            for name, _, ok, why in algebra:
                if not ok:
                    print(f"   algebra FAILED: {name}: {why}")
        print(
            f"checked {len(results)} claims in {seconds:.1f} s: seed {opts.seed}, {opts.instances} random instances "
            f"per search, {opts.seeds} seeds per randomized instance, one-sided {opts.level:.0%} confidence, "
            f"lower-bound margin {opts.margin:.0%}"
        )
        if changed and not overridden:
            print(f"verdicts that differ from the registry's expectation: {', '.join(changed)}")
    if interrupted:
        left = ", ".join(c.id for c in claims[len(results) :])
        print(f"kvtheory check: interrupted; not checked: {left}", file=sys.stderr)
        return 130
    algebra_failed = any(not ok for _, _, ok, _ in algebra)
    return 1 if (changed and not overridden) or algebra_failed else 0


def _algebra():
    from proofs_check.algebra import verify_all

    return verify_all()


def _list(claims, as_json: bool) -> int:
    if as_json:
        sys.stdout.buffer.write(orjson.dumps([c.to_dict() for c in claims]) + b"\n")
        return 0
    from proofs_check.measuring import bound_text
    from proofs_check.results import Options

    for c in claims:
        print(f"{c.id}  [{c.status_text}; {c.kind} bound: {bound_text(c, Options())}]  {c.title}")
        print(f"    {c.statement}")
        print(
            f"    assumptions: {', '.join(c.assumptions)}; policies: {', '.join(c.policies)}"
            + (f"; adversary: {c.adversary}" if c.adversary else "")
            + (f"; --drop: {', '.join(c.drops)}" if c.drops else "")
        )
    return 0


def _drop(args, claims, opts) -> int:
    from proofs_check.assumptions import get_assumption
    from proofs_check.checker import drop_assumption

    if len(claims) != 1:
        raise InputError(f"--drop takes exactly one claim, got {len(claims)} ({', '.join(c.id for c in claims)})")
    claim = claims[0]
    assumption = get_assumption(args.drop)
    if assumption.name not in claim.assumptions:
        raise InputError(
            f"{claim.id} does not assume {assumption.name!r}; its assumptions: {', '.join(claim.assumptions)}"
        )
    result = drop_assumption(claim, assumption.name, opts)
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(dict(result.to_dict(), assumption=assumption.text)) + b"\n")
        return 0
    print(f"{claim.id} without {assumption.name} ({assumption.text}): {result.verdict}")
    print(f"   bound: {result.bound_text}; {result.tried} instances tried in {result.seconds:.1f} s")
    w = result.worst
    if result.counterexample is None:
        if w is not None:
            print(
                f"   the bound still holds on everything tried; closest: {w.policy} on {w.instance.describe()} "
                f"({w.instance.origin}): ratio {_number(w.ratio)}, bound there {_number(w.bound)}"
                + (f"; {w.note}" if w.note else "")
            )
    for line in _explain(result):
        print(line)
    for note in result.notes:
        print(f"   {note}")
    return 0


def _replay(args, claims, opts) -> int:
    from proofs_check.assumptions import evaluate_assumptions
    from proofs_check.checker import check_instance
    from proofs_check.instance import Instance

    if args.budget is None:
        raise InputError("--workload needs --budget B")
    workload = load_workload(args)

    def exact(value):
        return int(value) if float(value).is_integer() else value

    instance = Instance(
        workload,
        args.budget,
        args.batch,
        args.workers,
        exact(args.a_cached),
        exact(args.a_miss),
        exact(args.a_out),
        origin=args.workload,
    )
    results, failing = [], {}
    for claim in claims:
        failed = [(n, d) for n, ok, d in evaluate_assumptions(claim.assumptions, instance) if not ok]
        failing[claim.id] = failed
        if any(n == "queries-fit" for n, _ in failed):
            raise InputError(f"{args.workload}: {dict(failed)['queries-fit']}")
        if (claim.kind == "lower" or claim.id in ("C8", "C9b")) and any(
            n in ("single-worker", "multi-worker") for n, _ in failed
        ):
            continue
        results.append(check_instance(claim, instance, opts))
    if args.json:
        sys.stdout.buffer.write(
            orjson.dumps(
                {
                    "instance": instance.describe(),
                    "results": [
                        dict(r.to_dict(), failing_assumptions=[f"{n}: {d}" for n, d in failing[r.claim.id]])
                        for r in results
                    ],
                }
            )
            + b"\n"
        )
        return 0
    print(f"{args.workload}: {instance.describe()}")
    print(_table([_row(r, expectations=False) for r in results]))
    for r in results:
        for name, detail in failing[r.claim.id]:
            print(f"   {r.claim.id}: assumption {name} fails: {detail}")
        for line in _explain(r):
            print(line)
        if r.worst is not None and r.worst.note:
            print(f"   {r.claim.id}: {r.worst.note}")
    return 0
