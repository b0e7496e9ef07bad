"""``worst``: a policy's exact worst case over every sequence of a universe up to a horizon (docs/game.md).

worst(P) = max over sequences s (lists of universe query indices, 1 <= |s| <= H, served from the empty cache
in batches of beta, the last batch possibly shorter, every batch's footprint at most B) of ALG_P(s) / OPT(s),
with E[ALG_P(s)] over P's own draws for a randomized P (an oblivious adversary). OPT(s) >= 1, so every ratio
is defined; the result is an exact fraction with a witness sequence.

The search goes batch by batch over *states*: (P's state, OPT's work function W_s) with the largest ALG(s)
that reaches it. P's state is its :meth:`~kvtheory.policies.base.EvictionPolicy.state_key` (a randomized P:
the distribution of its keys, exact probabilities) or, for a policy without one, the served sequence itself.
Two sequences with the same state have the same futures, ALG growing by the same amounts and OPT being
min_C (W(C) + the future's cost from C) for both, so only the larger ALG matters; and a state
(alg1, W1) with alg1 >= alg2 and W1 <= W2 everywhere (the same P state) does at least as well as (alg2, W2)
on every continuation: the latter is dropped (dominance). Every ratio of a kept or dropped state is
evaluated before anything is dropped.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kvtheory.errors import InputError
from kvtheory.game.branching import enumerable, outcomes
from kvtheory.game.universe import Universe
from kvtheory.model.workload import Workload
from kvtheory.policies import policy_class
from kvtheory.policies.ledger import built_in

#: search states (after merging) a search may keep in all before it is refused
STATE_LIMIT = 2_000_000


def fraction_text(value: Fraction) -> str:
    """``value`` as "p/q" (q >= 1, lowest terms)."""
    return f"{value.numerator}/{value.denominator}"


@dataclass(frozen=True)
class GameResult:
    """The exact worst case of one policy: ``ratio`` = ``alg`` / ``opt`` on ``sequence`` (ALG an expectation
    for a randomized policy), found among ``states`` search states; ``merged``: whether states were merged by
    the policy's state key (else each sequence was searched apart)."""

    policy: str
    budget: int
    batch: int
    horizon: int
    ratio: Fraction
    sequence: tuple[int, ...]
    alg: Fraction
    opt: int
    states: int
    configurations: int
    merged: bool

    def to_dict(self) -> dict:
        alg = int(self.alg) if self.alg.denominator == 1 else fraction_text(self.alg)
        return {
            "mode": "worst",
            "policy": self.policy,
            "budget": self.budget,
            "batch": self.batch,
            "horizon": self.horizon,
            "ratio": fraction_text(self.ratio),
            "ratio_float": float(self.ratio),
            "sequence": list(self.sequence),
            "alg": alg,
            "opt": self.opt,
            "states": self.states,
            "configurations": self.configurations,
            "merged": self.merged,
        }


class _PolicyStates:
    """The policy's side of the search: states by key, and each (state, batch) transition computed once.

    A state is a distribution {key: (probability, policy object)}; a deterministic policy's has one entry of
    probability 1. ``step`` returns (E[misses of the batch], the next state's key, the next state)."""

    def __init__(self, policy, universe: Universe) -> None:
        self.universe = universe
        self.keyed = trusted_key(type(policy)) and policy.state_key() is not None
        self._memo: dict = {}
        self.initial_key, self.initial = self._canonical({self._key(policy, ()): (1, policy)})

    def _key(self, policy, served: tuple[int, ...]):
        key = policy.state_key()
        return key if self.keyed else served

    @staticmethod
    def _canonical(dist: dict) -> tuple:
        key = tuple(sorted((k, p) for k, (p, _) in dist.items()))
        return key, dist

    def step(self, state_key, dist: dict, batch: tuple[int, ...], served: tuple[int, ...]):
        memo_key = (state_key, batch)
        found = self._memo.get(memo_key) if self.keyed else None
        if found is not None:
            return found
        lengths = [self.universe.trie.length(j) for j in batch]
        expected = 0  # an int for a deterministic policy (probability 1), else a Fraction
        nxt: dict = {}
        for index, (probability, policy) in enumerate(dist.values()):
            hits, branches = outcomes(policy, batch)
            expected += probability * (sum(lengths) - sum(hits))
            for n, (q, after) in enumerate(branches):
                key = after.state_key() if self.keyed else (served + batch, index, n)
                old = nxt.get(key)
                nxt[key] = (probability * q + (old[0] if old else 0), old[1] if old else after)
        found = (expected, *self._canonical(nxt))
        if self.keyed:
            self._memo[memo_key] = found
        return found


