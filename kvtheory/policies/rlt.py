"""RLT: randomized leaf-token eviction, a marking algorithm (the paper's logarithmic policy)."""

from kvtheory.policies import register_policy
from kvtheory.policies.edge_cache import LeafTokenSampler


@register_policy
class RandomizedLeafToken(LeafTokenSampler):
    """RLT (docs/policies.md §RLT): every token node of a served query is marked; to make room, evict a leaf token
    chosen uniformly at random among unmarked cached leaf tokens (never on the current path), one token
    at a time. When no unmarked leaf is left a new phase starts: all marks are cleared except the
    current batch's paths. Randomness: ``numpy.random.default_rng(seed)``.
    """

    name = "rlt"
    compiled_core = True
    marking = True
