"""The compiled cores on general tries against the per-edge classes they reproduce: the radix core
(kvtheory/policies/compiled/radix.py) against L-LRU, token-LRU and FIFO-leaf (kvtheory/policies/radix.py),
the LFU core (kvtheory/policies/compiled/edge_cache.py) against LFU-leaf. Hit for hit, and cache for cache after
every batch, on random prefix tries, batch sizes 1 to 4, both eviction amounts; scripted runs where
evicting the whole allocation frees more than the shortfall, with their exact hits; and the cluster
simulation, whose workers are made by ``create``, against the per-edge class."""

from __future__ import annotations

import subprocess
import sys
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    ALL_BOUNDARIES,
    EXAMPLE_DEADLINE,
    boundary_examples,
    deep_prefix_queries,
    instances,
)

from kvtheory import ONLINE_POLICIES, InputError, Workload, batches, run_policy
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.simulation import simulate
from kvtheory.policies import FifoLeaf, LeafLFU, LeafLRU, TokenLRU, policy_class
from kvtheory.policies.base import EVICT_AMOUNTS
from kvtheory.policies.compiled.edge_cache import CompiledLFU
from kvtheory.policies.dispatch import compiled_object, per_edge_object
from kvtheory.policies.radix_core import CompiledRadix

#: the policies with compiled cores and both eviction amounts: every one but vllm, a block engine (vLLM's block
#: pool, tests/policies/test_vllm.py), which has no compiled core and evicts only what its allocation lacks
COMPILED = {name: cls for name, cls in ONLINE_POLICIES.items() if not cls.block_engine}

RADIX = ("lru", "token-lru", "fifo")
#: each policy with a general compiled core, and the core's class
CORES = {"lru": CompiledRadix, "token-lru": CompiledRadix, "fifo": CompiledRadix, "lfu": CompiledLFU}


def assert_same_runs(workload: Workload, budget: int, batch: int, amount: str) -> None:
    """Per-edge class and compiled core served side by side: equal hits, cache, size and cached prefixes
    after every batch; and the whole-run kernel call (and run_policy) gives the same hits."""
    trie = workload.trie
    for name, core in CORES.items():
        cls = policy_class(name)
        slow = cls(trie, budget, evict_amount=amount)
        fast = cls.create(trie, budget, evict_amount=amount, backend="compiled")
        assert isinstance(fast, core)
        hits = []
        for step, group in enumerate(batches(len(workload), batch)):
            context = f"{name} {amount} B={budget} batch={batch} step {step} {workload.token_lists()}"
            got = slow.serve(group)
            assert fast.serve(group) == got, context
            hits += got
            assert fast.kept() == slow.kept(), context
            assert fast.size == slow.size, context
            assert [fast.cached_prefix(j) for j in range(len(workload))] == [
                slow.cached_prefix(j) for j in range(len(workload))
            ], context
        assert core(cls, trie, budget, evict_amount=amount).serve_all(batch).tolist() == hits
        assert (
            run_policy(workload, budget, name, batch=batch, evict_amount=amount, backend="compiled").query_hits.tolist()
            == hits
        )


@pytest.mark.slow
@settings(max_examples=300, deadline=EXAMPLE_DEADLINE)
@boundary_examples(*ALL_BOUNDARIES, amount="allocation")
@boundary_examples(*ALL_BOUNDARIES, amount="shortfall")
@given(
    instance=instances(max_queries=14, max_length=6, alphabet=3, max_batch=4),
    amount=st.sampled_from(EVICT_AMOUNTS),
)
def test_core_matches_per_edge_class(instance, amount):
    workload, budget, batch = instance
    assert_same_runs(workload, budget, batch, amount)


@pytest.mark.slow
@settings(max_examples=150, deadline=EXAMPLE_DEADLINE)
@given(
    instance=instances(max_queries=20, max_length=9, alphabet=2, max_batch=4),
    amount=st.sampled_from(EVICT_AMOUNTS),
)
def test_core_matches_on_long_shared_edges(instance, amount):
    """A two-token alphabet and longer queries: long edges, cut inside by token eviction and refilled."""
    workload, budget, batch = instance
    assert_same_runs(workload, budget, batch, amount)


@pytest.mark.slow
def test_core_matches_on_larger_random_tries():
    """Hundreds of queries over deep shared prefixes, where long runs of splits and evictions build up."""
    rng = np.random.default_rng(2026)
    for trial in range(12):
        queries = deep_prefix_queries(rng)
        workload = Workload.from_token_lists(queries)
        batch = 1 + trial % 4
        longest = max(len(q) for q in queries)
        assert_same_runs(workload, batch * longest + int(rng.integers(0, 120)), batch, EVICT_AMOUNTS[trial % 2])


