"""``check_policy``: the conformance suite any eviction policy, built in or a user's, can run
(docs/policies.md §Checking a policy).

Each check takes the policy class and raises AssertionError naming the check, the instance and the broken
rule; all of them hold for every built-in policy (tests/policies/test_check_policy.py). The model's rules are the
engine's (:class:`~kvtheory.policies.ledger.CacheLedger`): hits, budget, prefix closure, residency of the
batch, no prefetch, demand paging.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kvtheory.errors import InputError
from kvtheory.model.batches import batches
from kvtheory.model.predictions import predict
from kvtheory.model.workload import Workload
from kvtheory.policies import ONLINE_POLICIES, EvictionPolicy, policy_class
from kvtheory.policies.base import EVICT_AMOUNTS
from kvtheory.policies.dispatch import compiled_object, per_edge_object
from kvtheory.policies.ledger import CheckedPolicy, ModelViolation
from kvtheory.reference import REFERENCE_POLICIES, reference_policy
from kvtheory.testing.strategies import block_instances, instances

#: hypothesis examples per check: batches of 1 to 4 over three token ids (shared prefixes, repeats, splits)
EXAMPLES = 60
_INSTANCES = st.one_of(
    instances(max_queries=12, max_length=5, alphabet=3, max_batch=4),
    instances(max_queries=10, max_length=8, alphabet=2, max_batch=4),
)
#: the predictors a policy that follows predictions, with none bound to it, is checked with: one per example
CHECKED_PREDICTORS: tuple[tuple[str, float | None], ...] = (
    ("oracle", None),
    ("logdis", 1.0),
    ("bin", 0.5),
    ("adversarial", None),
    ("learned", None),
)
#: a block engine's instances: block sizes 1 to 3, and budgets where vLLM's allocation fits every batch
_BLOCK_INSTANCES = st.one_of(
    block_instances(max_queries=12, max_length=5, alphabet=3, max_batch=4),
    block_instances(max_queries=10, max_length=8, alphabet=2, max_batch=4),
)


def _policy(policy: str | type[EvictionPolicy]) -> type[EvictionPolicy]:
    if isinstance(policy, str):
        return policy_class(policy)
    if not (isinstance(policy, type) and issubclass(policy, EvictionPolicy)):
        raise TypeError(f"check_policy takes an EvictionPolicy subclass or a registered name, not {policy!r}")
    return policy


def _describe(workload: Workload, budget: int, batch: int, block_size: int = 1, **more) -> str:
    extra = "".join(f", {key}={value}" for key, value in more.items())
    blocks = f", block size {block_size}" if block_size != 1 else ""
    return f"workload {workload.token_lists()}, B={budget}, batch={batch}{blocks}{extra}"


def amounts(cls: type[EvictionPolicy]) -> tuple[str, ...]:
    """The eviction amounts ``cls`` takes: both, or ``shortfall`` alone for a policy written without an
    ``evict_amount`` argument (:func:`~kvtheory.policies.dispatch.per_edge_object` refuses it the other)."""
    trie = Workload.from_token_lists([[0]]).trie
    try:
        per_edge_object(cls, trie, 1, seed=0, evict_amount="allocation", **_told(cls, trie, [[0]], 0))
    except InputError as exc:
        if "does not take an eviction amount" in str(exc):
            return ("shortfall",)
        raise
    return EVICT_AMOUNTS


def backends(cls: type[EvictionPolicy]) -> tuple[str, ...]:
    """``("python",)``, and ``"compiled"`` too where the policy has a compiled core (for a policy that follows
    predictions, one told them: ``compiled_told``)."""
    trie = Workload.from_token_lists([[0]]).trie
    if cls.uses_predictions:
        core = getattr(cls, "compiled_told", None)
        told = None if core is None else core(trie, 1, _told(cls, trie, [[0]], 0)["predictions"], seed=0)
        return ("python", "compiled") if told is not None else ("python",)
    return ("python", "compiled") if compiled_object(cls, trie, 1, seed=0) is not None else ("python",)


def _property(check: Callable, examples: int, shrink: bool, drawn=_INSTANCES) -> Callable[[], None]:
    """``check(instance, seed, choice)`` run on hypothesis's instances (``drawn``), derandomized; a failure is one
    AssertionError (the first, where hypothesis groups several, as it does for a policy that is not
    deterministic), on the smallest instance hypothesis finds if ``shrink``, else on the first that fails."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate, *([Phase.shrink] if shrink else [])]
    run = settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )(given(instance=drawn, seed=st.integers(0, 2**32 - 1), choice=st.integers(0, 1))(check))

    def property_check() -> None:
        try:
            run()
        except BaseExceptionGroup as group:
            first = _first_assertion(group)
            if first is None:
                raise
            raise first from None

    return property_check


def _first_assertion(error: BaseException) -> AssertionError | None:
    """The first AssertionError in ``error`` or, for an exception group, in its members, depth first."""
    if isinstance(error, AssertionError):
        return error
    for member in getattr(error, "exceptions", ()):
        found = _first_assertion(member)
        if found is not None:
            return found
    return None


