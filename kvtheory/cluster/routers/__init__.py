"""Online routers, one file each, all behind :class:`Router` (docs/cluster.md §Routers), beside their
helpers (approx_tree.py, base.py, characters.py, rls.py; compiled/ holds numba builds of them).

Each router module registers its class with ``@register_router``; importing this package imports every
module in it, so a new router is one new file here.
"""

import importlib
import pkgutil

from kvtheory.cluster.routers.base import Router, RouterView
from kvtheory.registry import Registry

#: every router by name: ``kvtheory route --router NAME``
ROUTERS: Registry = Registry("router")
register_router = ROUTERS.register
router_class = ROUTERS.lookup

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

from kvtheory.cluster.routers.cache_aware import CacheAware  # noqa: E402
from kvtheory.cluster.routers.cache_aware_adaptive import CacheAwareAdaptive  # noqa: E402
from kvtheory.cluster.routers.lbgr import LBGR  # noqa: E402
from kvtheory.cluster.routers.lbgr_calibrated import LBGRCalibrated, LBGRFull  # noqa: E402
from kvtheory.cluster.routers.least_load import LeastLoad  # noqa: E402
from kvtheory.cluster.routers.random_router import RandomRouter  # noqa: E402
from kvtheory.cluster.routers.round_robin import RoundRobin  # noqa: E402

__all__ = [
    "LBGR",
    "LBGRCalibrated",
    "LBGRFull",
    "ROUTERS",
    "CacheAware",
    "CacheAwareAdaptive",
    "LeastLoad",
    "RandomRouter",
    "RoundRobin",
    "Router",
    "RouterView",
    "register_router",
    "router_class",
]
