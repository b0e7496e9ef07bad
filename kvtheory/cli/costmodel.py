"""``kvtheory costmodel --gpu NAME (--model NAME | --model-config FILE) [--kv-dtype D] [--weight-dtype D]
[--mem-fraction F] [--mfu X] [--tp N] --json``."""

from __future__ import annotations

from kvtheory.cli import options
from kvtheory.cli.common import add_json_option, emit
from kvtheory.cluster.costmodel import (
    DEFAULT_MBU,
    DEFAULT_MEM_FRACTION,
    DEFAULT_MFU,
    cost_model,
    gpu,
    load_gpus,
    load_models,
    model,
)


def add_hardware_options(parser, *, gpu_help: str = "GPU name (see --list)") -> None:
    """--gpu, --model, --model-config, --kv-dtype, --weight-dtype, --mem-fraction, --mfu, --mbu, --tp, --gpus,
    --models (shared with ``route``)."""
    parser.add_argument("--gpu", metavar="NAME", help=gpu_help)
    parser.add_argument("--model", metavar="NAME", help="model name (see kvtheory costmodel --list)")
    parser.add_argument(
        "--model-config",
        metavar="FILE",
        help="a Hugging Face config.json instead of --model (GQA, MHA, MLA; dense or MoE)",
    )
    parser.add_argument(
        "--kv-dtype",
        type=options.dtype,
        metavar="D",
        help="KV-cache dtype: bf16, fp16, fp32, fp8 (default: the model's)",
    )
    parser.add_argument(
        "--weight-dtype",
        type=options.dtype,
        metavar="D",
        help="weight dtype: bf16, fp16, fp32, fp8 (default: the model's)",
    )
    parser.add_argument(
        "--mem-fraction",
        type=options.fraction,
        default=DEFAULT_MEM_FRACTION,
        metavar="F",
        help=f"fraction of GPU memory for weights + KV cache (default {DEFAULT_MEM_FRACTION})",
    )
    parser.add_argument(
        "--mfu", type=options.fraction, default=DEFAULT_MFU, metavar="X", help=f"prefill MFU (default {DEFAULT_MFU})"
    )
    parser.add_argument(
        "--mbu",
        type=options.fraction,
        default=DEFAULT_MBU,
        metavar="X",
        help=f"memory-bandwidth utilisation (default {DEFAULT_MBU})",
    )
    parser.add_argument(
        "--tp", type=options.workers, default=1, metavar="N", help="tensor-parallel GPUs per worker (default 1)"
    )
    parser.add_argument("--gpus", metavar="FILE", help="extra GPU CSV (same columns as kvtheory/data/gpus.csv)")
    parser.add_argument("--models", metavar="FILE", help="extra model CSV (same columns as kvtheory/data/models.csv)")


def model_given(args) -> bool:
    """Whether the command line names a model (--model or --model-config)."""
    return bool(args.model or getattr(args, "model_config", None))


def resolve_model(args):
    """The ModelSpec of --model NAME (with --models FILE) or --model-config FILE, with --kv-dtype and
    --weight-dtype applied; InputError for both or neither."""
    from kvtheory.cluster.model_config import read_model_config, with_dtypes
    from kvtheory.errors import InputError

    config = getattr(args, "model_config", None)
    if args.model and config:
        raise InputError("give --model NAME or --model-config FILE, not both")
    if config:
        if args.models:
            raise InputError("--models (an extra model CSV) goes with --model NAME, not --model-config")
        spec = read_model_config(config)
    elif args.model:
        spec = model(args.model, args.models)
    else:
        raise InputError("give --model NAME or --model-config FILE")
    return with_dtypes(spec, weight_dtype=getattr(args, "weight_dtype", None), kv_dtype=getattr(args, "kv_dtype", None))


def register(parser) -> None:
    add_hardware_options(parser)
    parser.add_argument(
        "--context",
        type=options.tokens,
        default=0,
        metavar="C",
        help="mean attention context for prefill FLOPs and decode (default 0)",
    )
    parser.add_argument("--list", action="store_true", help="list the GPUs and models with their sources")
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from kvtheory.errors import InputError

    if args.list:
        gpus, models = load_gpus(args.gpus), load_models(args.models)
        if args.json:
            emit({"gpus": [vars(g) for g in gpus.values()], "models": [vars(m) for m in models.values()]}, True)
            return 0
        for g in gpus.values():
            print(
                f"{g.name:<12} {g.peak_bf16_flops / 1e12:8.2f} TFLOP/s bf16  {g.hbm_bytes / 1e9:6.1f} GB  "
                f"{g.hbm_bandwidth / 1e9:7.0f} GB/s  "
                + (f"{g.peak_fp8_flops / 1e12:8.2f} TFLOP/s fp8  " if g.peak_fp8_flops else f"{'no fp8':>19}  ")
                + g.source
            )
        for m in models.values():
            shape = (
                f"MLA latent {m.kv_lora_rank}+{m.qk_rope_head_dim}"
                if m.attention == "mla"
                else f"{m.kv_heads} KV heads x {m.head_dim}"
            )
            print(
                f"{m.name:<16} {m.total_params / 1e9:7.2f}B total {m.active_params / 1e9:6.2f}B active  "
                f"{m.layers} layers  {shape}  {m.kv_bytes_per_token:,} KV B/token  {m.source}"
            )
        return 0
    if not args.gpu or not model_given(args):
        raise InputError("costmodel needs --gpu NAME and --model NAME or --model-config FILE (or --list)")
    g, m = gpu(args.gpu, args.gpus), resolve_model(args)
    cm = cost_model(g, m, mem_fraction=args.mem_fraction, mfu=args.mfu, mbu=args.mbu, tp=args.tp, context=args.context)
    record = cm.to_dict()
    record["gpu_source"] = g.source
    record["model_source"] = m.source
    record["attention"] = m.attention
    record["weight_dtype"] = m.weight_dtype or f"{m.dtype_bytes} bytes"
    record["kv_dtype"] = m.kv_dtype or f"{m.kv_element_bytes} bytes"
    if not args.json:
        record = {f"{key} ({UNITS[key]})" if key in UNITS else key: value for key, value in record.items()}
    emit(record, args.json)
    return 0


#: the unit of each figure of the text output (the JSON keeps bare numbers in these units)
UNITS = {
    "mem_fraction": "of HBM",
    "a_miss": "s per uncached prompt token",
    "a_cached": "s per cached prompt token",
    "decode_base": "s per output token, empty context",
    "decode_per_context_token": "s per output token per context token",
    "decode_compute": "s of compute per output token",
    "decode_per_output_token": "s per output token",
    "kv_bytes_per_token": "bytes",
    "kv_bytes_per_token_per_gpu": "bytes",
    "weight_bytes": "bytes",
    "budget": "tokens",
    "context": "tokens",
}
