"""The one place that chooses how a policy is run: its per-edge Python engine or its compiled core.

The choice comes from an explicit ``backend`` and the run's size, never from what the process has imported:

- ``"python"``: the per-edge class itself;
- ``"compiled"``: the compiled core (an InputError if the policy has none for this run);
- ``"auto"``: the compiled core when the policy has one and the run is long enough to repay loading numba
  and the core (about 0.55 s of CPU once per process): at least :data:`CORE_MIN_QUERIES` queries, or at
  least the class's ``compiled_min_tokens`` tokens in all (for policies whose per-edge cost grows with the
  tokens evicted rather than the queries). Both engines give the same hits from the same seed.

A job of many runs in one process (a sweep's cells) resolves "auto" once for the whole job
(:func:`job_backend`): numba is loaded once per process, so a long job repays it however short its runs.

A run over an oracleGeneral file at batch size 1 whose policy has a streamed core (the radix policies, LFU-leaf,
RLT, random-leaf, rlt-authors) takes that core when the compiled one is chosen (:func:`streamed_hits`): the file
is read chunk by chunk, in O(distinct objects) memory, and the run's per-query hits are not kept; FIF takes its
streamed core on such a file too (:func:`flat_stream`, :mod:`kvtheory.optimum.flat_fif`). A workload in memory
whose queries are all one token takes the same cores at batch size 1 (:func:`compiled_hits`).

A policy class names its compiled core (``core_class``) and opts in to it on the class itself (``compiled_core``);
:func:`compiled_object` builds it, :func:`per_edge_object` the class itself, and nothing else does.
"""

from __future__ import annotations

import importlib

from kvtheory.errors import InputError

BACKENDS = ("auto", "python", "compiled")
#: what "auto" becomes for every run of a long job (:func:`job_backend`): each run on its policy's compiled core
#: where it has one, else on its per-edge class (never an error)
PREFER_COMPILED = "prefer-compiled"

#: Runs of at least this many queries load a compiled core under "auto": the per-edge radix classes serve
#: 4-5 us per query (the core 0.5-0.8 us) on the workloads measured (paper-size gsp, adversaries).
CORE_MIN_QUERIES = 100_000

#: ... or of at least this many tokens in all, for the samplers (RLT, random-leaf), whose per-edge classes
#: take a step per block of draws, so that their cost grows with the tokens evicted.
CORE_MIN_TOKENS = 50_000_000

#: ... or for rlt-authors, whose per-edge class takes a Python step (about 1.7 us) per evicted token, of at
#: least this many tokens in all (an upper bound on the tokens evicted): about the numba load's cost in draws.
CORE_MIN_DRAWN_TOKENS = 500_000


def check_backend(backend: str) -> str:
    """``backend`` itself if it is one of :data:`BACKENDS` (or :data:`PREFER_COMPILED`, which a job passes on to
    its runs), else an InputError naming them."""
    if backend not in BACKENDS and backend != PREFER_COMPILED:
        raise InputError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return backend


def long_enough(queries: int, tokens: int = 0, min_tokens: int | None = None) -> bool:
    """Whether a run of ``queries`` queries (``tokens`` tokens in all) repays loading a compiled core:
    queries >= :data:`CORE_MIN_QUERIES`, or tokens >= ``min_tokens`` where the engine's cost grows with tokens."""
    return queries >= CORE_MIN_QUERIES or (min_tokens is not None and tokens >= min_tokens)


def job_backend(backend: str, queries: int, tokens: int = 0) -> str:
    """The backend every run of a job takes, the job serving ``queries`` queries (``tokens`` tokens) in all over
    its runs: an explicit one is kept; "auto" becomes :data:`PREFER_COMPILED` when the whole job is
    :func:`long_enough` (by queries, or by tokens as for the samplers), else "python"."""
    if check_backend(backend) != "auto":
        return backend
    return PREFER_COMPILED if long_enough(queries, tokens, CORE_MIN_TOKENS) else "python"


