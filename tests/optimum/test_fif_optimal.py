"""FIF is the exact optimum at batch size 1 (against an exhaustive search); at batch size >= 2 an upper
bound, exact where only ties decide, and on the batch instance where the depth-first tie rule is not."""

import pytest
from exhaustive import exhaustive_misses
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import BATCHED_BOUNDARIES, EXAMPLE_DEADLINE, UNBATCHED_BOUNDARIES, boundary_examples, instances

from kvtheory import Workload, run_fif, run_policy
from kvtheory.model.batches import batches
from kvtheory.optimum.fif import FurthestInFuture

COUNTEREXAMPLE = [[1, 2, 3, 4], [1, 2, 3, 5], [6, 7], [9], [10], [11], [1, 2, 3, 4], [1, 2, 3, 5], [6, 7]]


@settings(max_examples=150, deadline=EXAMPLE_DEADLINE)
@given(instances(max_queries=7, max_length=4, alphabet=2, max_batch=1))
@boundary_examples(*UNBATCHED_BOUNDARIES)
def test_fif_equals_exhaustive_optimum_at_batch_1(instance):
    workload, budget, batch = instance
    assert run_fif(workload, budget).misses == exhaustive_misses(workload.token_lists(), budget)


@st.composite
def repeated_batches(draw):
    """A batch of shared-prefix queries, a batch of fresh tokens that forces evictions, the first batch
    again: the shape on which the order among equally distant tokens decides the cost."""
    beta = draw(st.integers(2, 3))
    first = [draw(st.lists(st.integers(0, 1), min_size=1, max_size=4)) for _ in range(beta)]
    fresh = [[10 + i] for i in range(beta)]
    again = draw(st.permutations(first))
    queries = first + fresh + list(again)
    workload = Workload.from_token_lists(queries)
    trie = workload.trie
    need = max(sum(trie.edge_len[v] for v in {v for j in g for v in trie.path(j)}) for g in batches(len(queries), beta))
    return queries, need + draw(st.integers(0, 1)), beta


@settings(max_examples=100, deadline=EXAMPLE_DEADLINE)
@given(repeated_batches())
def test_fif_equals_exhaustive_optimum_when_only_ties_decide(instance):
    """Every token of the first batch is next wanted at the same step, so distance never disagrees with
    multiplicity: FIF's tie rule (fewest queries of that batch first) is then the optimum's choice."""
    queries, budget, batch = instance
    workload = Workload.from_token_lists(queries)
    assert run_fif(workload, budget, batch=batch).misses == exhaustive_misses(queries, budget, batch)


@pytest.mark.slow
@settings(max_examples=100, deadline=EXAMPLE_DEADLINE)
@given(instances(max_queries=7, max_length=4, alphabet=2, max_batch=3))
@boundary_examples(*BATCHED_BOUNDARIES, (Workload.from_token_lists(COUNTEREXAMPLE), 7, 3))
def test_fif_is_an_upper_bound_with_batches(instance):
    """At batch size >= 2 FIF is feasible, not optimal (tests/optimum/test_batched_optimum.py)."""
    workload, budget, batch = instance
    queries = workload.token_lists()
    assert run_fif(workload, budget, batch=batch).misses >= exhaustive_misses(queries, budget, batch)


class DepthFirstFIF(FurthestInFuture):
    """The depth-first tie rule (docs/model.md §The offline optimum) taken literally: depth before multiplicity."""

    def _group_key(self, step, multiplicity):
        return step * self._width


def test_depth_first_ties_are_not_optimal_with_batches():
    workload = Workload.from_token_lists(COUNTEREXAMPLE)
    schedule = batches(len(workload), 3)
    literal = DepthFirstFIF(workload.trie, 7, schedule)
    literal_misses = workload.total_tokens - sum(sum(literal.serve(group)) for group in schedule)
    assert exhaustive_misses(COUNTEREXAMPLE, 7, 3) == 16
    assert run_fif(workload, 7, batch=3).misses == 16
    assert literal_misses == 17
    assert run_policy(workload, 7, "rlt", batch=3, seed=0).misses >= 16


@st.composite
def tied_suffixes(draw):
    """Groups of queries with a shared prefix and suffixes of equal lengths: many never-again leaves at
    one depth, so the water level is drained in part, cut, and joined by later, deeper edges."""
    prefixes = [
        [draw(st.integers(0, 2))] + draw(st.lists(st.integers(0, 50), max_size=6))
        for _ in range(draw(st.integers(1, 4)))
    ]
    queries = []
    for _ in range(draw(st.integers(3, 25))):
        prefix = draw(st.sampled_from(prefixes))
        suffix = draw(st.lists(st.integers(0, 3), min_size=draw(st.sampled_from([0, 1, 2, 4, 6])), max_size=6))
        queries.append(prefix + suffix)
    beta = draw(st.integers(1, 3))
    workload = Workload.from_token_lists(queries)
    trie = workload.trie
    need = max(sum(trie.edge_len[v] for v in {v for j in g for v in trie.path(j)}) for g in batches(len(queries), beta))
    return workload, need + draw(st.sampled_from([0, 1, 3, 10, 30])), beta


