"""Conformance suites any plug-in can run, in the spirit of scikit-learn's ``check_estimator``: each takes a
class or a registered name, raises AssertionError naming the broken rule, and returns None when all hold.

- :func:`check_policy` (:mod:`kvtheory.testing.policies`): an eviction policy against the model's rules.
- :func:`check_router` (:mod:`kvtheory.testing.routers`): a router against the cluster's.

``parametrize_with_checks`` and ``parametrize_router_checks`` turn them into one pytest test per check.
"""

from kvtheory.testing.policies import check_policy, parametrize_with_checks, policy_checks
from kvtheory.testing.routers import check_router, parametrize_router_checks, router_checks

__all__ = [
    "check_policy",
    "check_router",
    "parametrize_router_checks",
    "parametrize_with_checks",
    "policy_checks",
    "router_checks",
]