# -- the whole allocation: exact hits where it frees more than the shortfall -----------------------------
# Each case: queries, budget B, batch, then each policy's hits under shortfall and under allocation.
ALLOCATION_CASES = [
    # B = 3: [1] and [2] cached, [3, 4] misses 2 with 1 free. Shortfall frees 1: L-LRU evicts leaf [1]
    # (token-LRU and FIFO its one token); allocation frees 2: leaves [1] and [2]. So [2] hits only under
    # shortfall; [1] misses either way.
    (
        [[1], [2], [3, 4], [2], [1]],
        3,
        1,
        {name: ([0, 0, 0, 1, 0], [0, 0, 0, 0, 0]) for name in CORES},
    ),
    # B = 4: [1, 1] then [3]; [5, 6] misses 2 with 1 free. Token-wise, shortfall evicts the last token of
    # [1, 1] and [1, 1] later hits 1; allocation evicts both tokens (hit 0). L-LRU evicts the whole node
    # either way. LFU-leaf: [1, 1] and [3] were requested once each, [1, 1] less recently.
    (
        [[1, 1], [3], [5, 6], [1, 1]],
        4,
        1,
        {
            "lru": ([0, 0, 0, 0], [0, 0, 0, 0]),
            "token-lru": ([0, 0, 0, 1], [0, 0, 0, 0]),
            "lfu": ([0, 0, 0, 1], [0, 0, 0, 0]),
        },
    ),
    # B = 4: [1, 1] cached; [2, 3, 4] misses 3 with 2 free: shortfall 1 token, allocation 3 asked, only the
    # 2 tokens of [1, 1] evictable: it stops early there without error.
    (
        [[1, 1], [2, 3, 4], [1, 1]],
        4,
        1,
        {
            "token-lru": ([0, 0, 1], [0, 0, 0]),
            "fifo": ([0, 0, 1], [0, 0, 0]),
            "lfu": ([0, 0, 1], [0, 0, 0]),
            "lru": ([0, 0, 0], [0, 0, 0]),
        },
    ),
    # batches of 2, B = 6: [1, 2, 3] and [1, 2, 4] (4 tokens; the second's match splits the first's leaf,
    # leaves [3] and [4] share a stamp, [3] has the smaller creation id), then [1, 2, 5] with [7, 8]
    # (misses 3, 2 free: shortfall 1; node [1, 2] locked). Shortfall evicts leaf [3]; allocation [3] and
    # [4], then finds only the locked [1, 2] and stops with 2 freed. So [1, 2, 4] hits 3 only under
    # shortfall. All three radix rules evict the same one-token leaves here; LFU-leaf's tie (equal counts,
    # equal last request) goes to the larger trie node, [4] (node 3; [3] is node 1), so there [1, 2, 3] hits 3.
    (
        [[1, 2, 3], [1, 2, 4], [1, 2, 5], [7, 8], [1, 2, 4], [1, 2, 3]],
        6,
        2,
        {
            **{name: ([0, 0, 2, 0, 3, 2], [0, 0, 2, 0, 2, 2]) for name in RADIX},
            "lfu": ([0, 0, 2, 0, 2, 3], [0, 0, 2, 0, 2, 2]),
        },
    ),
]


@pytest.mark.parametrize(("queries", "budget", "batch", "expected"), ALLOCATION_CASES)
def test_allocation_frees_more_than_the_shortfall(queries, budget, batch, expected):
    workload = Workload.from_token_lists(queries)
    for name, (shortfall, allocation) in expected.items():
        cls = policy_class(name)
        for amount, hits in (("shortfall", shortfall), ("allocation", allocation)):
            slow = cls(workload.trie, budget, evict_amount=amount)
            slow_hits = [h for group in batches(len(workload), batch) for h in slow.serve(group)]
            assert slow_hits == hits, (name, amount)
            core = CORES[name](cls, workload.trie, budget, evict_amount=amount)
            assert core.serve_all(batch).tolist() == hits, (name, amount)


# -- where the core must not run, and the cluster's workers ---------------------------------------------
class PlainLRU(LeafLRU):
    """L-LRU's rule in a subclass that has not opted in to the core: served by the per-edge class."""

    name = "plain-lru-for-tests"


class PlainLFU(LeafLFU):
    """LFU-leaf's rule in a subclass: served by the per-edge class."""

    name = "plain-lfu-for-tests"


class OldStyleLRU(LeafLRU):
    """A user's subclass written before eviction amounts: its constructor takes no ``evict_amount``."""

    name = "old-style-lru-for-tests"

    def __init__(self, trie, budget, *, seed=None):
        super().__init__(trie, budget, seed=seed)


