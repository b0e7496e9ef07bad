"""Exact competitive analysis on small instances (docs/game.md): the online game between a policy and an
oblivious adversary over a finite universe of queries, solved exactly.

- :func:`worst`: a policy's exact worst ratio ALG/OPT (E[ALG]/OPT for a randomized policy) over every sequence
  of up to H queries of the universe, with a witness; :func:`excess`: the same search for max ALG - f * OPT,
  which checks an additive bound ALG <= f * OPT + c exactly;
- :func:`limit`: a deterministic policy's asymptotic ratio, the maximum-ratio cycle of the finite graph of
  (policy state, normalised work function), with the cycle as certificate;
- :func:`best_deterministic`: the smallest worst ratio any deterministic online algorithm reaches up to H, by
  backward induction over the game's states, with both optimal strategies (:func:`check_strategies`);
- :func:`best_randomized`: the same over randomized online algorithms, from a linear programme, with the
  algorithm's strategy and the adversary's distribution each checked in exact arithmetic.
"""

from kvtheory.game.best import BestResult, best_deterministic, check_strategies
from kvtheory.game.limit import LIMIT_NODES, LimitResult, limit
from kvtheory.game.randomized import RandomizedBest, best_randomized
from kvtheory.game.search import STATE_LIMIT, ExcessResult, GameResult, excess, worst
from kvtheory.game.universe import Universe

__all__ = [
    "LIMIT_NODES",
    "STATE_LIMIT",
    "BestResult",
    "ExcessResult",
    "GameResult",
    "LimitResult",
    "RandomizedBest",
    "Universe",
    "best_deterministic",
    "best_randomized",
    "check_strategies",
    "excess",
    "limit",
    "worst",
]
