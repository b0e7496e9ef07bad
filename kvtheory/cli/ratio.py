"""``kvtheory ratio (--workload FILE | --adversary NAME [--param k=v]) --budget B --policy NAME [--seeds N]``;
with ``--workers M --router NAME [--eviction POLICY]``: a router's makespan over the joint optimum or,
for instances too large to solve, over its best lower bound."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import (
    CLUSTER_OPTIONS,
    add_backend_option,
    add_block_size_option,
    add_evict_amount_option,
    add_format_options,
    add_json_option,
    add_predictor_options,
    emit,
    load_workload,
    parse_params,
    reject_seeds,
    reject_unused,
    told,
)
from kvtheory.cli.route import add_cluster_options, build_cluster
from kvtheory.cluster.optimum import AUTO_MIP_QUERIES
from kvtheory.errors import InputError
from kvtheory.model.blocks import block_workload
from kvtheory.policies import policy_class
from kvtheory.ratio import competitive_ratio
from kvtheory.workloads.registry import generate


def register(parser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--workload", metavar="FILE", help="workload file (see --format)")
    source.add_argument("--adversary", metavar="NAME", help="a generator or adversary family instead of a file")
    add_format_options(parser)
    parser.add_argument("--param", action="append", metavar="KEY=VALUE", help="adversary parameter (repeatable)")
    parser.add_argument("--budget", type=options.budget, metavar="B", help="cache budget B in tokens (per worker)")
    parser.add_argument("--batch", type=options.batch, default=1, metavar="BETA", help="batch size beta (default 1)")
    add_block_size_option(parser)
    parser.add_argument("--policy", help="online eviction policy (one worker)")
    add_predictor_options(parser)
    parser.add_argument("--seed", type=options.seed, default=0, help="first seed (default 0)")
    parser.add_argument("--seeds", type=options.runs, default=1, metavar="N", help="randomized policies: N seeds")
    parser.add_argument(
        "--workers", type=options.workers, metavar="M", help="several workers: a router's makespan ratio"
    )
    parser.add_argument("--router", help="with --workers: the router to measure")
    parser.add_argument("--eviction", metavar="POLICY", help="with --workers: eviction (default lru)")
    parser.add_argument("--router-opt", action="append", metavar="KEY=VALUE", help="router option (repeatable)")
    parser.add_argument(
        "--output-len", type=options.tokens, metavar="N", help="with --workers: output tokens per query"
    )
    parser.add_argument(
        "--time-limit",
        type=options.seconds,
        metavar="SECONDS",
        help=f"with --workers: the joint MIP's time limit (default 60 s); the MIP runs only on instances of up to "
        f"{AUTO_MIP_QUERIES} queries: a larger one is measured against its best lower bound, whatever the limit",
    )
    add_cluster_options(parser, budget=False)
    add_evict_amount_option(parser, where="the online policy (every worker's with --workers): ")
    add_backend_option(parser)
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    if args.workload:
        if args.param:
            raise InputError("--param goes with --adversary, not with --workload")
        workload = load_workload(args)
    else:
        # an adversary family is built for --budget: its B follows it unless --param B= says the same
        workload = generate(args.adversary, parse_params(args.param), seed=args.seed, budget=args.budget)
    if args.workers is not None:
        reject_unused(args, ["policy", "backend"], "with --workers (give --router and --eviction)")
        if args.block_size != 1:
            raise InputError("--block-size applies to one worker: the joint makespan model caches tokens")
        return _several_workers(args, workload)
    reject_unused(args, ["router", "router_opt", "eviction", "time_limit", *CLUSTER_OPTIONS], "without --workers")
    if args.budget is None or args.policy is None:
        raise InputError("--budget and --policy are required (or --workers M --router NAME)")
    policy = told(args.policy, args)
    reject_seeds(policy_class(policy), args.seeds)
    report = competitive_ratio(
        workload,
        args.budget,
        policy,
        batch=args.batch,
        seeds=range(args.seed, args.seed + args.seeds),
        evict_amount=args.evict_amount,
        backend=args.backend or "auto",
        block_size=args.block_size,
    )
    record = report.to_dict()
    bounds = _claim_bounds(workload, args.budget, report.policy, args.batch, args.block_size)
    if args.json:
        record["claim_bounds"] = bounds
    else:
        record["claim_bounds"] = (
            "; ".join(
                f"{b['claim']} ({b['kind']}, check finds it {b['check_finds']}): {b['bound']} = {b['value']:.6g}"
                for b in bounds
            )
            or "none applies"
        )
    emit(record, args.json)
    return 0


def _claim_bounds(workload, budget: int, policy: str, batch: int, block_size: int) -> list[dict]:
    """The claims' bounds on this instance; at block size b those of the block-level instance (B / b slots), the
    claims' statements in blocks (docs/model.md §Blocks)."""
    from proofs_check.bounds import claim_bounds

    if block_size == 1:
        return claim_bounds(workload, budget, policy, batch=batch)
    view = block_workload(workload, block_size)
    if view.workload is None:
        return []
    return claim_bounds(view.workload, budget // block_size, policy, batch=batch)


def _several_workers(args, workload) -> int:
    from kvtheory.cluster.optimum import routing_ratio

    if not args.router:
        raise InputError("--workers needs --router NAME")
    cluster = build_cluster(args, args.workers)
    result = routing_ratio(
        workload,
        cluster,
        args.router,
        args.eviction or "lru",
        seed=args.seed,
        output_len=args.output_len,
        router_options=parse_params(args.router_opt),
        time_limit=60.0 if args.time_limit is None else args.time_limit,
        evict_amount=args.evict_amount,
    )
    emit(result.to_dict(), args.json)
    return 0
