"""Long-document question answering workloads (Loogle-like) of docs/formats.md §longdoc."""

from __future__ import annotations

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
    shared_prefix_family,
    streams,
)
from kvtheory.workloads.registry import register


@register("longdoc")
def longdoc(
    *,
    seed: int = 0,
    documents: int = 512,
    questions: int = 4,
    lengths: list[int] = [1024, 2048, 4096, 8192],  # noqa: B006 (never mutated)
    lengths_mode: str = "cycle",
    question_len: int = 64,
    output_len: int = 4,
    rate: float = 12.0,
    order: str = "random",
    vocab: int = LLAMA3_VOCAB,
) -> Workload:
    """Long-document QA: D documents, Q questions each; a query is its whole document + a question.

    Document d has N_d tokens: lengths[d mod len(lengths)] with ``lengths_mode=cycle``, or drawn
    uniformly from ``lengths`` with ``lengths_mode=random`` (Loogle's documents truncated to 1024..8192
    tokens, as the paper's ``--doc-lens``). Each of its Q queries is the N_d document tokens followed by
    a question of ``question_len`` tokens; documents start with distinct tokens (they share nothing)
    and the questions of one document start with distinct tokens (its queries share exactly the
    document). Ids are uniform on [0, vocab). Total tokens: Q * sum_d (N_d + question_len); distinct
    token nodes: sum_d (N_d + Q * question_len).

    Orders as in ``gsp``: ``grouped`` (each document's questions back to back: best case),
    ``round-robin`` (question i of every document in turn: worst case), ``random`` (a seeded random
    permutation). Poisson arrivals at ``rate`` queries/s; content, order and arrivals use separate
    streams spawned from ``default_rng(seed)``.

    >>> w = longdoc(seed=0, documents=2, questions=2, lengths=[6, 10], question_len=2, order="grouped")
    >>> [q.length for q in w], w.total_tokens
    ([8, 8, 12, 12], 40)
    """
    require(documents >= 1 and questions >= 1, f"documents={documents} and questions={questions} must be >= 1")
    require(len(lengths) >= 1 and all(n >= 1 for n in lengths), f"lengths={list(lengths)} must be >= 1 each")
    require(lengths_mode in ("cycle", "random"), f"lengths_mode={lengths_mode!r} is not cycle or random")
    require(question_len >= 1, f"question_len={question_len} must be >= 1")
    check_common(output_len, vocab)
    order = normalize_order(order)
    content, ordering, timing = streams(seed)
    if lengths_mode == "cycle":
        doc_lens = [int(lengths[d % len(lengths)]) for d in range(documents)]
    else:
        doc_lens = [int(lengths[i]) for i in content.integers(0, len(lengths), size=documents)]
    heads = distinct_ids(content, documents, vocab, "documents")
    members = [
        shared_prefix_family(content, int(heads[d]), doc_lens[d], [question_len] * questions, vocab)
        for d in range(documents)
    ]
    tokens = arrange(members, order, ordering)
    return build(tokens, poisson_arrivals(timing, len(tokens), rate), output_len)
