"""Reference token-LRU: L-LRU's order, but one token (the last of the LRU leaf run) at a time."""

from kvtheory.reference.core import register_reference
from kvtheory.reference.runs import RunPolicy


@register_reference
class ReferenceTokenLRU(RunPolicy):
    name = "token-lru"
    refresh = True
    whole_node = False