@pytest.mark.slow
@settings(max_examples=300, deadline=EXAMPLE_DEADLINE)
@given(tied_suffixes())
@boundary_examples(*UNBATCHED_BOUNDARIES, *BATCHED_BOUNDARIES)
def test_fif_water_level_equals_the_per_token_reference(instance):
    """Hits and the cache itself (tokens kept per edge) after every batch: within one group, which of
    the tied tokens go changes no hit at batch 1, only the cache."""
    from kvtheory.reference import reference_policy

    workload, budget, batch = instance
    schedule = batches(len(workload), batch)
    fast = FurthestInFuture(workload.trie, budget, schedule)
    reference = reference_policy(workload, budget, "fif", batch=batch)
    for group in schedule:
        assert list(fast.serve(group)) == reference.serve(group)
        assert fast.kept() == reference.kept(workload.trie)
        assert fast.size == reference.size


def test_members_above_the_band_are_lowered_to_it_edge_by_edge():
    """One group: edge 1 (floor 0) in the band at level 1, then edge 2 (floor 0, 5 tokens) joins above
    it. Evicting 3 tokens lowers edge 2 alone, from depth 5 to 2; edge 1 keeps its token. The lowering
    step drain takes first is called directly: one that evicts nothing fails here instead of spinning
    drain's loop."""
    from kvtheory.policies.water_level import WaterLevel

    group = WaterLevel(depth=[0, 2, 5], parent=[0, 0, 0])
    group.add(1, 2)
    assert group.drain(1) == 1 and group.kept_of(1) == 1
    group.add(2, 5)
    assert group._lower_to_band(3) == 3
    assert (group.kept_of(1), group.kept_of(2), len(group)) == (1, 2, 2)
    assert _within_five_seconds(lambda: group.drain(2)) == 2
    assert (group.kept_of(1), group.kept_of(2)) == (1, 0)


def test_fif_run_past_its_budget_says_so_word_for_word():
    """FurthestInFuture itself does not validate (run_fif does): a query of 3 tokens under B = 2 runs out
    of tokens to evict, and says why."""
    fif = FurthestInFuture(Workload.from_token_lists([[1, 2, 3]]).trie, 2, [[0]])
    with pytest.raises(RuntimeError, match=r"^nothing left to evict: the batch footprint exceeds the budget$"):
        list(fif.serve([0]))


class _Spinning(Exception):
    pass


