"""L-LRU: SGLang's RadixCache eviction (whole least-recently-accessed leaf node)."""

from kvtheory.policies import register_policy
from kvtheory.policies.radix import RadixPolicy


@register_policy
class LeafLRU(RadixPolicy):
    """L-LRU (docs/policies.md §L-LRU): evict the whole least-recently-accessed leaf node, never on the current path.

    Every node on a served query's path gets the current access time; a node the query diverges inside
    is refreshed before being split, so both halves count as accessed now, and the split-off tail keeps
    the original node's creation id. Ties go to the node created earlier.
    """

    name = "lru"
    refresh_on_hit = True
    whole_node = True
    compiled_core = True
