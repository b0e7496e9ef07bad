"""Reference FIFO-leaf: one token at a time from the leaf run inserted earliest; hits refresh nothing.

A run split by a query keeps its insertion time on both halves (the head gets a new creation id).
"""

from kvtheory.reference.core import register_reference
from kvtheory.reference.runs import RunPolicy


@register_reference
class ReferenceFIFO(RunPolicy):
    name = "fifo"
    refresh = False
    whole_node = False
