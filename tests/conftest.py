import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# mutation testing (docs/mutation-testing.md): the same examples on every run, so that a mutant is killed by
# what it changed and not by the luck of the draw; no time limit per example (a slow mutant is no kill); no
# shrinking (the first failing example kills the mutant, and shrinking it could outlast mutmut's time limit)
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session", autouse=True)
def compiled_cores():
    """Compile every compiled core (or load it from numba's cache) once, before any test: a cold compile
    takes seconds, which must not fall inside a hypothesis example's deadline. numba is loaded first, so
    from then on every run in the suite is served by a core wherever one applies
    (kvtheory.policies.compiled.core_pays_off): each policy and FIF is run here on a flat and a nested trie,
    whole and batch by batch. A compiled object's fresh arrays are checked (tests/compiled_structure.py)
    before its first query: a broken initial state can send a kernel into an endless loop, and this is
    every session's first query, so the session fails on the broken invariant instead of hanging."""
    from compiled_structure import STRUCTURED, check_structure  # imports the compiled cores: loads numba

    from kvtheory import ONLINE_POLICIES, Workload, run_fif, run_policy

    for queries in ([[1], [2], [1]], [[1, 2], [1, 3], [1, 2]]):
        workload = Workload.from_token_lists(queries)
        run_fif(workload, 2)
        for cls in ONLINE_POLICIES.values():
            policy = cls.create(workload.trie, 2, seed=0)
            if isinstance(policy, STRUCTURED):
                check_structure(policy)
            policy.serve([0])
            policy.cached_prefix(1)
            run_policy(workload, 2, cls, seed=0)


@pytest.fixture(autouse=True)
def plugins_unregistered():
    """Whatever a test registers from outside the package (a user's policy or router loaded with
    ``--plugin``, say) is unregistered after it, so no test's outcome depends on which tests ran before
    it: a test that runs every registered policy must not meet another test's plug-in."""
    from kvtheory.cluster.routers import ROUTERS
    from kvtheory.policies import ONLINE_POLICIES

    before = {id(registry): set(registry) for registry in (ONLINE_POLICIES, ROUTERS)}
    modules = set(sys.modules)
    yield
    for registry in (ONLINE_POLICIES, ROUTERS):
        for name in set(registry) - before[id(registry)]:
            if not registry[name].__module__.startswith("kvtheory."):
                del registry[name]
    for name in set(sys.modules) - modules:
        if name.startswith("kvtheory_plugin_"):
            del sys.modules[name]