def wants_compiled(cls, trie, backend: str) -> bool:
    """Whether ``backend`` asks for ``cls``'s compiled core on a run over ``trie``."""
    return _wants(cls, len(trie.end), trie.sequence_tokens, backend)


def _wants(cls, queries: int, tokens: int, backend: str) -> bool:
    if check_backend(backend) != "auto":
        return backend in ("compiled", PREFER_COMPILED)
    return long_enough(queries, tokens, cls.compiled_min_tokens)


def flat_stream(workload, batch: int):
    """The flat trace a run streams, chunk by chunk in O(distinct objects) memory
    (:mod:`kvtheory.policies.flat_streams`), or None: the workload's columns when they are an oracleGeneral
    file read lazily (:class:`~kvtheory.model.traces.flat.OracleGeneralColumns`) and the batch size is 1."""
    from kvtheory.model.traces.flat import OracleGeneralColumns

    columns = workload.queries
    return columns if isinstance(columns, OracleGeneralColumns) and batch == 1 else None


def _stream_kind(cls) -> str | None:
    """Which streamed core reproduces ``cls``'s compiled run on a flat trace at batch size 1: "radix" for a radix
    policy (L-LRU, token-LRU, FIFO-leaf: one-token edges are whole leaves), "lfu" for LFU-leaf, "sampler" for
    RLT and random-leaf (:mod:`kvtheory.policies.compiled.flat_sampler`), "authors" for rlt-authors
    (:mod:`kvtheory.policies.compiled.flat_authors`), provided the class itself opted in to
    its compiled core and keeps its family's ``core_class``; else None."""
    from kvtheory.policies.edge_cache import LeafTokenSampler
    from kvtheory.policies.lfu import LeafLFU
    from kvtheory.policies.radix import RadixPolicy
    from kvtheory.policies.rlt_authors import AuthorsRLT

    if not cls.__dict__.get("compiled_core", False):
        return None
    families = ((RadixPolicy, "radix"), (LeafLFU, "lfu"), (LeafTokenSampler, "sampler"), (AuthorsRLT, "authors"))
    for family, kind in families:
        if issubclass(cls, family) and cls.core_class == family.core_class:
            return kind
    return None


def streamed_hits(cls, workload, budget: int, batch: int, evict_amount: str = "shortfall", backend="auto", seed=None):
    """The total hits of ``cls``'s run streamed over its flat trace (:func:`flat_stream`) when ``backend``
    chooses the compiled core, the eviction amount is the shortfall and ``cls`` has a streamed core; else None
    (the run then takes :func:`compiled_hits` or the per-edge class). The same hits as the compiled core on
    the whole trie from the same ``seed`` (tests/policies/test_flat_stream.py, test_flat_sampler.py)."""
    columns = flat_stream(workload, batch)
    if columns is None or evict_amount != "shortfall" or not _wants(cls, len(columns), len(columns), backend):
        return None
    kind = _stream_kind(cls)
    return None if kind is None else _streamed(cls, kind, columns.id_chunks(), budget, seed)[0]


def _streamed(cls, kind: str, chunks, budget: int, seed, nodes: int | None = None):
    """(total hits, every query's hits or None) of ``cls``'s streamed core ``kind`` over the id ``chunks``; with
    ``nodes``, the ids are a trie's node numbers (below ``nodes``), and every query's hits are kept."""
    from kvtheory.policies.flat_streams import stream_authors, stream_run, stream_sampler

    numbered = {"query_hits": nodes is not None, "nodes": nodes}
    if kind == "sampler":
        return stream_sampler(chunks, budget, marking=cls.marking, seed=seed, **numbered)
    if kind == "authors":
        return stream_authors(chunks, budget, seed=seed, **numbered)
    return stream_run(chunks, budget, kind, refresh=getattr(cls, "refresh_on_hit", True), **numbered)


def one_token_flat(trie) -> bool:
    """Whether every query of ``trie`` is one token, so every trie node one token off the root."""
    return int(trie.column("depth").max(initial=0)) <= 1


def _no_core(cls, evict_amount: str) -> InputError:
    return InputError(
        f"policy {cls.name!r} has no compiled engine for this run (eviction amount {evict_amount}); "
        "use backend 'python' or 'auto'"
    )


