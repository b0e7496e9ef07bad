"""Helpers the workload generators share: parameter checks, Poisson arrivals, query orders, and
shared-prefix families of synthetic token ids."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kvtheory.errors import require
from kvtheory.model.query import Query
from kvtheory.model.workload import Workload

#: Size of the Llama-3 tokenizer's vocabulary: synthetic token ids are drawn from [0, vocab).
LLAMA3_VOCAB = 128256
#: "\n\n" in the Llama-3 tokenizer (one token): the separator of the reference GSP prompts
LLAMA3_DOUBLE_NEWLINE = 271

ORDERS = ("random", "grouped", "round-robin")


def normalize_order(order: str) -> str:
    """``random``, ``grouped`` or ``round-robin`` (``round_robin`` and ``rr`` are accepted too)."""
    name = order.strip().lower().replace("_", "-")
    name = {"rr": "round-robin", "roundrobin": "round-robin"}.get(name, name)
    require(name in ORDERS, f"order={order!r} is not one of {', '.join(ORDERS)}")
    return name


def streams(seed: int, n: int = 3) -> list[np.random.Generator]:
    """``n`` independent generators spawned from ``numpy.random.default_rng(seed)``.

    Generators draw content, order and arrivals from separate streams, so changing the order leaves
    the queries' tokens and the arrival times as they were.
    """
    return np.random.default_rng(seed).spawn(n)


def poisson_arrivals(rng: np.random.Generator, n: int, rate: float) -> list[float]:
    """Arrival times (seconds) of ``n`` queries of a Poisson process of ``rate`` queries per second.

    The first query arrives at 0; the gaps are i.i.d. exponential with mean 1/rate. ``rate=inf`` sends
    every query at time 0.

    >>> poisson_arrivals(np.random.default_rng(0), 3, float("inf"))
    [0.0, 0.0, 0.0]
    """
    require(rate > 0 and not math.isnan(rate), f"rate={rate} must be a positive number of queries/s (or inf)")
    if math.isinf(rate):
        return [0.0] * n
    gaps = rng.exponential(1.0 / rate, size=max(n - 1, 0))
    return [0.0, *np.cumsum(gaps).tolist()][:n]


def distinct_ids(rng: np.random.Generator, n: int, vocab: int, what: str) -> np.ndarray:
    """``n`` distinct token ids drawn uniformly from [0, vocab) (an InputError if vocab < n)."""
    require(n <= vocab, f"{n} {what} need {n} distinct first tokens but vocab={vocab}")
    return rng.choice(vocab, size=n, replace=False).astype(np.int64)


def shared_prefix_family(
    rng: np.random.Generator, head: int, prefix_len: int, suffix_lens: Sequence[int], vocab: int
) -> list[np.ndarray]:
    """Token arrays ``prefix + suffix_i``: one shared prefix, then a suffix of ``suffix_lens[i]`` tokens.

    The prefix starts with ``head`` (callers give each family a distinct head, so families never share a
    token node); the suffixes start with pairwise distinct tokens, so the members share exactly the
    prefix and no two are equal. Every other token is uniform on [0, vocab).
    """
    lens = np.asarray(suffix_lens, dtype=np.int64)
    require(prefix_len >= 1, f"a shared prefix needs at least one token, got {prefix_len}")
    require(bool(np.all(lens >= 1)), "every suffix needs at least one token")
    prefix = rng.integers(0, vocab, size=prefix_len, dtype=np.int64)
    prefix[0] = head
    n = lens.size
    if n == 0:
        return []
    heads = distinct_ids(rng, n, vocab, "suffixes of one group")
    if np.all(lens == lens[0]):
        # One (n, L) matrix whose rows are the queries: a single allocation, rows are contiguous.
        matrix = np.empty((n, prefix_len + int(lens[0])), dtype=np.int64)
        matrix[:, :prefix_len] = prefix
        matrix[:, prefix_len:] = rng.integers(0, vocab, size=(n, int(lens[0])), dtype=np.int64)
        matrix[:, prefix_len] = heads
        return list(matrix)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    flat = rng.integers(0, vocab, size=int(lens.sum()), dtype=np.int64)
    flat[starts] = heads
    return [np.concatenate((prefix, flat[s : s + k])) for s, k in zip(starts.tolist(), lens.tolist())]


def arrange(groups: Sequence[Sequence], order: str, rng: np.random.Generator) -> list:
    """Flatten ``groups`` into one sequence in ``order``.

    ``grouped``: all of group 0, then all of group 1, ... (best case for a cache). ``round-robin``: the
    first member of every group in turn, then the second of every group, ... (worst case; a group that
    has run out is skipped). ``random``: a uniformly random interleaving drawn from ``rng`` that keeps
    each group's members in their order; when a group's members are exchangeable (i.i.d. suffixes), this
    is a uniformly random permutation of all the queries.

    >>> arrange([[1, 2], [3, 4, 5]], "round-robin", None)
    [1, 3, 2, 4, 5]
    """
    order = normalize_order(order)
    if order == "grouped":
        return [item for group in groups for item in group]
    if order == "round-robin":
        depth = max((len(group) for group in groups), default=0)
        return [group[i] for i in range(depth) for group in groups if i < len(group)]
    labels = rng.permutation(np.repeat(np.arange(len(groups)), [len(group) for group in groups]))
    cursor = [0] * len(groups)
    out = []
    for g in labels.tolist():
        out.append(groups[g][cursor[g]])
        cursor[g] += 1
    return out


def build(tokens: Sequence[np.ndarray], arrivals: Sequence[float] | None, output_len: int | None) -> Workload:
    """A workload of the given token arrays, arrival times and a common output length."""
    require(len(tokens) > 0, "the parameters give an empty workload (no queries)")
    if arrivals is None:
        return Workload(tuple(Query(t, None, output_len) for t in tokens))
    return Workload(tuple(Query(t, a, output_len) for t, a in zip(tokens, arrivals)))


def check_common(output_len: int, vocab: int) -> None:
    require(output_len >= 0, f"output_len={output_len} must be >= 0")
    require(vocab >= 2, f"vocab={vocab} must be >= 2")
