"""Online eviction policies, one file each, all behind :class:`EvictionPolicy`."""

from kvtheory.errors import InputError
from kvtheory.policies.base import EvictionPolicy
from kvtheory.policies.fifo import FifoLeaf
from kvtheory.policies.lfu import LeafLFU
from kvtheory.policies.lru import LeafLRU
from kvtheory.policies.random_leaf import RandomLeaf
from kvtheory.policies.rlt import RandomizedLeafToken
from kvtheory.policies.token_lru import TokenLRU

ONLINE_POLICIES: dict[str, type[EvictionPolicy]] = {
    cls.name: cls for cls in (LeafLRU, TokenLRU, RandomizedLeafToken, FifoLeaf, RandomLeaf, LeafLFU)
}


def policy_class(name: str) -> type[EvictionPolicy]:
    """The online policy registered under ``name``; InputError names the known ones otherwise."""
    try:
        return ONLINE_POLICIES[name]
    except KeyError:
        known = ", ".join(ONLINE_POLICIES)
        raise InputError(f"unknown policy {name!r}; known policies: {known}") from None


__all__ = [
    "EvictionPolicy",
    "FifoLeaf",
    "LeafLFU",
    "LeafLRU",
    "ONLINE_POLICIES",
    "RandomLeaf",
    "RandomizedLeafToken",
    "TokenLRU",
    "policy_class",
]
