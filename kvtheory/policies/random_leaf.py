"""random-leaf: a uniformly random cached leaf token, no marking."""

from kvtheory.policies import register_policy
from kvtheory.policies.edge_cache import LeafTokenSampler


@register_policy
class RandomLeaf(LeafTokenSampler):
    """random-leaf (docs/policies.md §random-leaf): evict a uniformly random cached leaf token off the current batch's
    paths, one token at a time; nothing is remembered between batches.
    """

    name = "random-leaf"
    compiled_core = True
    marking = False
