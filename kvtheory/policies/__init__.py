"""Online eviction policies, one file each, all behind :class:`EvictionPolicy` (docs/policies.md).

Each policy module registers its class with ``@register_policy``; importing this package imports every
module in it, so a new policy is one new file here (or, outside the package, a class decorated with
:func:`register_policy` in any module the user imports).
"""

import importlib
import pkgutil

from kvtheory.errors import InputError
from kvtheory.policies.base import EvictionPolicy
from kvtheory.policies.ledger import built_in
from kvtheory.registry import Registry

#: every online policy by name: ``kvtheory evict --policy NAME``
ONLINE_POLICIES: Registry = Registry("policy")
register_policy = ONLINE_POLICIES.register
#: the policies that follow predictions of the next request (docs/predictions.md): ``--policy NAME --predictor P``
PREDICTIVE_POLICIES: Registry = Registry("policy with predictions", plural="policies with predictions")
register_predictive_policy = PREDICTIVE_POLICIES.register


def policy_class(name: str) -> type[EvictionPolicy]:
    """The policy registered under ``name``, with predictions or without; ``NAME@PREDICTOR[=NOISE]`` is a policy
    that follows predictions bound to its predictor (:func:`~kvtheory.policies.predicted.told_by`). An
    InputError naming every policy otherwise."""
    from kvtheory.policies.predicted import SEPARATOR, parse_spec, told_by

    if SEPARATOR in name:
        base, predictor, noise = parse_spec(name)
        if base not in PREDICTIVE_POLICIES:
            raise InputError(f"policy {name!r}: only a policy that follows predictions takes one ({_predictive()})")
        return told_by(PREDICTIVE_POLICIES[base], predictor, noise)
    if name in PREDICTIVE_POLICIES:
        return PREDICTIVE_POLICIES[name]
    if name not in ONLINE_POLICIES:
        raise ONLINE_POLICIES.unknown(name, also=PREDICTIVE_POLICIES)
    return ONLINE_POLICIES[name]


def _predictive() -> str:
    return ", ".join(PREDICTIVE_POLICIES)


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def built_in_policies(*, randomized: bool | None = None) -> tuple[str, ...]:
    """The names of the policies kvtheory ships (the modules of this package, not plug-ins): L-LRU, the default
    policy everywhere, first, the others in registration order; with ``randomized`` only the randomized ones
    (True) or only the deterministic ones (False). The claims' policy lists and the tests' come from here. A block
    engine (``vllm``, docs/policies.md §vllm) is left out: it is not a rule of section 1's model (its cache is not
    prefix-closed and a prompt cached whole recomputes its last token), so section 1's claims do not speak of it."""
    names = [
        name
        for name, cls in ONLINE_POLICIES.items()
        if built_in(cls) and not cls.block_engine and (randomized is None or cls.randomized == randomized)
    ]
    return tuple(sorted(names, key=lambda name: name != "lru"))


from kvtheory.policies.blind_oracle import BlindOracle  # noqa: E402
from kvtheory.policies.fifo import FifoLeaf  # noqa: E402
from kvtheory.policies.lfu import LeafLFU  # noqa: E402
from kvtheory.policies.lru import LeafLRU  # noqa: E402
from kvtheory.policies.predictive_marker import PredictiveMarker  # noqa: E402
from kvtheory.policies.random_leaf import RandomLeaf  # noqa: E402
from kvtheory.policies.rlt import RandomizedLeafToken  # noqa: E402
from kvtheory.policies.rlt_authors import AuthorsRLT  # noqa: E402
from kvtheory.policies.rules import LeafView, PriorityRule, SamplerRule  # noqa: E402
from kvtheory.policies.token_lru import TokenLRU  # noqa: E402
from kvtheory.policies.vllm import VllmPrefixCache  # noqa: E402

__all__ = [
    "AuthorsRLT",
    "BlindOracle",
    "EvictionPolicy",
    "FifoLeaf",
    "LeafLFU",
    "LeafLRU",
    "LeafView",
    "ONLINE_POLICIES",
    "PREDICTIVE_POLICIES",
    "PredictiveMarker",
    "PriorityRule",
    "RandomLeaf",
    "RandomizedLeafToken",
    "SamplerRule",
    "TokenLRU",
    "VllmPrefixCache",
    "built_in_policies",
    "policy_class",
    "register_policy",
    "register_predictive_policy",
]