def trusted_key(cls: type) -> bool:
    """Whether the state key of policy class ``cls`` describes its rule: a built-in policy's, or one the user's
    own code defines. A user's subclass that inherits a built-in class's key without defining its own may have
    changed the rule (more state, another order), so its key is not used, as a subclass never inherits its
    parent's compiled core (:mod:`kvtheory.policies.dispatch`)."""
    if built_in(cls):
        return True
    definer = next(k for k in cls.__mro__ if "state_key" in k.__dict__)
    return not built_in(definer)


def _progress(total: int, enabled: bool, what: str):
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, unit="state", desc=what, file=sys.stderr, dynamic_ncols=True)


def worst(
    workload: Workload,
    budget: int,
    policy: str | type,
    horizon: int,
    *,
    batch: int = 1,
    state_limit: int = STATE_LIMIT,
    merge: bool = True,
    progress: bool = False,
    evict_amount: str = "shortfall",
    distinct: bool = False,
    require: frozenset[int] | set[int] | None = None,
    executor=None,
) -> GameResult:
    """The exact worst case of ``policy`` over every sequence of up to ``horizon`` queries of the universe
    ``workload`` (see the module docstring). ``merge=False`` keeps every sequence apart (no state keys, no
    dominance): the plain enumeration, for checking the merged search. ``policy``: a registered name or a
    policy class (a plug-in's). ``state_limit`` bounds the search states kept in all: past it, an InputError
    says how many were needed so far. ``distinct``: only batches of pairwise distinct queries (claim 7's
    assumption); ``require``: only sequences holding at least one of these query indices count (the search
    carries one more bit of state: whether one was served). :func:`excess` is the same search for another
    objective. ``executor``: an object with ``submit(function, argument, key)`` and ``as_completed(futures)``
    (``kvtheory.experiments.executors``: a process pool or Dask) that searches the sequences of each first batch
    apart, in parallel: worst = the maximum over first batches b of the worst case of the sequences that start
    with b (and, at beta >= 2, of the sequences of one short batch, searched here); each part keeps at most
    ``state_limit`` states and merges only within itself, so ``states`` (their sum) may exceed the unsplit
    search's, and among equal ratios the witness may differ.

    >>> from kvtheory.model.workload import Workload
    >>> paging = Workload.from_token_lists([[0], [1], [2]])     # n = 3 pages, k = B = 2
    >>> r = worst(paging, 2, "lru", 6)
    >>> r.ratio, r.sequence, r.alg, r.opt
    (Fraction(3, 2), (2, 1, 0, 2, 1, 0), Fraction(6, 1), 4)
    """
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise InputError(f"horizon must be a positive number of queries, got {horizon}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise InputError(f"batch size must be a positive integer, got {batch}")
    if state_limit < 1:
        raise InputError(f"the state limit must be positive, got {state_limit}")
    args = (workload, budget, policy, horizon, batch, state_limit, merge, progress, evict_amount, distinct, require)
    if executor is None:
        cls, universe, found, explored, keyed = _search(*args, None)
    else:
        cls, universe, found, explored, keyed = _split(args, executor)
    if found is None:
        raise InputError("no sequence of the universe up to the horizon holds a required query")
    ratio, seq, alg, opt = found
    return GameResult(
        cls.name,
        universe.budget,
        batch,
        horizon,
        ratio,
        seq,
        Fraction(alg),
        opt,
        explored,
        len(universe.configs),
        merge and keyed,
    )


@dataclass(frozen=True)
class ExcessResult:
    """max over sequences s of ALG(s) - ``slope`` * OPT(s) (E[ALG] for a randomized policy) = ``excess``, reached
    on ``sequence`` with ``alg`` and ``opt``. ALG <= slope * OPT + c holds on every sequence searched iff
    ``excess`` <= c."""

    policy: str
    budget: int
    batch: int
    horizon: int
    slope: Fraction
    excess: Fraction
    sequence: tuple[int, ...]
    alg: Fraction
    opt: int
    states: int


def excess(
    workload: Workload,
    budget: int,
    policy: str | type,
    horizon: int,
    slope,
    *,
    batch: int = 1,
    state_limit: int = STATE_LIMIT,
    merge: bool = True,
    evict_amount: str = "shortfall",
    distinct: bool = False,
    require: frozenset[int] | set[int] | None = None,
) -> ExcessResult:
    """The exact max over every sequence s of up to ``horizon`` queries (as :func:`worst`: batches of ``batch``,
    ``distinct``, ``require``) of ALG(s) - slope * OPT(s), ``slope`` >= 0 a rational: an additive bound
    ALG <= slope * OPT + c is exactly checked by comparing it with c.

    The search is :func:`worst`'s with this objective: merging and dominance hold as they do for the ratio
    (ALG - slope * OPT grows with ALG and falls with W on every continuation), and a state is not expanded when
    alg + (H - length) * L_max - slope * OPT now is at most the best excess found (OPT never decreases).

    >>> from kvtheory.model.workload import Workload
    >>> paging = Workload.from_token_lists([[0], [1], [2]])
    >>> r = excess(paging, 2, "lru", 6, 1)     # LRU misses every request of the cycle, OPT every other
    >>> r.excess, r.alg, r.opt
    (Fraction(2, 1), Fraction(6, 1), 4)
    """
    slope = Fraction(slope)
    if slope < 0:
        raise InputError(f"the slope must be at least 0, got {slope}")
    cls, universe, found, explored, _ = _search(
        workload, budget, policy, horizon, batch, state_limit, merge, False, evict_amount, distinct, require, slope
    )
    if found is None:
        raise InputError("no sequence of the universe up to the horizon holds a required query")
    value, seq, alg, opt = found
    return ExcessResult(cls.name, universe.budget, batch, horizon, slope, value, seq, Fraction(alg), opt, explored)


def _search(
    workload,
    budget,
    policy,
    horizon,
    batch,
    state_limit,
    merge,
    progress,
    evict_amount,
    distinct,
    require,
    slope,
    prefix=(),
):
    """The search of :func:`worst` (``slope`` None: the ratio ALG / OPT) or :func:`excess` (ALG - slope * OPT),
    over the sequences that start with the batch ``prefix`` (empty: all). Returns (policy class, universe,
    (value, witness, alg, opt) or None, states kept, whether keyed)."""
    cls = policy if isinstance(policy, type) else policy_class(policy)
    policy = cls.name
    if not enumerable(cls):
        raise InputError(f"policy {policy!r} is randomized and its draws cannot be enumerated exactly")
    universe = Universe(workload, budget, batch=batch)
    n = universe.n_queries
    if require is not None:
        require = frozenset(int(j) for j in require)
        if not require or not all(0 <= j < n for j in require):
            raise InputError(f"required queries must be line indices 0..{n - 1} of the universe, got {sorted(require)}")
    start = cls.create(universe.trie, universe.budget, seed=0, evict_amount=evict_amount, backend="python")
    states = _PolicyStates(start, universe)
    if not merge:
        states.keyed = False
    sizes = {s: universe.batches(s) for s in range(1, min(batch, horizon) + 1)}
    if distinct:
        sizes = {s: [b for b in bs if len(set(b)) == len(b)] for s, bs in sizes.items()}
    best: tuple | None = None  # (value, witness, alg, opt)
    # level: {((P key, seen), W bytes): (alg, W, P state, witness)}; seen: a required query was served
    seen0 = require is None
    level = {((states.initial_key, seen0), universe.initial().tobytes()): (0, universe.initial(), states.initial, ())}
    longest = max(universe.trie.length(j) for j in range(n))
    explored = 1
    length = 0
    if prefix:  # serve the first batch, then search on from there
        prefix = tuple(int(j) for j in prefix)
        cost, key2, dist2 = states.step(states.initial_key, states.initial, prefix, ())
        w2 = universe.step(universe.initial(), prefix)
        alg, opt = cost, int(w2.min())
        seen = seen0 or not require.isdisjoint(prefix)
        if seen:
            value = Fraction(alg) / opt if slope is None else Fraction(alg - slope * opt)
            best = (value, prefix, alg, opt)
        length = len(prefix)
        level = {((key2, seen), w2.tobytes()): (alg, w2, dist2, prefix)} if len(prefix) == batch else {}
    with _progress(0, progress, f"worst {policy}") as bar:
        while level and length < horizon:
            nxt: dict = {}
            items = list(level.values())
            keys = [k[0] for k in level]
            bar.total = (bar.total or 0) + len(items)
            bar.refresh()
            if best is not None:  # no extension of a state beats (alg + (H - length) L_max) / OPT now
                room = (horizon - length) * longest
                if slope is None:
                    ratio = best[0]
                    hopeful = [i for i, item in enumerate(items) if item[0] + room > ratio * int(item[1].min())]
                else:
                    hopeful = [
                        i for i, item in enumerate(items) if item[0] + room - slope * int(item[1].min()) > best[0]
                    ]
                bar.update(len(items) - len(hopeful))
                items = [items[i] for i in hopeful]
                keys = [keys[i] for i in hopeful]
            if not items:
                break
            ws = np.stack([item[1] for item in items])
            for size in range(1, min(batch, horizon - length) + 1):
                grows = size == batch and length + size < horizon
                for b in sizes[size]:
                    w2s = universe.step_many(ws, b)
                    opts = w2s.min(axis=1).tolist()
                    hit_required = require is not None and not require.isdisjoint(b)
                    for i, (alg, _, dist, seq) in enumerate(items):
                        pkey, seen = keys[i]
                        seen = seen or hit_required
                        cost, key2, dist2 = states.step(pkey, dist, b, seq)
                        alg2, opt2 = alg + cost, opts[i]
                        if seen:
                            if slope is None:
                                if best is None or alg2 * best[3] > best[2] * opt2:
                                    best = (Fraction(alg2) / opt2, seq + b, alg2, opt2)
                            else:
                                value = alg2 - slope * opt2
                                if best is None or value > best[0]:
                                    best = (Fraction(value), seq + b, alg2, opt2)
                        if grows:
                            k = ((key2, seen), w2s[i].tobytes())
                            old = nxt.get(k)
                            if old is None or alg2 > old[0]:
                                nxt[k] = (alg2, w2s[i], dist2, seq + b)
            bar.update(len(items))
            if merge:
                nxt = _undominated(nxt)
            explored += len(nxt)
            if explored > state_limit:
                raise InputError(
                    f"horizon {horizon} needs more than {state_limit} search states: {explored} after "
                    f"{length + batch} of {horizon} queries; raise the state limit or lower the horizon"
                )
            level = nxt
            length += batch
    return cls, universe, best, explored, states.keyed


def _part(argument):
    """One part of a split search (:func:`_split`), run by an executor: (found, states kept, keyed)."""
    args, slope, prefix = argument
    _, _, found, explored, keyed = _search(*args, slope, prefix)
    return found, explored, keyed


def _split(args, executor):
    """:func:`worst`'s search split by first batch over ``executor`` (see :func:`worst`)."""
    workload, budget, policy, horizon, batch, state_limit, merge, _, evict_amount, distinct, require = args
    cls = policy if isinstance(policy, type) else policy_class(policy)
    if not enumerable(cls):
        raise InputError(f"policy {cls.name!r} is randomized and its draws cannot be enumerated exactly")
    universe = Universe(workload, budget, batch=batch)
    name = cls.name if built_in(cls) else cls  # a name travels to another process; a plug-in class by reference
    args = (workload, budget, name, horizon, batch, state_limit, merge, False, evict_amount, distinct, require)
    parts = []
    if horizon >= batch:
        firsts = universe.batches(batch)
        if distinct:
            firsts = [b for b in firsts if len(set(b)) == len(b)]
        futures = {executor.submit(_part, (args, None, b), f"worst-{'-'.join(map(str, b))}"): b for b in firsts}
        done = {}
        for future in executor.as_completed(list(futures)):
            done[futures[future]] = future.result()
        parts = [done[b] for b in firsts]
    if batch > 1:  # the sequences of one short batch
        short = args[:3] + (min(horizon, batch - 1),) + args[4:]
        parts.insert(0, _part((short, None, ())))
    best, explored, keyed = None, 0, True
    for found, states, part_keyed in parts:
        explored += states
        keyed = keyed and part_keyed
        if found is not None and (best is None or found[2] * best[3] > best[2] * found[3]):
            best = found
    return cls, universe, best, explored, keyed


def _undominated(level: dict) -> dict:
    """``level`` without the states another state of the same policy key dominates: alg at least as large and
    W at most as large everywhere. Dominance is transitive and two distinct states never dominate each other
    (equal alg and W would be one state), so every dropped state is dominated by a kept one."""
    groups: dict = {}
    for k in level:
        groups.setdefault(k[0], []).append(k)
    kept = {}
    for members in groups.values():
        if len(members) > 1:
            algs = np.array([level[k][0] for k in members])
            ws = np.stack([level[k][1] for k in members])
            g = len(members)
            chunk = max(1, (1 << 22) // (g * ws.shape[1]))
            dominated = np.zeros(g, dtype=bool)
            for lo in range(0, g, chunk):
                hi = min(g, lo + chunk)
                dom = (algs[None, :] >= algs[lo:hi, None]) & np.all(ws[None, :, :] <= ws[lo:hi, None, :], axis=2)
                dom[np.arange(hi - lo), np.arange(lo, hi)] = False
                dominated[lo:hi] = dom.any(axis=1)
            members = [k for k, d in zip(members, dominated.tolist()) if not d]
        for k in members:
            kept[k] = level[k]
    return kept
