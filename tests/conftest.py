import faulthandler
import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings

sys.path.insert(0, os.path.dirname(__file__))

#: user plug-ins the tests load themselves (``--plugin``, imports inside a test); collecting them as doctest
#: modules would register their policies for the whole session
collect_ignore = ["plugins"]

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
    takes seconds, which must not fall inside a hypothesis example's deadline. Each policy and FIF is run
    here on its compiled core (``backend="compiled"``) on a flat and a nested trie, whole and batch by
    batch; which engine a test reaches is its own explicit choice (kvtheory.policies.dispatch), never this
    warm-up's. A compiled object's fresh arrays are checked (tests/compiled_structure.py) before its first
    query: a broken initial state can send a kernel into an endless loop, and this is every session's
    first query, so the session fails on the broken invariant instead of hanging."""
    from compiled_structure import STRUCTURED, check_structure  # imports the compiled cores: loads numba

    from kvtheory import ONLINE_POLICIES, Workload, run_fif, run_policy

    for queries in ([[1], [2], [1]], [[1, 2], [1, 3], [1, 2]]):
        workload = Workload.from_token_lists(queries)
        run_fif(workload, 2, backend="compiled")
        for cls in ONLINE_POLICIES.values():
            if cls.block_engine:
                continue  # vLLM's block pool has no compiled core
            policy = cls.create(workload.trie, 2, seed=0, backend="compiled")
            if isinstance(policy, STRUCTURED):
                check_structure(policy)
            policy.serve([0])
            policy.cached_prefix(1)
            run_policy(workload, 2, cls, seed=0, backend="compiled")


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


#: seconds a test may run past its pytest-timeout limit before :func:`hang_watchdog` ends the run
WATCHDOG_MARGIN_S = 60
#: a duplicate of the terminal's stderr, taken before any test runs: while a test runs, pytest's capture
#: points file descriptor 2 at a temporary file, which a process that the watchdog ends never prints
_WATCHDOG_STDERR: list[int] = []


def pytest_configure(config):
    _WATCHDOG_STDERR.append(os.dup(sys.__stderr__.fileno()))


def _timeout_s(request) -> float:
    """The test's pytest-timeout limit in seconds, as pytest-timeout resolves it: its ``timeout`` marker,
    else ``--timeout``, else the ini value; 0 for none (or without pytest-timeout)."""
    marker = request.node.get_closest_marker("timeout")
    if marker is not None and (marker.args or "timeout" in marker.kwargs):
        value = marker.args[0] if marker.args else marker.kwargs["timeout"]
    else:
        value = request.config.getoption("timeout", None)
        if value is None:
            try:
                value = request.config.getini("timeout")
            except ValueError:  # pytest-timeout not loaded
                return 0.0
    try:
        return max(float(value or 0), 0.0)
    except (TypeError, ValueError):
        return 0.0


@pytest.fixture(autouse=True)
def hang_watchdog(request):
    """A hung test fails with its stack even inside compiled code. pytest-timeout's thread method needs the
    GIL to fire, which a numba kernel holds for its whole call; faulthandler's watchdog is a C thread that
    needs none: :data:`WATCHDOG_MARGIN_S` seconds after the test's own limit (its timeout marker's, so the
    notebook tests keep their longer one) it writes every thread's Python stack to stderr, the test
    function's frame and the frame that called into the kernel among them, and ends the process. A test
    with no limit (timeout 0) gets no watchdog; the watchdog is cancelled after the test."""
    limit = _timeout_s(request)
    if not limit:
        yield
        return
    faulthandler.dump_traceback_later(limit + WATCHDOG_MARGIN_S, exit=True, file=_WATCHDOG_STDERR[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
