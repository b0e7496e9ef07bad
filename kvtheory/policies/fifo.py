"""FIFO-leaf: evict the last token of the leaf whose tokens were inserted earliest."""

from kvtheory.policies import register_policy
from kvtheory.policies.radix import RadixPolicy


@register_policy
class FifoLeaf(RadixPolicy):
    """FIFO-leaf (docs/policies.md §FIFO-leaf): one token at a time from the leaf inserted earliest; hits
    refresh nothing.

    On depth-1 instances (one-token queries) this is textbook FIFO paging.
    """

    name = "fifo"
    refresh_on_hit = False
    whole_node = False
    compiled_core = True
