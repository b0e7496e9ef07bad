"""Options and output shared by the subcommands."""

from __future__ import annotations

import argparse
import sys

import orjson

from kvtheory.cli import options
from kvtheory.errors import InputError
from kvtheory.model.traces import DEFAULT_BLOCK_SIZE, TRACE_FORMATS, format_names, read_workload
from kvtheory.policies import ONLINE_POLICIES, PREDICTIVE_POLICIES
from kvtheory.policies.base import EVICT_AMOUNTS
from kvtheory.policies.dispatch import BACKENDS


def add_format_options(parser: argparse.ArgumentParser) -> None:
    """``--format`` and ``--hash-block-size``, which go with every ``--workload`` (docs/formats.md §Trace formats)."""
    names = format_names()  # the registry's, read when the parser is built: a plug-in's format is a choice
    block_defaults = ", ".join(f"{name} {cls.block_size}" for name, cls in TRACE_FORMATS.items() if cls.block_size)
    parser.add_argument(
        "--format",
        default="auto",
        choices=names,
        help=f"workload file format: {', '.join(names)} (default auto: decided from the file)",
    )
    parser.add_argument(
        "--hash-block-size",
        type=options.block_size,
        default=None,
        metavar="N",
        help=f"how the file is read: tokens per hash id of a block trace (default: the format's, {block_defaults}; "
        f"else {DEFAULT_BLOCK_SIZE}); not the cache's block size (--block-size)",
    )


def add_block_size_option(parser: argparse.ArgumentParser) -> None:
    """``--block-size b``: the cache's block size (docs/model.md §Blocks)."""
    parser.add_argument(
        "--block-size",
        type=options.block_size,
        default=1,
        metavar="b",
        help="the cache's block size: it holds whole blocks of b tokens, a query's partial last block is never "
        "cached, and --budget must be a multiple of b (default 1: single tokens); not how a block trace is read "
        "(--hash-block-size)",
    )


def load_workload(args):
    """The workload of ``--workload`` in ``--format`` (with ``--hash-block-size``, or the format's default)."""
    return read_workload(args.workload, args.format, args.hash_block_size)


def add_workload_options(parser: argparse.ArgumentParser, *, batch: bool = True) -> None:
    parser.add_argument("--workload", required=True, metavar="FILE", help="workload file (see --format)")
    add_format_options(parser)
    parser.add_argument("--budget", required=True, type=options.budget, metavar="B", help="cache budget B in tokens")
    if batch:
        parser.add_argument(
            "--batch", type=options.batch, default=1, metavar="BETA", help="batch size beta (default 1)"
        )


#: the options that describe several workers (``add_cluster_options``), unused on one worker
CLUSTER_OPTIONS = ("gpu", "model", "gpus", "models", "a_miss", "a_cached", "decode", "output_len")


def reject_unused(args: argparse.Namespace, names, context: str) -> None:
    """An option that the chosen mode does not read is an InputError, never silently ignored."""
    for name in names:
        if getattr(args, name, None) is not None:
            raise InputError(f"--{name.replace('_', '-')} does not apply {context}")


def reject_seeds(cls, seeds: int) -> None:
    """``--seeds N`` (N > 1) with a deterministic policy, which would run once whatever N: an InputError. (A
    policy told by a noisy predictor counts as randomized: its predictions are drawn from the seed.)"""
    if seeds > 1 and not cls.randomized:
        raise InputError(f"--seeds {seeds}: {cls.name} is deterministic and runs once; --seeds is for randomized ones")


def add_predictor_options(parser: argparse.ArgumentParser) -> None:
    """``--predictor P`` and ``--noise X``, for the policies that follow predictions (docs/predictions.md)."""
    from kvtheory.model.predictions import PREDICTORS

    parser.add_argument(
        "--predictor",
        choices=list(PREDICTORS),
        help=f"for a policy that follows predictions ({', '.join(PREDICTIVE_POLICIES)}): who predicts each "
        "request's next one (oracle: the truth; logdis, dis, bin: the truth with noise --noise X, seeded by "
        "--seed; adversarial: the true order reversed; learned: online, from the trace's past, the one route takes)",
    )
    parser.add_argument(
        "--noise", type=options.noise, metavar="X", help="the noise strength of logdis and dis (>= 0) or bin (<= 1)"
    )


def add_evict_amount_option(parser: argparse.ArgumentParser, *, where: str = "") -> None:
    """``--evict-amount shortfall|allocation`` (docs/policies.md §How much is evicted)."""
    parser.add_argument(
        "--evict-amount",
        default="shortfall",
        choices=EVICT_AMOUNTS,
        help=f"{where}how much an eviction frees when a batch does not fit: shortfall (the model's demand "
        "paging, default) or allocation (the batch's whole uncached allocation, as SGLang's allocator asks)",
    )


def told(name: str, args: argparse.Namespace) -> str:
    """The policy ``name`` told by ``--predictor P [--noise X]``: the registered name of ``name@P[=X]``
    (:mod:`kvtheory.policies.predicted`; an InputError if ``name`` does not follow predictions, or P does not
    take X), or ``name`` itself without ``--predictor`` (``--noise`` alone is an InputError)."""
    from kvtheory.policies import policy_class

    predictor, noise = getattr(args, "predictor", None), getattr(args, "noise", None)
    if predictor is None:
        if noise is not None:
            raise InputError("--noise is the strength of a predictor: give --predictor too")
        return name
    return policy_class(f"{name}@{predictor}" + ("" if noise is None else f"={noise!r}")).name


def told_all(names: list[str], args: argparse.Namespace) -> list[str]:
    """:func:`told` for each policy of ``names`` that follows predictions (``--policies lru,blind-oracle`` with
    ``--predictor oracle`` tells blind-oracle only); an InputError if ``--predictor`` is given and none does."""
    if getattr(args, "predictor", None) is None:
        return [told(name, args) for name in names]
    followers = [name for name in names if name in PREDICTIVE_POLICIES]
    if not followers:
        raise InputError(
            f"--predictor: none of {', '.join(names)} follows predictions ({', '.join(PREDICTIVE_POLICIES)})"
        )
    return [told(name, args) if name in PREDICTIVE_POLICIES else name for name in names]


def policy_names() -> str:
    """The registered online policies' names, those that follow predictions last, for help strings: the
    registries', never a list typed here."""
    return ", ".join([*ONLINE_POLICIES, *PREDICTIVE_POLICIES])


def add_backend_option(parser: argparse.ArgumentParser) -> None:
    """``--backend auto|python|compiled`` (kvtheory.policies.dispatch)."""
    parser.add_argument(
        "--backend",
        default=None,
        choices=BACKENDS,
        help="the engine that serves the policy: python (per edge), compiled (the policy's numba core), or auto "
        "(default: compiled from 100,000 queries, or from the policy's token threshold, where it has a core)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def parse_params(pairs: list[str] | None) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; a pair without '=' is an InputError."""
    params: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--param expects key=value, got {pair!r}")
        params[key.strip()] = value.strip()
    return params


def emit(record: dict, as_json: bool) -> None:
    """Print a result: one JSON object, or aligned ``key: value`` lines."""
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        return
    width = max(len(key) for key in record)
    for key, value in record.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        print(f"{key:<{width}}  {value}")