def policy_object(cls, trie, budget: int, *, seed=None, evict_amount: str = "shortfall", backend: str = "auto"):
    """A fresh object of policy ``cls`` served batch by batch, from the engine ``backend`` chooses."""
    if wants_compiled(cls, trie, backend):
        made = compiled_object(cls, trie, budget, seed=seed, evict_amount=evict_amount)
        if made is not None:
            return made
        if backend == "compiled":
            raise _no_core(cls, evict_amount)
    return per_edge_object(cls, trie, budget, seed=seed, evict_amount=evict_amount)


def compiled_object(cls, trie, budget: int, *, seed=None, evict_amount: str = "shortfall"):
    """The compiled core of policy ``cls`` (its ``core_class``) as an object served batch by batch, the same hits
    from the same seed as ``cls`` itself, where the class itself opted in (``compiled_core`` on the class, not
    inherited: a class that changes the rule never runs its parent's core); None otherwise. numba is imported by
    the runs that use a core alone, and not by those whose kernels are compiled ahead of time
    (:mod:`kvtheory.policies.native`)."""
    if not cls.__dict__.get("compiled_core", False) or not cls.core_class:
        return None
    module, name = cls.core_class.split(":")
    core = getattr(importlib.import_module(f"kvtheory.policies.{module}"), name)
    return core.for_rule(cls, trie, budget, seed=seed, evict_amount=evict_amount)


def per_edge_object(cls, trie, budget: int, *, seed=None, evict_amount: str = "shortfall", **told):
    """Policy ``cls`` itself, constructed: its per-edge engine. The eviction amount is passed on only when it is
    not the default, so a user's policy written without an ``evict_amount`` argument still runs (and is refused,
    with an InputError, for ``"allocation"``). ``told``: ``predictions=`` for a policy that follows them."""
    from kvtheory.policies.base import check_evict_amount

    if check_evict_amount(evict_amount) == "shortfall":
        return cls(trie, budget, seed=seed, **told)
    try:
        return cls(trie, budget, seed=seed, evict_amount=evict_amount, **told)
    except TypeError as exc:
        if "evict_amount" not in str(exc):
            raise
        raise InputError(f"policy {cls.name!r} does not take an eviction amount (evict_amount)") from None


def told_object(cls, trie, budget: int, predictions, *, seed=None, evict_amount="shortfall", backend="auto"):
    """A fresh object of ``cls``, a policy that follows predictions, told ``predictions``: its compiled core
    (``cls.compiled_told``) when ``backend`` chooses it and it has one, else the per-edge class."""
    if wants_compiled(cls, trie, backend):
        core = getattr(cls, "compiled_told", None)
        made = None if core is None else core(trie, budget, predictions, seed=seed, evict_amount=evict_amount)
        if made is not None:
            return made
        if backend == "compiled":
            raise _no_core(cls, evict_amount)
    return cls(trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)


def compiled_hits(cls, trie, budget: int, batch: int, seed=None, evict_amount: str = "shortfall", backend="auto"):
    """Every query's hits from ``cls``'s compiled core when ``backend`` chooses it, else None (the run is then
    served batch by batch by the object :func:`policy_object` makes). One-token queries at batch size 1 with
    shortfall eviction take the policy's streamed core (:func:`streamed_hits`), the trie's nodes as the ids of
    one chunk: the same hits as its whole-trie core, in a fraction of the time (no heap of stale entries)."""
    if not wants_compiled(cls, trie, backend):
        return None
    kind = _stream_kind(cls) if batch == 1 and evict_amount == "shortfall" else None
    if kind is not None and one_token_flat(trie):
        return _streamed(cls, kind, [trie.column("end")], budget, seed, trie.n_nodes)[1]
    made = compiled_object(cls, trie, budget, seed=seed, evict_amount=evict_amount)
    if made is None and backend == "compiled":
        raise _no_core(cls, evict_amount)
    return None if made is None else made.serve_all(batch)
