"""Reference L-LRU (SGLang's RadixCache): evict the whole least-recently-accessed leaf run."""

from kvtheory.reference.core import register_reference
from kvtheory.reference.runs import RunPolicy


@register_reference
class ReferenceLRU(RunPolicy):
    name = "lru"
    refresh = True
    whole_node = True


class ReferenceLRUNoSplitRefresh(ReferenceLRU):
    """L-LRU *without* SGLang's refresh of the run a query stops inside: the split-off tail keeps its old
    access time (only the head, on the query's path, is stamped now). Not the model; used to show that
    the refresh changes results."""

    name = "lru-no-split-refresh"
    refresh_split = False
