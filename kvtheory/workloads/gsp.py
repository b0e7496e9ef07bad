"""Generated shared prefix (GSP) workloads of docs/formats.md §gsp."""

from __future__ import annotations

from kvtheory.errors import require
from kvtheory.model.workload import Workload
from kvtheory.workloads._common import (
    LLAMA3_DOUBLE_NEWLINE,
    LLAMA3_VOCAB,
    arrange,
    build,
    check_common,
    distinct_ids,
    normalize_order,
    poisson_arrivals,
    shared_prefix_family,
    streams,
)
from kvtheory.workloads.registry import register


@register("gsp")
def gsp(
    *,
    seed: int = 0,
    groups: int = 128,
    prompts: int = 32,
    lengths: list[int] = [512, 1024, 2048, 4096, 8192],  # noqa: B006 (never mutated)
    prefix_ratio: float = 0.5,
    output_len: int = 4,
    rate: float = 12.0,
    order: str = "random",
    vocab: int = LLAMA3_VOCAB,
    separator: list[int] = [LLAMA3_DOUBLE_NEWLINE],  # noqa: B006 (never mutated)
) -> Workload:
    """Generated shared prefix: G groups x P prompts, each its group's system prompt, a separator, a question.

    Group g (g = 0..G-1) has total length L_g = lengths[g mod len(lengths)] (cycled, as the paper's
    ``--gsp-total-lens`` does) and shared prefix length S_g = min(max(round(prefix_ratio * L_g), 1),
    L_g - 1). Each of its P prompts is the group's S_g-token system prompt, the ``separator`` tokens,
    then a fresh question of L_g - S_g tokens: L_g + len(separator) tokens in all. This is the prompt of
    the reference benchmark (SGLang's generated-shared-prefix data set: system prompt, "\n\n",
    question); the default separator is "\n\n" as Llama 3's tokenizer writes it, the one token 271
    (``separator=[]`` gives the bare prefix + suffix). Token ids are uniform on [0, vocab), except that
    every group's first token is distinct (groups share no token node) and the P questions of a group
    start with distinct tokens (the prompts of a group share exactly the system prompt and the
    separator). Every query asks for ``output_len`` output tokens.

    Orders: ``grouped`` (all prompts of group 0, then group 1, ...: best case), ``round-robin`` (prompt
    i of every group in turn: worst case), ``random`` (a seeded uniformly random permutation). Arrivals
    are Poisson at ``rate`` queries/s (first at 0; ``rate=inf`` puts all at 0). Content, order and
    arrivals come from separate streams spawned from ``default_rng(seed)``, so the order alone changes
    nothing but the order.

    Totals, with s = len(separator): T = P * sum_g (L_g + s) tokens, of which
    sum_g (S_g + s + P * (L_g - S_g)) are distinct token nodes. The paper's setting (the defaults:
    128 x 32, lengths 512, 1024, 2048, 4096, 8192 cycled, so 26 groups each of 512/1024/2048 and 25 each
    of 4096/8192, ratio 0.5, output 4, 12 queries/s) gives T = 32 * 400,512 = 12,816,384 tokens (about
    12.8 million) and 6,606,464 distinct token nodes.

    >>> w = gsp(seed=1, groups=2, prompts=3, lengths=[8, 4], order="round-robin")
    >>> len(w), [q.length for q in w], w.total_tokens
    (6, [9, 5, 9, 5, 9, 5], 42)
    >>> bool((w[0].tokens[:5] == w[2].tokens[:5]).all()), int(w[0].tokens[4]), bool(w[0].tokens[5] != w[2].tokens[5])
    (True, 271, True)
    """
    require(groups >= 1 and prompts >= 1, f"groups={groups} and prompts={prompts} must be >= 1")
    require(len(lengths) >= 1, "lengths must list at least one group length")
    require(all(length >= 2 for length in lengths), f"every group length must be >= 2, got {list(lengths)}")
    require(0.0 < prefix_ratio < 1.0, f"prefix_ratio={prefix_ratio} must lie strictly between 0 and 1")
    check_common(output_len, vocab)
    sep = [int(t) for t in separator]
    require(all(0 <= t < vocab for t in sep), f"separator tokens must lie in [0, vocab={vocab}), got {sep}")
    order = normalize_order(order)
    content, ordering, timing = streams(seed)
    heads = distinct_ids(content, groups, vocab, "groups")
    members = []
    for g in range(groups):
        total = int(lengths[g % len(lengths)])
        prefix = min(max(int(round(prefix_ratio * total)), 1), total - 1)
        family = shared_prefix_family(content, int(heads[g]), prefix + len(sep), [total - prefix] * prompts, vocab)
        for tokens in family:
            tokens[prefix : prefix + len(sep)] = sep
        members.append(family)
    tokens = arrange(members, order, ordering)
    return build(tokens, poisson_arrivals(timing, len(tokens), rate), output_len)
