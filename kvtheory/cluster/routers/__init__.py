"""Online routers, one file each, all behind :class:`Router` (MODEL.md §2)."""

from kvtheory.cluster.routers.base import Router, RouterView
from kvtheory.cluster.routers.cache_aware import CacheAware
from kvtheory.cluster.routers.cache_aware_adaptive import CacheAwareAdaptive
from kvtheory.cluster.routers.lbgr import LBGR, LBGRFull
from kvtheory.cluster.routers.least_load import LeastLoad
from kvtheory.cluster.routers.random_router import RandomRouter
from kvtheory.cluster.routers.round_robin import RoundRobin
from kvtheory.errors import InputError

ROUTERS: dict[str, type[Router]] = {
    cls.name: cls for cls in (RoundRobin, RandomRouter, LeastLoad, CacheAware, LBGR, LBGRFull, CacheAwareAdaptive)
}


def router_class(name: str) -> type[Router]:
    """The router registered under ``name``; InputError names the known ones otherwise."""
    try:
        return ROUTERS[name]
    except KeyError:
        raise InputError(f"unknown router {name!r}; known routers: {', '.join(ROUTERS)}") from None


__all__ = [
    "LBGR",
    "LBGRFull",
    "ROUTERS",
    "CacheAware",
    "CacheAwareAdaptive",
    "LeastLoad",
    "RandomRouter",
    "RoundRobin",
    "Router",
    "RouterView",
    "router_class",
]
