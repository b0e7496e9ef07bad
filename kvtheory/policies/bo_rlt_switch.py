"""bo-rlt-switch: blind-oracle and RLT simulated side by side, the cache following the one with fewer misses,
switching deterministically (Wei 2020, "Better and simpler learning-augmented online caching": BlindOracle
combined with a robust policy by Fiat et al.'s deterministic switching; docs/policies.md §bo-rlt-switch).

Both are served every batch on their own caches: blind-oracle with the same predictions, RLT with the seed. With
c_BO and c_RLT their misses so far, the policy follows blind-oracle first and switches to the other one after a
batch where the followed one's misses exceed **twice** the other's (c_followed > 2 c_other); the switch applies
from the next batch. The engine owns the cache, so following F is lazy: to make room the policy evicts only
tokens that F does not hold after the batch, the deepest first (ties: the larger edge id). Those tokens are cached
leaves off the batch's paths (F's cache is prefix-closed and holds the batch), and evicting all of them brings the
cache inside F's, so the room is always there. While the cache equals F's it evicts exactly F's tokens: the
policy is F, hit for hit, until a switch, and each switch costs at most B extra misses.

Bound (ours; :func:`switch_bound`). With m = beta L_max, the most misses of a batch: lazily following F costs at
most F's misses plus B per switch (the tokens F holds and the cache does not never grow); the followed one's
misses at successive switches x_1 < x_2 < ... more than double, so all segments but the last cost less than
2 x_{s} + s B, with x_s <= 2 c_last + m, and the last one c_last <= 2 min(c_BO, c_RLT) + m. Hence
ALG <= 10 min(c_BO, c_RLT) + 7 m + s B with s < log2(4 min(c_BO, c_RLT) + 3 m) + 1 switches (x_1 >= 1). With the
oracle at batch 1, blind-oracle pays OPT (it is FIF) and the policy pays OPT while it follows it.

The compiled core (:mod:`kvtheory.policies.compiled.switch`, :meth:`BlindOracleRLTSwitch.compiled_told`) takes the
same decisions and RLT's same draws from the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kvtheory.policies import register_predictive_policy
from kvtheory.policies.blind_oracle import BlindOracle
from kvtheory.policies.edge_cache import EdgeCache
from kvtheory.policies.predicted import FollowsPredictions
from kvtheory.policies.rlt import RandomizedLeafToken

#: switch when the followed policy's misses exceed this factor times the other's
FACTOR = 2


def switch_bound(lead: int, budget: int, batch_misses: int) -> float:
    """The most misses the module docstring's bound allows: 10 c + 7 m + (log2(4 c + 3 m) + 1) B, with c =
    min(c_BO, c_RLT) = ``lead`` and m = ``batch_misses`` >= 1 the most misses of one batch (beta L_max)."""
    return 10 * lead + 7 * batch_misses + (math.log2(4 * lead + 3 * batch_misses) + 1) * budget


@register_predictive_policy
class BlindOracleRLTSwitch(FollowsPredictions, EdgeCache):
    """Follow blind-oracle or RLT, whichever has fewer misses, switching past a factor of 2 (module docstring)."""

    name = "bo-rlt-switch"
    randomized = True
    compiled_core = True
    core_class = "compiled.switch:CompiledSwitch"
    #: "auto" runs the compiled core from this many tokens in all (kvtheory.policies.dispatch): the per-edge class
    #: lists every outside token of each evicting batch and scans the cached edges; on GSP it takes 0.35 s at 1.5 M
    #: tokens and 1.1 s at 3.2 M (10 s at the paper's 12.8 M), about what loading numba and the core costs (0.55 s)
    #: near this many
    compiled_min_tokens = 2_000_000

    def __init__(
        self, trie, budget: int, *, seed: int | None = None, evict_amount: str = "shortfall", predictions=None
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        self.required(predictions)
        self.simulated = {
            "blind-oracle": BlindOracle(trie, budget, evict_amount=evict_amount, predictions=predictions),
            "rlt": RandomizedLeafToken(trie, budget, seed=seed, evict_amount=evict_amount),
        }
        self.misses = dict.fromkeys(self.simulated, 0)
        self.following = "blind-oracle"
        self.switches = 0

    @classmethod
    def compiled_told(cls, trie, budget: int, predictions, *, seed: int | None = None, evict_amount: str = "shortfall"):
        """The compiled core (:class:`~kvtheory.policies.compiled.switch.CompiledSwitch`) told ``predictions``, the
        same hits and draws from the same seed, where the rule opted in (``compiled_core`` on the class itself, or on
        the class a predictor is bound to: binding changes no rule); None otherwise."""
        rule = cls if cls.predictor is None else cls.__base__
        if not rule.__dict__.get("compiled_core", False):
            return None
        from kvtheory.policies.compiled.switch import CompiledSwitch  # numba, for the runs that use it

        return CompiledSwitch(cls, trie, budget, seed=seed, evict_amount=evict_amount, predictions=predictions)

    def serve(self, batch: Sequence[int]) -> list[int]:
        trie, kept = self.trie, self._kept
        paths = [trie.path(j) for j in batch]
        hits = [self.cached_prefix(j) for j in batch]
        tokens = sum(trie.depth[trie.end[j]] for j in batch)
        for name, policy in self.simulated.items():
            self.misses[name] += tokens - sum(policy.serve(batch))
        on_paths = {v for path in paths for v in path}
        missing = sum(trie.edge_len[v] - int(kept[v]) for v in on_paths)
        overflow = self.size + missing - self.budget
        if overflow > 0:
            self._evict_outside(self.simulated[self.following], self.tokens_to_free(overflow, missing), overflow)
        self._fill(paths)
        other = "rlt" if self.following == "blind-oracle" else "blind-oracle"
        if self.misses[self.following] > FACTOR * self.misses[other]:
            self.following = other
            self.switches += 1
        return hits

    def _evict_outside(self, target, tokens: int, overflow: int) -> None:
        """Evict up to ``tokens`` cached tokens that the policy ``target`` does not hold after the batch, deepest
        first (ties: the larger edge id): each is a cached leaf then. Fewer than ``overflow`` of them is an error."""
        trie, kept, parent, children = self.trie, self._kept, self.trie.parent, self._cached_children
        held = getattr(target, "kept_of", None) or target.kept().get  # blind-oracle's per-edge count is cheaper
        outside = [
            (trie.depth[parent[v]] + p, v)
            for v in map(int, kept.nonzero()[0])
            for p in range((held(v) or 0) + 1, int(kept[v]) + 1)
        ]
        if len(outside) < overflow:
            raise RuntimeError("nothing left to evict: the followed policy's cache does not fit the batch")
        for _, v in sorted(outside, reverse=True)[:tokens]:
            kept[v] -= 1
            self.size -= 1
            if kept[v] == 0:
                children[parent[v]] -= 1