def predictor_of(cls: type[EvictionPolicy], seed: int) -> tuple[str, float | None]:
    """The predictor (and noise) a policy that follows predictions is checked with on an example drawn with
    ``seed``: the one bound to it (``NAME@PREDICTOR[=NOISE]``), else :data:`CHECKED_PREDICTORS`' entry seed mod 5."""
    if getattr(cls, "predictor", None) is not None:
        return cls.predictor, cls.noise
    return CHECKED_PREDICTORS[seed % len(CHECKED_PREDICTORS)]


def _told(cls: type[EvictionPolicy], trie, schedule, seed: int) -> dict:
    """``{"predictions": ...}`` made for serving ``schedule`` (:func:`predictor_of`, drawn under ``seed``) for a
    policy that follows predictions; ``{}`` for any other."""
    if not cls.uses_predictions:
        return {}
    predictor, noise = predictor_of(cls, seed)
    return {"predictions": predict(trie, schedule, predictor, noise=noise, seed=seed)}


def _told_by(cls: type[EvictionPolicy], seed: int) -> str:
    """The predictor of a failure's context (``", predictor logdis=1"``); empty for a policy that follows none."""
    if not cls.uses_predictions:
        return ""
    predictor, noise = predictor_of(cls, seed)
    return f", predictor {predictor}" + ("" if noise is None else f"={noise:g}")


def _served(
    cls, workload, budget, batch, amount, seed, backend, context: str, block_size: int = 1
) -> list[tuple[list[int], dict]]:
    """(hits, cache) after each batch, served through the engine's books; a violation fails ``context``. A block
    engine is built with its ``block_size`` (it has no compiled core); a policy that follows predictions is told
    those of :func:`predictor_of` for the instance's schedule."""
    if cls.block_engine:
        policy = cls(workload.trie, budget, seed=seed, evict_amount=amount, block_size=block_size)
    elif cls.uses_predictions:
        told = _told(cls, workload.trie, batches(len(workload), batch), seed)
        if backend == "compiled":
            policy = cls.compiled_told(workload.trie, budget, told["predictions"], seed=seed, evict_amount=amount)
        else:
            policy = per_edge_object(cls, workload.trie, budget, seed=seed, evict_amount=amount, **told)
    else:
        policy = cls.create(workload.trie, budget, seed=seed, evict_amount=amount, backend=backend)
    checked = CheckedPolicy(policy, cls, budget, amount)
    steps = []
    try:
        for group in batches(len(workload), batch):
            hits = checked.serve(group)
            for j in range(len(workload)):
                peeked = policy.cached_prefix(j)
                if peeked != checked.cached_prefix(j):
                    raise AssertionError(
                        f"{context}: after batch {checked.ledger.batches}, cached_prefix({j}) = {peeked!r}, "
                        f"the engine counts {checked.cached_prefix(j)}"
                    )
            steps.append((hits, checked.kept()))
    except ModelViolation as exc:
        raise AssertionError(f"{context}: {exc}") from None
    return steps


