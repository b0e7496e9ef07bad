"""Multi-turn conversations as a block-hashed (Mooncake-format) trace, docs/formats.md §chat-blocks."""

from __future__ import annotations

import numpy as np

from kvtheory.errors import require
from kvtheory.model.query import BlockQuery
from kvtheory.model.workload import Workload
from kvtheory.workloads._common import streams
from kvtheory.workloads.registry import register


def _lengths(rng: np.random.Generator, mean: int, size: int) -> np.ndarray:
    """Uniform on [1, 2 * mean - 1] (mean ``mean``)."""
    return rng.integers(1, 2 * mean, size=size)


@register("chat-blocks")
def chat_blocks(
    *,
    seed: int = 0,
    conversations: int = 64,
    turns: list[int] = [2, 4, 6, 8],  # noqa: B006 (never mutated)
    system_prompts: int = 4,
    system_len: int = 2048,
    user_len: int = 512,
    output_len: int = 128,
    block_size: int = 512,
    rate: float = 1.0,
    think: float = 20.0,
) -> Workload:
    """Multi-turn conversations written as block ids (the Mooncake trace format), served in arrival order.

    Conversation c has T_c = turns[c mod len(turns)] turns and one of ``system_prompts`` shared system
    prompts of ``system_len`` tokens (chosen uniformly). Its token stream is sys, u_1, o_1, ..., u_T with
    user messages and outputs of lengths uniform on [1, 2 * user_len - 1] and [1, 2 * output_len - 1];
    turn t's prompt is the stream up to the end of u_t and asks for |o_t| output tokens. The stream is cut
    into blocks of ``block_size`` tokens: a block lying wholly inside the system prompt has the id of
    (system prompt, position), any other block the id of (conversation, position); ids are numbered in
    order of first appearance. So conversations share exactly the whole blocks of their common system
    prompt, a turn shares its conversation's earlier blocks, and the last block of a prompt is a head of
    the block the next turn completes (the partial-block rule of docs/formats.md §Mooncake traces).
    Conversations start as a Poisson process of ``rate`` per second; turns follow after exponential think
    times of mean ``think`` seconds; arrivals are whole milliseconds.

    >>> w = chat_blocks(seed=0, conversations=2, turns=[2], system_prompts=1, system_len=4, user_len=3,
    ...                 output_len=2, block_size=4)
    >>> [(q.hash_ids, q.length) for q in w]  # two conversations sharing system block 0, two turns each
    [((0, 1, 2), 9), ((0, 4), 8), ((0, 4, 5, 6), 13), ((0, 1, 2, 3), 15)]
    """
    require(conversations >= 1, f"conversations={conversations} must be >= 1")
    require(len(turns) >= 1 and all(t >= 1 for t in turns), f"turns={list(turns)} must be a list of counts >= 1")
    require(system_prompts >= 1, f"system_prompts={system_prompts} must be >= 1")
    require(system_len >= 0, f"system_len={system_len} must be >= 0")
    require(user_len >= 1 and output_len >= 1, "user_len and output_len must be >= 1")
    require(block_size >= 1, f"block_size={block_size} must be >= 1")
    require(rate > 0 and think >= 0, "rate must be > 0 and think >= 0")
    content, timing = streams(seed, 2)
    ids: dict[tuple, int] = {}
    requests = []  # (arrival ms, conversation, turn, query fields)
    start = 0.0
    for c in range(conversations):
        count = int(turns[c % len(turns)])
        system = int(content.integers(system_prompts))
        users = _lengths(content, user_len, count)
        outputs = _lengths(content, output_len, count)
        start += float(timing.exponential(1.0 / rate)) if c else 0.0
        clock = start
        stream_len = system_len
        for t in range(count):
            length = stream_len + int(users[t])
            blocks = -(-length // block_size)
            hash_ids = tuple(
                ids.setdefault(("s", system, i) if (i + 1) * block_size <= system_len else ("c", c, i), len(ids))
                for i in range(blocks)
            )
            requests.append((round(clock * 1000), c, t, hash_ids, length, int(outputs[t])))
            stream_len = length + int(outputs[t])
            clock += float(timing.exponential(think)) if think > 0 else 0.0
    requests.sort(key=lambda r: r[:3])
    return Workload(tuple(BlockQuery(h, length, block_size, ms / 1000, out) for ms, _, _, h, length, out in requests))
