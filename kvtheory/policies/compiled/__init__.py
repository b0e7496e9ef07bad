"""Compiled (numba) cores of the policies; imported only when a run uses them, so that numba's import
cost is paid by those runs alone."""

import sys

#: Runs of fewer queries go to the per-edge classes unless numba is loaded in the process already: loading
#: numba and a core costs about 0.55 s of CPU once per process, while the per-edge radix classes serve 4-5 us
#: per query (the core 0.5-0.8 us) on the workloads measured (paper-size gsp, adversaries). Both give the
#: same hits.
CORE_MIN_QUERIES = 100_000

#: ... or of at least this many tokens in all, for the samplers (RLT, random-leaf), whose per-edge classes
#: take a step per block of draws, so that their cost grows with the tokens evicted rather than the queries.
CORE_MIN_TOKENS = 50_000_000

#: ... or for rlt-authors, whose per-edge class takes a Python step (about 1.7 us) per evicted token, of at
#: least this many tokens in all (an upper bound on the tokens evicted): about the numba load's cost in draws.
CORE_MIN_DRAWN_TOKENS = 500_000


def core_pays_off(queries: int, tokens: int = 0, min_tokens: int | None = None) -> bool:
    """Whether a run of ``queries`` queries (``tokens`` tokens in all, where the policy's per-edge cost
    grows with them) should load a compiled core: it is long enough (:data:`CORE_MIN_QUERIES`, or
    ``min_tokens`` tokens, by default :data:`CORE_MIN_TOKENS`), or numba is loaded in this process already."""
    enough_tokens = tokens >= (CORE_MIN_TOKENS if min_tokens is None else min_tokens)
    return queries >= CORE_MIN_QUERIES or enough_tokens or "numba" in sys.modules
