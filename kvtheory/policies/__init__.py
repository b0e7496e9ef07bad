"""Online eviction policies, one file each, all behind :class:`EvictionPolicy` (docs/policies.md).

Each policy module registers its class with ``@register_policy``; importing this package imports every
module in it, so a new policy is one new file here (or, outside the package, a class decorated with
:func:`register_policy` in any module the user imports).
"""

import importlib
import pkgutil

from kvtheory.policies.base import EvictionPolicy
from kvtheory.policies.ledger import built_in
from kvtheory.registry import Registry

#: every online policy by name: ``kvtheory evict --policy NAME``
ONLINE_POLICIES: Registry = Registry("policy")
register_policy = ONLINE_POLICIES.register
policy_class = ONLINE_POLICIES.lookup

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def built_in_policies(*, randomized: bool | None = None) -> tuple[str, ...]:
    """The names of the policies kvtheory ships (the modules of this package, not plug-ins): L-LRU, the default
    policy everywhere, first, the others in registration order; with ``randomized`` only the randomized ones
    (True) or only the deterministic ones (False). The claims' policy lists and the tests' come from here."""
    names = [
        name
        for name, cls in ONLINE_POLICIES.items()
        if built_in(cls) and (randomized is None or cls.randomized == randomized)
    ]
    return tuple(sorted(names, key=lambda name: name != "lru"))


from kvtheory.policies.fifo import FifoLeaf  # noqa: E402
from kvtheory.policies.lfu import LeafLFU  # noqa: E402
from kvtheory.policies.lru import LeafLRU  # noqa: E402
from kvtheory.policies.random_leaf import RandomLeaf  # noqa: E402
from kvtheory.policies.rlt import RandomizedLeafToken  # noqa: E402
from kvtheory.policies.rlt_authors import AuthorsRLT  # noqa: E402
from kvtheory.policies.rules import LeafView, PriorityRule, SamplerRule  # noqa: E402
from kvtheory.policies.token_lru import TokenLRU  # noqa: E402

__all__ = [
    "AuthorsRLT",
    "EvictionPolicy",
    "FifoLeaf",
    "LeafLFU",
    "LeafLRU",
    "LeafView",
    "ONLINE_POLICIES",
    "PriorityRule",
    "RandomLeaf",
    "RandomizedLeafToken",
    "SamplerRule",
    "TokenLRU",
    "built_in_policies",
    "policy_class",
    "register_policy",
]
