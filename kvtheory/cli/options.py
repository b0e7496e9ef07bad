"""Argument types shared by every subcommand: each value is checked where argparse reads it.

Each function is an argparse ``type=``: it turns the text into a value or raises
``argparse.ArgumentTypeError``, which the parser prints as one line (``kvtheory CMD: error: argument
--budget: ...``) with exit status 2. Integers are decimal (``1.0``, ``1e3``, ``nan`` are errors); floats
must be finite unless a type says otherwise. The upper limits are far above any real use and keep every
later computation in range (int64 token counts, finite float times).
"""

from __future__ import annotations

import argparse
import math
import os

from kvtheory.model.records import MAX_SEED, MAX_TOKENS

MAX_RUNS = 10**6  # seeds of one run, instances of one check
MAX_WORKERS = 4096  # serving workers, pool processes, tensor-parallel GPUs
MAX_SECONDS = 1e9  # time limits, and the time coefficients a_miss, a_cached, decode (seconds per token)


def _integer(text: str, lo: int, hi: int, what: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}") from None
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"must be {what}, got {value if abs(value) < 10**30 else text[:40]}")
    return value


def _float(text: str, lo: float, hi: float, what: str, *, open_low: bool = False, infinite: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}") from None
    if math.isinf(value) and value > 0 and infinite:
        return value
    if not math.isfinite(value) or not lo <= value <= hi or (open_low and value == lo):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text[:40]}")
    return value


def budget(text: str) -> int:
    """B: a positive number of tokens."""
    return _integer(text, 1, MAX_TOKENS, f"a positive number of tokens (1 .. {MAX_TOKENS})")


def batch(text: str) -> int:
    """beta: a positive batch size."""
    return _integer(text, 1, MAX_TOKENS, f"a positive batch size (1 .. {MAX_TOKENS})")


def block_size(text: str) -> int:
    """Tokens per block (per hash id of a block trace, or per block of the cache): a positive number of tokens."""
    return _integer(text, 1, MAX_TOKENS, f"a positive number of tokens per block (1 .. {MAX_TOKENS})")


def tokens(text: str) -> int:
    """A non-negative number of tokens (an output length, an attention context)."""
    return _integer(text, 0, MAX_TOKENS, f"a non-negative number of tokens (0 .. {MAX_TOKENS})")


def workers(text: str) -> int:
    """A positive number of workers, processes or GPUs."""
    return _integer(text, 1, MAX_WORKERS, f"a positive integer (1 .. {MAX_WORKERS})")


def runs(text: str) -> int:
    """A positive number of runs (seeds per randomized policy)."""
    return _integer(text, 1, MAX_RUNS, f"a positive integer (1 .. {MAX_RUNS})")


def instances(text: str) -> int:
    """A non-negative number of random instances."""
    return _integer(text, 0, MAX_RUNS, f"a non-negative integer (0 .. {MAX_RUNS})")


def seed(text: str) -> int:
    """A seed: a non-negative integer below 2^63."""
    return _integer(text, 0, MAX_SEED, "a seed, an integer in 0 .. 2^63 - 1")


def noise(text: str) -> float:
    """A predictor's noise strength: a finite number >= 0 (the predictor checks its own range)."""
    return _float(text, 0.0, float("inf"), "a finite number >= 0")


def seconds(text: str) -> float:
    """A positive, finite time limit in seconds."""
    return _float(text, 0.0, MAX_SECONDS, f"a positive number of seconds (at most {MAX_SECONDS:g})", open_low=True)


def seconds_per_token(text: str) -> float:
    """A non-negative, finite time coefficient (seconds per token)."""
    return _float(text, 0.0, MAX_SECONDS, f"a non-negative number of seconds (at most {MAX_SECONDS:g})")


def fraction(text: str) -> float:
    """A fraction in (0, 1] (of memory, of peak FLOP/s or bandwidth)."""
    return _float(text, 0.0, 1.0, "a fraction in (0, 1]", open_low=True)


def rate(text: str) -> float:
    """Queries per second in [1e-9, 1e12] (slower rates would put arrivals past any float), or ``inf``
    (every arrival at 0)."""
    return _float(text, 1e-9, 1e12, "a rate in queries per second in [1e-9, 1e12], or inf", infinite=True)


def confidence(text: str) -> float:
    """A one-sided confidence level in [0.5, 1)."""
    value = _float(text, 0.5, 1.0, "a confidence level in [0.5, 1)")
    if value == 1.0:
        raise argparse.ArgumentTypeError("must be a confidence level in [0.5, 1), got 1")
    return value


def margin(text: str) -> float:
    """A relative margin in [0, 1)."""
    value = _float(text, 0.0, 1.0, "a margin in [0, 1)")
    if value == 1.0:
        raise argparse.ArgumentTypeError("must be a margin in [0, 1), got 1")
    return value


def output_file(text: str) -> str:
    """A file to write: a non-empty path that is not an existing directory."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got an empty one")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text[:200]} is a directory; expected a file name")
    return text


def dtype(text: str) -> str:
    """A weight or KV-cache dtype: bf16, fp16, fp32 or fp8 (or a torch name of one: bfloat16, float8_e4m3fn)."""
    from kvtheory.cluster.model_config import dtype_name
    from kvtheory.errors import InputError

    try:
        return dtype_name(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