def policy_checks(
    policy: str | type[EvictionPolicy], *, examples: int = EXAMPLES, shrink: bool = True
) -> Iterator[tuple[str, Callable]]:
    """(name, check) for each check of ``policy``: a check takes no argument and raises AssertionError (on the
    smallest failing instance found, unless ``shrink`` is False)."""
    cls = _policy(policy)
    taken, engines = amounts(cls), backends(cls)

    def declares_a_name() -> None:
        assert isinstance(cls.name, str) and cls.name, f"check_policy: {cls.__name__}.name must be a non-empty str"
        assert isinstance(cls.randomized, bool), f"check_policy({cls.name!r}): randomized must be a bool"

    def refuses_a_budget_below_one() -> None:
        trie = Workload.from_token_lists([[0]]).trie
        for budget in (0, -1):
            try:
                if cls.uses_predictions:
                    per_edge_object(cls, trie, budget, seed=0, **_told(cls, trie, [[0]], 0))
                else:
                    cls.create(trie, budget, seed=0, backend="python")
            except ValueError:
                continue
            raise AssertionError(f"check_policy({cls.name!r}) refuses_a_budget_below_one: B = {budget} was taken")

    def keeps_the_model(instance, seed, choice) -> None:
        workload, budget, batch, b = _unpack(instance)
        amount, backend = taken[choice % len(taken)], engines[choice % len(engines)]
        context = f"check_policy({cls.name!r}) keeps_the_model on {_describe(workload, budget, batch, b)}"
        context = f"{context}, {amount}, seed={seed}, {backend}{_told_by(cls, seed)}"
        _served(cls, workload, budget, batch, amount, seed, backend, context, b)

    def deterministic_under_a_seed(instance, seed, choice) -> None:
        workload, budget, batch, b = _unpack(instance)
        amount = taken[choice % len(taken)]
        for backend in engines:
            context = (
                f"check_policy({cls.name!r}) deterministic_under_a_seed on "
                f"{_describe(workload, budget, batch, b, seed=seed)}, {amount}, {backend}{_told_by(cls, seed)}"
            )
            first = _served(cls, workload, budget, batch, amount, seed, backend, context, b)
            assert first == _served(cls, workload, budget, batch, amount, seed, backend, context, b), (
                f"{context}: two runs from one seed differ"
            )

    def engines_agree(instance, seed, choice) -> None:
        workload, budget, batch = instance
        amount = taken[choice % len(taken)]
        context = (
            f"check_policy({cls.name!r}) engines_agree on {_describe(workload, budget, batch, seed=seed)}, {amount}"
        )
        python = _served(cls, workload, budget, batch, amount, seed, "python", context)
        compiled = _served(cls, workload, budget, batch, amount, seed, "compiled", context)
        for number, (slow, fast) in enumerate(zip(python, compiled), start=1):
            assert slow == fast, f"{context}: after batch {number} the per-edge engine has {slow}, the compiled {fast}"

    def matches_the_reference(instance, seed, choice) -> None:
        workload, budget, batch, b = _unpack(instance)
        amount = taken[choice % len(taken)]
        if amount != "shortfall":
            return  # the references evict the model's shortfall
        context = f"check_policy({cls.name!r}) matches_the_reference on {_describe(workload, budget, batch, b)}"
        steps = _served(cls, workload, budget, batch, amount, seed, "python", context, b)
        if cls.block_engine:
            reference = REFERENCE_POLICIES.lookup(cls.name)(workload, budget, seed=seed, block_size=b)
        else:
            reference = reference_policy(workload, budget, cls.name, batch=batch, seed=seed)
        for number, (group, (hits, kept)) in enumerate(zip(batches(len(workload), batch), steps), start=1):
            expected = reference.serve(group)
            assert hits == expected, f"{context}: batch {number} hits {hits}, the reference's {expected}"
            cache = reference.kept(workload.trie)
            assert kept == cache, f"{context}: after batch {number} the cache is {kept}, the reference's {cache}"

    yield "declares_a_name", declares_a_name
    yield "refuses_a_budget_below_one", refuses_a_budget_below_one
    drawn = _BLOCK_INSTANCES if cls.block_engine else _INSTANCES
    yield "keeps_the_model", _property(keeps_the_model, examples, shrink, drawn)
    yield "deterministic_under_a_seed", _property(deterministic_under_a_seed, max(examples // 2, 1), shrink, drawn)
    if len(engines) > 1:
        yield "engines_agree", _property(engines_agree, examples, shrink)
    if _has_reference(cls):
        yield "matches_the_reference", _property(matches_the_reference, examples, shrink, drawn)


def _unpack(instance: tuple) -> tuple:
    """(workload, budget, batch, block size) of an instance; section 1's instances have block size 1."""
    return (*instance, 1) if len(instance) == 3 else instance


def _has_reference(cls: type[EvictionPolicy]) -> bool:
    """A deterministic built-in policy with a per-token reference that draws nothing (kvtheory.reference)."""
    return ONLINE_POLICIES.get(cls.name) is cls and cls.name in REFERENCE_POLICIES and not cls.randomized


def check_policy(policy: str | type[EvictionPolicy], *, examples: int = EXAMPLES, shrink: bool = True) -> None:
    """Run every check of :func:`policy_checks` on ``policy`` (a class or a registered name): None when all
    hold, else the first failure's AssertionError, naming the check, the instance and the rule broken.

    The checks: a name; B <= 0 refused; the model's rules on hypothesis-generated instances (batches of 1 to 4,
    each eviction amount the policy takes, each engine it has) with ``cached_prefix`` equal to the engine's
    count after every batch; determinism under a seed; the per-edge and compiled engines equal batch for
    batch, where there is a compiled one; and equality with the per-token reference, hit for hit and cache
    for cache, where kvtheory has one. A block engine (``block_engine``, as ``vllm``) is checked by the engine's
    block books (:mod:`kvtheory.policies.block_ledger`) on instances of block sizes 1 to 3 whose pools hold
    every batch's allocation. A policy that follows predictions (``uses_predictions``: a registered
    ``NAME@PREDICTOR[=NOISE]``, or a class, whose examples each draw a predictor of :data:`CHECKED_PREDICTORS`) is
    told predictions made for each instance's schedule under the example's seed.
    """
    for _, check in policy_checks(policy, examples=examples, shrink=shrink):
        check()


def parametrize_with_checks(policies: Iterable[str | type[EvictionPolicy]], *, examples: int = EXAMPLES):
    """A ``pytest.mark.parametrize`` over (policy, check) for every check of every policy, one test each::

    @parametrize_with_checks(["lru", MyPolicy])
    def test_policy_conforms(policy, check):
        check()
    """
    import pytest  # the test runner's, needed only by those who parametrize tests with it

    cases = []
    for policy in policies:
        name = policy if isinstance(policy, str) else _policy(policy).name
        for check_name, check in policy_checks(policy, examples=examples):
            cases.append(pytest.param(name, check, id=f"{name}-{check_name}"))
    return pytest.mark.parametrize(("policy", "check"), cases)
