"""``kvtheory route --workload FILE --workers M --router NAME --eviction POLICY --gpu NAME --model NAME
[--mem-fraction F] [--tp N] [--rate QPS] [--batch BETA | --engine continuous [--chunk-size N]] [--seed S]
[--evict-amount shortfall|allocation] [--predictor learned] [--block-size b]
--json``: the time-based simulation."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import (
    add_block_size_option,
    add_evict_amount_option,
    add_format_options,
    add_json_option,
    add_predictor_options,
    emit,
    load_workload,
    parse_params,
    policy_names,
    told,
)
from kvtheory.cli.costmodel import add_hardware_options
from kvtheory.cluster.engines import DEFAULT_CHUNK_SIZE, ENGINES
from kvtheory.errors import InputError


def register(parser) -> None:
    parser.add_argument("--workload", required=True, metavar="FILE", help="workload file (see --format)")
    add_format_options(parser)
    parser.add_argument("--workers", required=True, type=options.workers, metavar="M", help="number of workers")
    parser.add_argument(
        "--router",
        required=True,
        help="round-robin, random, least-load, cache-aware, lbgr, lbgr-calibrated, lbgr-full, cache-aware-adaptive",
    )
    parser.add_argument("--router-opt", action="append", metavar="KEY=VALUE", help="router option (repeatable)")
    parser.add_argument("--oracle", action="store_true", help="let the router see the workers' true caches and queues")
    parser.add_argument(
        "--eviction",
        "--policy",
        required=True,
        metavar="POLICY",
        help=f"every worker's online policy (--policy: the same option, as on evict): {policy_names()}",
    )
    add_evict_amount_option(parser, where="every worker's eviction: ")
    add_predictor_options(parser)  # only learned runs in a cluster (kvtheory.cluster.predicted)
    add_block_size_option(parser)  # every worker's cache (kvtheory.cluster.blocks); batch engine only at b > 1
    add_cluster_options(parser)
    parser.add_argument(
        "--rate", type=options.rate, metavar="QPS", help="Poisson arrivals at QPS (inf: all at 0); default: the file's"
    )
    parser.add_argument(
        "--output-len", type=options.tokens, metavar="N", help="output tokens per query (default: the file's, else 0)"
    )
    parser.add_argument(
        "--batch", type=options.batch, default=1, metavar="BETA", help="batch engine's batch size beta (default 1)"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="batch",
        help="batch: each worker serves its queue in batches of --batch, one after another (default); "
        "continuous: SGLang-style continuous batching with chunked prefill",
    )
    parser.add_argument(
        "--chunk-size",
        type=options.budget,
        metavar="N",
        help="continuous engine: prefill tokens per iteration (SGLang's chunked_prefill_size; "
        f"default {DEFAULT_CHUNK_SIZE})",
    )
    parser.add_argument(
        "--seed", type=options.seed, default=0, help="seed of routers, policies and --rate arrivals (default 0)"
    )
    add_json_option(parser)
    parser.set_defaults(run=run)


def add_cluster_options(parser, *, budget: bool = True) -> None:
    """Options that define the workers: --gpu/--model/... (the cost model), or, without them, plain
    coefficients --a-miss/--a-cached/--decode with --budget (for theory instances). ``budget=False``
    when the parser already has a --budget option (it is then read the same way)."""
    add_hardware_options(parser, gpu_help="GPU name, or a comma-separated list cycled over the workers")
    if budget:
        parser.add_argument(
            "--budget", type=options.budget, metavar="B", help="tokens per worker (overrides the cost model's B)"
        )
    parser.add_argument(
        "--a-miss",
        type=options.seconds_per_token,
        metavar="S",
        help="without --gpu: seconds per missed token (default 1)",
    )
    parser.add_argument(
        "--a-cached",
        type=options.seconds_per_token,
        metavar="S",
        help="without --gpu: seconds per cached token (default 0)",
    )
    parser.add_argument(
        "--decode",
        type=options.seconds_per_token,
        metavar="S",
        help="without --gpu: seconds per output token (default 0)",
    )


def build_cluster(args, workers: int):
    """The cluster of ``workers`` workers from the options of :func:`add_cluster_options`."""
    from dataclasses import replace

    from kvtheory.cli.costmodel import model_given, resolve_model
    from kvtheory.cluster.cluster import Cluster
    from kvtheory.cluster.costmodel import cost_model, gpu

    if isinstance(workers, bool) or workers is None or workers < 1:
        raise InputError(f"--workers must be a positive integer, got {workers}")
    plain = [name for name in ("a_miss", "a_cached", "decode") if getattr(args, name, None) is not None]
    dtypes = [flag for flag in ("kv_dtype", "weight_dtype") if getattr(args, flag, None)]
    if not args.gpu and not model_given(args):
        if dtypes:
            raise InputError(f"--{dtypes[0].replace('_', '-')} goes with --gpu NAME and a model (the cost model)")
        if args.gpus or args.models:
            raise InputError("--gpus and --models (extra cost-model tables) go with --gpu NAME --model NAME")
        if args.budget is None:
            raise InputError(
                "give --gpu NAME and --model NAME (the cost model), or --budget B with --a-miss/--a-cached"
            )
        a_miss = 1.0 if args.a_miss is None else args.a_miss
        a_cached = 0.0 if args.a_cached is None else args.a_cached
        decode = 0.0 if args.decode is None else args.decode
        if not (a_miss >= 0 and a_cached >= 0 and decode >= 0):
            raise InputError("--a-miss, --a-cached and --decode must be non-negative")
        return Cluster.uniform(workers, args.budget, a_miss=a_miss, a_cached=a_cached, decode_base=decode)
    if not args.gpu or not model_given(args):
        raise InputError(
            "give both --gpu NAME and --model NAME or --model-config FILE (the cost model sets a_miss, a_cached and B)"
        )
    if plain:
        raise InputError(f"--{plain[0].replace('_', '-')} goes without --gpu/--model (the cost model sets it)")
    spec = resolve_model(args)
    names = [name for name in args.gpu.split(",") if name.strip()]
    models = [
        cost_model(gpu(name, args.gpus), spec, mem_fraction=args.mem_fraction, mfu=args.mfu, mbu=args.mbu, tp=args.tp)
        for name in names
    ]
    cluster = Cluster.from_cost_models(models, workers)
    if args.budget is not None:
        if args.budget < 1:
            raise InputError(f"--budget must be a positive number of tokens, got {args.budget}")
        cluster = Cluster(tuple(replace(w, budget=args.budget) for w in cluster.workers))
    return cluster


def run(args) -> int:
    from kvtheory.cluster.simulation import simulate

    cluster = build_cluster(args, args.workers)
    if args.block_size > 1 and args.budget is None and args.gpu:  # the cost model's B, in whole blocks
        from kvtheory.cluster.blocks import whole_blocks

        cluster = whole_blocks(cluster, args.block_size)
    workload = load_workload(args)
    result = simulate(
        workload,
        cluster,
        args.router,
        told(args.eviction, args),
        batch=args.batch,
        seed=args.seed,
        rate=args.rate,
        output_len=args.output_len,
        router_options=parse_params(args.router_opt),
        oracle=args.oracle,
        engine=args.engine,
        chunk_size=args.chunk_size,
        evict_amount=args.evict_amount,
        block_size=args.block_size,
    )
    record = result.to_dict()
    record["rate"] = args.rate
    record["cluster"] = cluster.describe()
    if args.json:
        emit(record, True)
        return 0
    per_worker = record.pop("per_worker")
    state = record.pop("router_state")
    engine_state = record.pop("engine_state")
    workers = record.pop("cluster")
    if record["rate"] is None:
        record["rate"] = "arrivals from the workload file"
    emit({f"{key} ({UNITS[key]})" if key in UNITS else key: value for key, value in record.items()}, False)
    if state:
        print("router_state  " + "; ".join(f"{key} = {_plain(value)}" for key, value in state.items()))
    if engine_state:
        print("engine_state  " + "; ".join(f"{key} = {_plain(value)}" for key, value in engine_state.items()))
    print("\nworker  label                     budget  queries  hit_rate    busy_s  utilization")
    for row, w in zip(per_worker, workers):
        print(
            f"{row['worker']:>6}  {w['label']:<24} {w['budget']:>7} {row['queries']:>8}  {row['hit_rate']:8.4f}  "
            f"{row['busy']:8.2f}  {row['utilization']:11.3f}"
        )
    return 0


def _plain(value) -> str:
    """A router-state value for a person: numbers to 4 significant digits, lists without brackets' noise."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    return str(value)


#: units of the text output (the JSON keeps bare numbers in these units)
UNITS = {
    **{f"{kind}_{stat}": "s" for kind in ("latency", "ttft") for stat in ("mean", "p50", "p95")},
    "throughput_qps": "queries/s",
    "makespan": "s",
    "max_busy": "s",
    "rate": "queries/s",
    "tokens": "prompt tokens",
}
