"""token-LRU: L-LRU's order, one token at a time."""

from kvtheory.policies import register_policy
from kvtheory.policies.radix import RadixPolicy


@register_policy
class TokenLRU(RadixPolicy):
    """token-LRU (docs/policies.md §token-LRU): as L-LRU, but evict only the last token of the LRU leaf
    node at a time."""

    name = "token-lru"
    refresh_on_hit = True
    whole_node = False
    compiled_core = True