def test_a_policy_object_comes_from_its_constructor_or_create_alone():
    """The ways in to a policy object are the class's constructor (its per-edge engine) and ``create`` (the engine
    the backend chooses); the dispatcher alone builds a compiled core's object or the class itself."""
    from kvtheory.policies import EvictionPolicy

    ways_in = {name for name, member in vars(EvictionPolicy).items() if isinstance(member, classmethod)}
    assert ways_in == {"create"}
    trie = Workload.from_token_lists([[1, 2], [1, 3]]).trie
    assert type(per_edge_object(LeafLRU, trie, 4)) is LeafLRU
    assert isinstance(compiled_object(LeafLRU, trie, 4), CompiledRadix)


def test_subclass_is_served_by_the_per_edge_class(monkeypatch):
    from kvtheory.policies import dispatch

    monkeypatch.setattr(dispatch, "CORE_MIN_QUERIES", 1)  # "auto" would take a core for any run
    trie = Workload.from_token_lists([[1, 2], [1, 3]]).trie
    for plain in (PlainLRU, PlainLFU, OldStyleLRU):
        assert compiled_object(plain, trie, 4) is None
        assert type(plain.create(trie, 4)) is plain
        with pytest.raises(InputError, match=f"^policy '{plain.name}' has no compiled engine for this run"):
            plain.create(trie, 4, backend="compiled")
    with pytest.raises(InputError, match="does not take an eviction amount"):
        OldStyleLRU.create(trie, 4, evict_amount="allocation")
    for cls in (LeafLRU, TokenLRU, FifoLeaf, LeafLFU):
        assert isinstance(cls.create(trie, 4, backend="compiled"), CORES[cls.name])
        assert compiled_object(cls, trie, 4) is not None


def _multi_turn(seed: int, conversations: int = 30) -> Workload:
    rng = np.random.default_rng(seed)
    history = [rng.integers(0, 9, size=int(rng.integers(4, 20))).tolist() for _ in range(conversations)]
    queries = []
    for _ in range(6 * conversations):
        c = int(rng.integers(0, conversations))
        history[c] = history[c] + rng.integers(0, 9, size=int(rng.integers(1, 12))).tolist()
        queries.append(history[c][-120:])
    return Workload.from_token_lists(queries)


@pytest.mark.parametrize(("name", "plain"), [("lru", PlainLRU), ("lfu", PlainLFU)])
@pytest.mark.parametrize("router", ["cache-aware", "least-load"])
@pytest.mark.parametrize("batch", [1, 3])
def test_cluster_workers_made_by_create_match_the_per_edge_class(name, plain, router, batch):
    workload = _multi_turn(5)
    cluster = Cluster(tuple(Worker(1.8e-4, 1.5e-7, 500, 0.0186, 1.5e-7) for _ in range(3)))
    options = {"oracle": True} if router == "cache-aware" else {}
    fast = simulate(workload, cluster, router, name, batch=batch, seed=3, rate=40.0, **options)
    slow = simulate(workload, cluster, router, plain, batch=batch, seed=3, rate=40.0, **options)
    assert fast.hits.sum() > 0
    assert fast.hits.tolist() == slow.hits.tolist()
    assert fast.worker.tolist() == slow.worker.tolist()
    assert fast.finish.tolist() == slow.finish.tolist()


