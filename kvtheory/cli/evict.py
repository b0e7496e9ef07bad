"""``kvtheory evict --workload FILE --budget B --policy NAME [--batch BETA] [--block-size b] [--seed S] [--seeds N]
[--predictor P [--noise X]]
[--evict-amount shortfall|allocation] [--backend auto|python|compiled] --json``."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import (
    add_backend_option,
    add_block_size_option,
    add_evict_amount_option,
    add_json_option,
    add_predictor_options,
    add_workload_options,
    emit,
    load_workload,
    policy_names,
    reject_seeds,
    told,
)
from kvtheory.policies import policy_class
from kvtheory.simulate import run_seeds
from kvtheory.stats import summarize


def register(parser) -> None:
    add_workload_options(parser)
    add_block_size_option(parser)
    add_predictor_options(parser)
    parser.add_argument("--policy", required=True, help=f"an online policy: {policy_names()}")
    parser.add_argument("--seed", type=options.seed, default=0, help="seed of the first run (default 0)")
    parser.add_argument("--seeds", type=options.runs, default=1, metavar="N", help="runs with seeds S..S+N-1")
    add_evict_amount_option(parser)
    add_backend_option(parser)
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    cls = policy_class(told(args.policy, args))
    reject_seeds(cls, args.seeds)
    workload = load_workload(args)
    seeds = range(args.seed, args.seed + args.seeds)
    runs = run_seeds(
        workload,
        args.budget,
        cls,
        seeds,
        batch=args.batch,
        evict_amount=args.evict_amount,
        backend=args.backend or "auto",
        block_size=args.block_size,
    )
    record = runs[0].to_dict()  # the first seed's run; the summary over seeds follows
    if len(runs) > 1:
        misses = summarize([run.misses for run in runs])
        hit_rates = summarize([run.hit_rate for run in runs])
        record.update(
            seeds=list(seeds),
            misses_mean=misses.mean,
            misses_std=misses.std,
            misses_ci95=list(misses.ci),
            hit_rate_mean=hit_rates.mean,
            misses_per_seed=[run.misses for run in runs],
        )
    emit(record, args.json)
    return 0
