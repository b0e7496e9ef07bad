"""``best --deterministic``: the smallest worst-case ratio any deterministic online algorithm reaches over the
sequences of up to H queries of a universe, at any batch size (docs/game.md §The best deterministic ratio).

best_det(H) = min over deterministic online algorithms A of max over sequences s (1 <= |s| <= H) of
A(s) / OPT(s). An online algorithm decides, after each request, which cache C' to keep: any prefix-closed C'
with U_r <= C' <= C + U_r and |C'| = min(B, |C + U_r|) (demand paging, leaves only, never a node of the
request), knowing only the requests so far. For a deterministic algorithm the adversary may as well adapt, so
this is the value of a finite game of perfect information in which the requester picks the next query (or
stops and is paid ALG/OPT of the sequence so far, once it is non-empty) and the algorithm then picks C'. The
payoff of every continuation depends on the history only through the state (requests so far, ALG's cache,
ALG's cost, OPT's capped work function), so the game is solved by backward induction over states, memoised:

    V(t, C, alg, W) = max( alg / min W  [t >= 1],  max over r of min over C' of V(t + 1, C', alg + cost, W_r) )

with V = alg / min W at t = H. best_det(H) = V(0, {}, 0, W_0). Exact rationals throughout. The certificate
is the pair of optimal strategies (the algorithm's choice and the requester's move at every state reached);
:func:`check_strategies` re-plays each against every reply of the other side, in exact arithmetic, and
confirms that the algorithm's strategy holds every sequence to at most V and that the requester's strategy
forces at least V against every algorithm.

At batch size beta >= 2 the requester's move is a batch b of beta queries whose footprint U_b fits in B (or,
ending the sequence, a shorter last batch); ALG pays the sum over t in U_b \\ C of m_b(t), the number of the
batch's queries that contain token t (each query that needs a missing token misses it, as in the model), and
then keeps any prefix-closed C' with U_b <= C' <= C + U_b and |C'| = min(B, |C + U_b|). Demand paging loses
nothing here either: an algorithm that keeps C' within a larger allowed C'' is no better than one that keeps
C'' and then holds each token of C'' \\ C' until its own first choice would have evicted it or a batch forces
it out (at most the same misses, token by token). V, the certificate and :func:`check_strategies` are as
above, t counting queries; batch 1 is the game described first.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from kvtheory.errors import InputError
from kvtheory.game.search import STATE_LIMIT, fraction_text
from kvtheory.game.universe import Universe
from kvtheory.model.workload import Workload

STOP = -1  # the requester's move "stop here and be paid"


@dataclass(frozen=True)
class BestResult:
    """best_det(H) = ``ratio`` on the universe at budget ``budget``; ``states`` solved. ``algorithm`` maps a state
    key to the configuration the algorithm keeps after each request (key (t, C, alg, W bytes, r)); ``requester``
    maps a state key (t, C, alg, W bytes) to its move (a query index, or -1 to stop)."""

    budget: int
    horizon: int
    ratio: Fraction
    states: int
    algorithm: dict = field(repr=False)
    requester: dict = field(repr=False)
    batch: int = 1

    def to_dict(self) -> dict:
        return {
            "mode": "best",
            "kind": "deterministic",
            "budget": self.budget,
            "batch": self.batch,
            "horizon": self.horizon,
            "ratio": fraction_text(self.ratio),
            "ratio_float": float(self.ratio),
            "states": self.states,
        }


class _Game:
    def __init__(self, universe: Universe, horizon: int, batch: int = 1) -> None:
        self.universe = universe
        self.horizon = horizon
        self.batch = batch
        self._moves: dict = {}
        self._batches = {size: universe.batches(size) for size in range(1, batch + 1)}

    def requests(self, t: int):
        """The requester's moves after t queries: (label, batch, queries after it); a batch shorter than beta
        ends the sequence (its 'after' is the horizon). At batch 1 the label is the query index, else the batch."""
        if self.batch == 1:
            if t < self.horizon:
                for b in self._batches[1]:
                    yield b[0], b, t + 1
            return
        for size in range(1, min(self.batch, self.horizon - t) + 1):
            after = t + size if size == self.batch else self.horizon
            for b in self._batches[size]:
                yield b, b, after

    def moves(self, c: int, batch) -> tuple[int, list[int]]:
        """(ALG's misses on ``batch`` (a tuple of query indices, or one index) from configuration index c, the
        configuration indices it may keep)."""
        found = self._moves.get((c, batch))
        if found is None:
            u = self.universe
            b = (batch,) if isinstance(batch, (int, np.integer)) else tuple(batch)
            have = u.configs[c]
            need = 0
            cost = 0
            for r in b:
                need |= u.query_masks[r]
                cost += (u.query_masks[r] & ~have).bit_count()
            union = have | need
            if union.bit_count() <= u.budget:
                keep = [u.index[union]]
            else:
                keep = [
                    i
                    for i, x in enumerate(u.configs)
                    if x.bit_count() == u.budget and x & need == need and x & ~union == 0
                ]
            found = self._moves[(c, batch)] = (cost, keep)
        return found


def best_deterministic(
    workload: Workload, budget: int, horizon: int, *, batch: int = 1, state_limit: int = STATE_LIMIT
) -> BestResult:
    """best_det(``horizon``) on the universe ``workload`` at batch size ``batch`` (module docstring).

    >>> from kvtheory.model.workload import Workload
    >>> best_deterministic(Workload.from_token_lists([[0], [1], [2]]), 2, 6).ratio   # paging, n = 3, k = 2
    Fraction(3, 2)
    """
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise InputError(f"horizon must be a positive number of queries, got {horizon}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise InputError(f"batch size must be a positive integer, got {batch}")
    batch = int(batch)
    universe = Universe(workload, budget, batch=batch)
    game = _Game(universe, horizon, batch)
    memo: dict = {}
    algorithm: dict = {}
    requester: dict = {}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * horizon + 100))

    def value(t: int, c: int, alg: int, w: np.ndarray) -> Fraction:
        wb = w.tobytes()
        key = (t, c, alg, wb)
        found = memo.get(key)
        if found is not None:
            return found
        best = Fraction(alg, int(w.min())) if t else Fraction(-1)
        move = STOP
        for r, b, after in game.requests(t):
            cost, keep = game.moves(c, r)
            w2 = universe.step(w, b)
            reply, choice = None, None
            for c2 in keep:
                v = value(after, c2, alg + cost, w2)
                if reply is None or v < reply:
                    reply, choice = v, c2
            algorithm[(t, c, alg, wb, r)] = choice
            if reply > best:
                best, move = reply, r
        memo[key] = best
        requester[key] = move
        if len(memo) > state_limit:
            raise InputError(
                f"horizon {horizon} needs more than {state_limit} game states; raise the state limit or lower it"
            )
        return best

    ratio = value(0, 0, 0, universe.initial())
    return BestResult(universe.budget, horizon, ratio, len(memo), algorithm, requester, batch)


def check_strategies(workload: Workload, budget: int, result: BestResult) -> tuple[Fraction, Fraction]:
    """(the most any requester gets against the algorithm's strategy, the least any algorithm concedes to the
    requester's strategy), each computed by playing the one strategy against every reply of the other side;
    both equal ``result.ratio`` when the certificate holds."""
    universe = Universe(workload, budget, batch=result.batch)
    game = _Game(universe, result.horizon, result.batch)
    moves = {}  # t -> {label: (batch, queries after it)}

    def requests(t: int) -> dict:
        if t not in moves:
            moves[t] = {label: (b, after) for label, b, after in game.requests(t)}
        return moves[t]

    def against_algorithm(t: int, c: int, alg: int, w: np.ndarray) -> Fraction:
        best = Fraction(alg, int(w.min())) if t else Fraction(-1)
        for r, (b, after) in requests(t).items():
            cost, keep = game.moves(c, r)
            c2 = result.algorithm[(t, c, alg, w.tobytes(), r)]
            if c2 not in keep:
                raise AssertionError(f"the algorithm's strategy keeps an invalid cache at step {t}")
            best = max(best, against_algorithm(after, c2, alg + cost, universe.step(w, b)))
        return best

    def against_requester(t: int, c: int, alg: int, w: np.ndarray) -> Fraction:
        r = result.requester[(t, c, alg, w.tobytes())]
        if r == STOP:
            return Fraction(alg, int(w.min()))
        if r not in requests(t):
            raise AssertionError(f"the requester's strategy makes an invalid move at step {t}")
        b, after = requests(t)[r]
        cost, keep = game.moves(c, r)
        w2 = universe.step(w, b)
        return min(against_requester(after, c2, alg + cost, w2) for c2 in keep)

    against_algorithm = _memoised(against_algorithm)
    against_requester = _memoised(against_requester)
    start = universe.initial()
    return against_algorithm(0, 0, 0, start), against_requester(0, 0, 0, start)


def _memoised(play):
    """``play`` memoised on its state (both strategies are functions of the state, so each subgame's value is)."""
    memo: dict = {}

    def wrapped(t: int, c: int, alg: int, w: np.ndarray) -> Fraction:
        key = (t, c, alg, w.tobytes())
        if key not in memo:
            memo[key] = play(t, c, alg, w)
        return memo[key]

    return wrapped