def _within_five_seconds(call):
    """``call()``, stopped by SIGALRM after 5 s (it takes microseconds): a loop that never ends fails the
    test instead of hanging the run."""
    import signal

    def stop(signum, frame):
        raise _Spinning

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 5.0)
    try:
        return call()
    except _Spinning:
        pytest.fail(f"{call} did not return within 5 s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_member_lowered_all_the_way_joins_the_band():
    """Edge 2 (floor 0, 5 tokens) above the band at level 1 (edge 1), with more tokens to evict than it
    holds above the band: it is lowered by 4 to the level and joins the band (then drain lowers the band,
    edge 2 first at the tie). Edge 3 (floor 3, under edge 2's node at depth 3, 2 tokens) empties on the
    way down and leaves the group."""
    from kvtheory.policies.water_level import WaterLevel

    group = WaterLevel(depth=[0, 2, 5, 3, 5], parent=[0, 0, 0, 0, 3])
    group.add(1, 2)
    assert group.drain(1) == 1
    group.add(2, 5)
    assert group._lower_to_band(10) == 4
    assert (group.kept_of(1), group.kept_of(2), len(group)) == (1, 1, 2)
    group.add(4, 2)  # the tokens at depths 4 and 5 under a node at depth 3
    assert group._lower_to_band(1) == 1
    assert (group.kept_of(4), len(group)) == (1, 3)
    assert group._lower_to_band(5) == 1
    assert (group.kept_of(4), len(group)) == (0, 2)


def test_fif_refuses_a_batch_off_its_schedule_word_for_word():
    """FurthestInFuture knows its schedule up front: a batch other than the next one, or one past the end of
    the schedule, is refused with the same message (the next batch is still served afterwards)."""
    fif = FurthestInFuture(Workload.from_token_lists([[1], [2]]).trie, 2, [[0], [1]])
    message = r"^FIF must be served its schedule's batches in order$"
    with pytest.raises(ValueError, match=message):
        fif.serve([1])  # the second batch first
    assert list(fif.serve([0])) == [0] and list(fif.serve([1])) == [0]
    with pytest.raises(ValueError, match=message):
        fif.serve([0])  # the schedule is over


def test_run_fif_takes_the_engine_its_backend_names(monkeypatch):
    """backend "compiled" is the core, "python" FurthestInFuture, and "auto" the core from CORE_MIN_QUERIES
    queries on, the class below (at the boundary exactly). Both give the same hits
    (tests/optimum/test_compiled_fif.py), so the path taken is recorded."""
    from kvtheory.optimum import fif
    from kvtheory.policies import dispatch

    taken = []
    real_core, real_class = fif.run_compiled_fif, fif.FurthestInFuture

    class Recorded(real_class):
        def __init__(self, *args, **kwargs):
            taken.append("per-edge")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(fif, "run_compiled_fif", lambda *args: taken.append("core") or real_core(*args))
    monkeypatch.setattr(fif, "FurthestInFuture", Recorded)
    workload = Workload.from_token_lists([[1], [2], [3], [1], [2], [3]])
    assert run_fif(workload, 2, backend="compiled").misses == 4
    assert run_fif(workload, 2, backend="python").misses == 4
    monkeypatch.setattr(dispatch, "CORE_MIN_QUERIES", 7)
    assert run_fif(workload, 2).misses == 4
    monkeypatch.setattr(dispatch, "CORE_MIN_QUERIES", 6)
    assert run_fif(workload, 2).misses == 4
    assert taken == ["core", "per-edge", "per-edge", "core"]


class _PerTokenGroup:
    """The reference for one FIF group: members' tokens kept, evicted one by one, the deepest first and,
    at equal depth, the larger node id first; an emptied member leaves."""

    def __init__(self, depth, parent):
        self.depth, self.parent, self.kept = depth, parent, {}

    def add(self, v, kept):
        self.kept[v] = kept

    def remove(self, v):
        return self.kept.pop(v, 0)

    def drain(self, tokens):
        evicted = 0
        while evicted < tokens and self.kept:
            _, v = max((self.depth[self.parent[v]] + kept, v) for v, kept in self.kept.items())
            self.kept[v] -= 1
            if not self.kept[v]:
                del self.kept[v]
            evicted += 1
        return evicted


@st.composite
def group_operations(draw):
    """A tree (node v's parent below v, edges of 1-4 tokens) and a sequence of ``add(v, kept)`` for a node
    not in the group (1 <= kept <= len(v)), ``remove(v)`` and ``drain(r)``."""
    n = draw(st.integers(1, 7))
    parents = [0] + [draw(st.integers(0, v - 1)) for v in range(1, n + 1)]
    lengths = [0] + [draw(st.integers(1, 4)) for _ in range(n)]
    operations, members = [], set()
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["add", "remove", "drain"]))
        if kind == "add" and len(members) < n:
            v = draw(st.sampled_from(sorted(set(range(1, n + 1)) - members)))
            operations.append(("add", v, draw(st.integers(1, lengths[v]))))
            members.add(v)
        elif kind == "remove" and members:
            v = draw(st.sampled_from(sorted(members)))
            operations.append(("remove", v))
            members.discard(v)
        else:
            operations.append(("drain", draw(st.integers(0, 6))))
    return parents, lengths, operations


# members that leave the group (FIF's never do before the group is empty): a member of the band's
# "extra" (joined after a cut), a stale top among the members off the band, a stale highest floor
LEAVING_MEMBERS = [
    (
        [0, 0, 0, 4, 0],
        [0, 2, 2, 2, 1],
        [("add", 1, 2), ("add", 2, 2), ("drain", 1), ("add", 3, 2), ("drain", 1), ("remove", 3), ("drain", 1)],
    ),
    ([0, 0, 0], [0, 3, 1], [("add", 1, 3), ("add", 2, 1), ("remove", 1), ("drain", 1)]),
    ([0, 0, 0, 2], [0, 3, 1, 2], [("add", 1, 3), ("add", 3, 2), ("drain", 2), ("remove", 3), ("drain", 1)]),
]


@pytest.mark.slow
@settings(max_examples=300, deadline=EXAMPLE_DEADLINE)
@given(group_operations())
@boundary_examples(*LEAVING_MEMBERS, argument="case")
def test_a_water_level_group_equals_the_per_token_reference(case):
    """WaterLevel on its own, members joining and leaving at any time (FIF removes a group's members all
    in the step they are requested): every drain's count, every removal's tokens and every node's kept
    tokens equal the per-token reference's."""
    from kvtheory.policies.water_level import WaterLevel

    parents, lengths, operations = case
    depth = [0] * len(parents)
    for v in range(1, len(parents)):
        depth[v] = depth[parents[v]] + lengths[v]
    group, reference = WaterLevel(depth, parents), _PerTokenGroup(depth, parents)
    for operation, *arguments in operations:
        assert getattr(group, operation)(*arguments) == getattr(reference, operation)(*arguments), operation
        assert {v: group.kept_of(v) for v in range(1, len(parents)) if group.kept_of(v)} == reference.kept
