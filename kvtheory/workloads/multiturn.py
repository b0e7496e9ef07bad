"""Multi-turn chat workloads (ShareGPT/UltraChat-like) of docs/formats.md §multiturn."""

from __future__ import annotations

import numpy as np

from kvtheory.errors import require
from kvtheory.model.workload import Workload
from kvtheory.workloads._common import (
    LLAMA3_VOCAB,
    arrange,
    build,
    check_common,
    distinct_ids,
    normalize_order,
    poisson_arrivals,
    streams,
)
from kvtheory.workloads.registry import register


@register("multiturn")
def multiturn(
    *,
    seed: int = 0,
    conversations: int = 128,
    turns: list[int] = [2, 4, 6, 8],  # noqa: B006 (never mutated)
    user_len: int = 1024,
    output_len: int = 4,
    system_len: int = 0,
    rate: float = 12.0,
    order: str = "random",
    vocab: int = LLAMA3_VOCAB,
) -> Workload:
    """Multi-turn chat: C conversations whose every turn resends the whole history plus a new message.

    Conversation c (c = 0..C-1) has T_c = turns[c mod len(turns)] turns. Its token stream is
    sys, u_1, o_1, u_2, o_2, ..., u_T: a system prompt ``sys`` of ``system_len`` tokens shared by all
    conversations (none when 0), user messages u_t of ``user_len`` tokens and outputs o_t of
    ``output_len`` tokens (synthetic ids standing for the model's answer). The prompt of turn t is the
    stream up to the end of u_t, of length system_len + t * user_len + (t - 1) * output_len: turn t's
    prompt extends turn t-1's prompt by o_{t-1} and u_t. Every u_1 starts with a distinct token, so two
    conversations share only the system prompt. Ids are uniform on [0, vocab).

    Orders: ``random`` (a uniformly random interleaving of the conversations that keeps each one's
    turns in order), ``round-robin`` (turn 1 of every conversation, then turn 2 of every conversation
    that has one, ...), ``grouped`` (each conversation's turns back to back). Arrivals are Poisson at
    ``rate`` queries/s; content, order and arrivals use separate streams spawned from
    ``default_rng(seed)``. Total prompt tokens: sum_c sum_{t<=T_c} (system_len + t * user_len +
    (t - 1) * output_len); the defaults (128 conversations, 32 each of 2/4/6/8 turns) give 640 queries.

    >>> w = multiturn(seed=0, conversations=2, turns=[2, 1], user_len=3, output_len=1, order="grouped")
    >>> [q.length for q in w]
    [3, 7, 3]
    >>> bool((w[1].tokens[:3] == w[0].tokens).all())
    True
    """
    require(conversations >= 1, f"conversations={conversations} must be >= 1")
    require(len(turns) >= 1 and all(t >= 1 for t in turns), f"turns={list(turns)} must be a list of counts >= 1")
    require(user_len >= 1, f"user_len={user_len} must be >= 1")
    require(system_len >= 0, f"system_len={system_len} must be >= 0")
    check_common(output_len, vocab)
    order = normalize_order(order)
    content, ordering, timing = streams(seed)
    system = content.integers(0, vocab, size=system_len, dtype=np.int64)
    heads = distinct_ids(content, conversations, vocab, "conversations")
    step = user_len + output_len
    histories = []
    for c in range(conversations):
        count = int(turns[c % len(turns)])
        stream = np.empty(system_len + count * step, dtype=np.int64)
        stream[:system_len] = system
        stream[system_len:] = content.integers(0, vocab, size=count * step, dtype=np.int64)
        stream[system_len] = heads[c]
        # Turn t (1-based) ends after u_t; every prompt is a prefix (a view) of the conversation's stream.
        histories.append([stream[: system_len + t * step - output_len] for t in range(1, count + 1)])
    tokens = arrange(histories, order, ordering)
    return build(tokens, poisson_arrivals(timing, len(tokens), rate), output_len)