@pytest.mark.slow
def test_short_runs_in_a_fresh_process_do_not_load_numba():
    """Under backend "auto" the core serves runs of at least CORE_MIN_QUERIES queries, whatever the process
    has loaded: a shorter run is served by the per-edge class (equal hits, tested above) without loading the
    core or numba, and one at the threshold exactly by the core: numba's, or the one compiled ahead of time when
    that is current (then still without numba)."""
    script = (
        "import sys\n"
        "from kvtheory import Workload, run_policy\n"
        "from kvtheory.policies import dispatch, native\n"
        "w = Workload.from_token_lists([[1, 2], [1, 3], [1, 2, 4]])\n"
        "dispatch.CORE_MIN_QUERIES = 4\n"
        "assert run_policy(w, 4, 'lru').query_hits.tolist() == [0, 1, 2]\n"
        "cores = ('numba', 'kvtheory.policies.compiled.radix', 'kvtheory.policies.compiled._ahead')\n"
        "assert not any(name in sys.modules for name in cores)\n"
        "dispatch.CORE_MIN_QUERIES = 3\n"
        "assert run_policy(w, 4, 'lru').query_hits.tolist() == [0, 1, 2]\n"
        "assert ('numba' in sys.modules) == (native.ahead_of_time() is None)\n"
        "assert any(name in sys.modules for name in cores[1:])\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


@pytest.mark.parametrize("queries", [[[1, 2, 3]], [[1, 2], [1, 3, 4]]], ids=["flat", "nested"])
def test_every_core_says_why_a_batch_cannot_fit_word_for_word(queries):
    """``compiled_object``, ``create`` and ``per_edge_object`` do not validate (run_policy does): a query longer
    than the budget runs every core and every per-edge class, flat and nested, whole run or batch by batch,
    out of tokens to evict, and each says so in the same words."""
    trie = Workload.from_token_lists(queries).trie
    for name, cls in COMPILED.items():
        for amount in EVICT_AMOUNTS:
            with pytest.raises(RuntimeError, match=r"^nothing left to evict: the batch footprint exceeds the budget$"):
                compiled_object(cls, trie, 2, seed=0, evict_amount=amount).serve_all(1)
                pytest.fail(f"{name} ({amount}) served a query of 3 tokens under B = 2")
            for backend in ("compiled", "python"):  # served batch by batch: its core, its per-edge class
                policy = cls.create(trie, 2, seed=0, evict_amount=amount, backend=backend)
                with pytest.raises(
                    RuntimeError, match=r"^nothing left to evict: the batch footprint exceeds the budget$"
                ):
                    for j in range(len(queries)):
                        policy.serve([j])
                    pytest.fail(f"{type(policy).__name__} ({amount}) served a query of 3 tokens under B = 2")


def test_every_policy_object_keeps_its_trie_budget_and_eviction_amount():
    """What ``create`` and ``per_edge_object`` return, core or per-edge class, answers for the policy's name and
    the trie, budget and eviction amount it serves (the base class's attributes)."""
    trie = Workload.from_token_lists([[1, 2], [1, 3, 4]]).trie
    for name, cls in COMPILED.items():
        for amount in EVICT_AMOUNTS:
            for make in (cls.create, partial(per_edge_object, cls)):
                policy = make(trie, 5, seed=0, evict_amount=amount)
                assert (policy.name, policy.trie, policy.budget, policy.evict_amount) == (name, trie, 5, amount), make


@pytest.mark.parametrize("budget", [0, -1])
def test_every_policy_object_refuses_a_budget_that_is_not_positive(budget):
    """The base class refuses B <= 0 for every policy object, core or per-edge class, as it is made."""
    trie = Workload.from_token_lists([[1, 2], [1, 3, 4]]).trie
    for cls in ONLINE_POLICIES.values():
        for make in (cls, cls.create):
            with pytest.raises(ValueError, match=rf"^budget must be positive, got {budget}$"):
                make(trie, budget, seed=0)


def test_the_lfu_core_refuses_runs_past_its_step_limit():
    """The LFU core's heap keys are last request x (nodes + 1) + nodes - v in an int64: it refuses a run with
    more batches than its step limit allows. The limit (about 2^62 / nodes) is out of reach of any workload
    in memory, so it is lowered here; the count is of whole and partial batches, the steps already served
    included, and a refused run serves nothing."""
    trie = Workload.from_token_lists([[1, 2], [1, 3], [4], [1, 2], [4]]).trie
    policy, reference = LeafLFU.create(trie, 8, backend="compiled"), LeafLFU.create(trie, 8, backend="compiled")
    assert isinstance(policy, CompiledLFU)
    policy._max_steps = 4
    assert policy.serve([0, 1]) == reference.serve([0, 1])  # 1 step
    with pytest.raises(ValueError, match=r"^too many steps for the LFU core's int64 heap keys$"):
        policy._serve(policy._ends[:4], 1)  # 1 + 4 > 4
    assert policy.serve([2, 3, 4]) == reference.serve([2, 3, 4])  # 1 + 1 <= 4
    policy._serve(policy._ends[:3], 2)  # 2 + ceil(3 / 2) = 4 <= 4
    with pytest.raises(ValueError, match=r"^too many steps"):
        policy.serve([0])  # 4 + 1 > 4


def test_a_compiled_radix_object_pickles_and_serves_on_alike():
    """It holds arrays, not its kernels' module (chosen at each call), so a copy through pickle serves as it does."""
    import pickle

    from kvtheory.policies.radix_core import CompiledRadix

    trie = Workload.from_token_lists([[1, 2], [1, 3], [1, 2, 4], [5], [1, 3]]).trie
    for name in ("lru", "token-lru", "fifo"):
        policy = CompiledRadix(policy_class(name), trie, 4)
        policy.serve([0, 1])
        copy = pickle.loads(pickle.dumps(policy))
        assert copy.serve([2]) == policy.serve([2]) and copy.serve([3, 4]) == policy.serve([3, 4])
        assert copy.kept() == policy.kept()
