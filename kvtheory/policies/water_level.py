"""One FIF group: the cached edges whose tokens share their next request (and multiplicity), evicted
deepest token first, ties at equal depth to the larger trie node id.

Edge v holds the tokens at depths (floor(v), top(v)] with floor(v) = depth(parent(v)) and
top(v) = floor(v) + kept[v]. Evicting r tokens deepest first lowers a water level: every edge whose top
is at the level loses its token there, the larger ids first, then the level drops by one. So the edges
at the level (the *band*) need no individual state: they share ``level``, and a partly drained level is
a *cut*: band members with id <= cut, or in ``extra`` (members that joined since the cut was made),
still hold their token at depth ``level``, the others are at level - 1. A drain then costs O(log n) per
edge that joins or leaves the band, however many tokens and band members it lowers. Edges above the
band (they joined the group later, with a higher top) are lowered to it edge by edge, then join it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from sortedcontainers import SortedList


class WaterLevel:
    """The members of one group; ``drain(r)`` evicts up to r of their tokens in FIF's order."""

    def __init__(self, depth: Sequence[int], parent: Sequence[int]) -> None:
        self._depth, self._parent = depth, parent
        self._explicit: dict[int, int] = {}  # members off the band: v -> tokens kept
        self._heap: list[tuple[int, int]] = []  # (-top, -v) of members off the band, lazily cleaned
        self._band = SortedList()
        self._in_band: set[int] = set()
        self._floors: list[tuple[int, int]] = []  # (-floor, v) of band members, lazily cleaned
        self._level = 0
        self._cut: int | None = None
        self._extra = SortedList()

    def __len__(self) -> int:
        return len(self._explicit) + len(self._band)

    def _floor(self, v: int) -> int:
        return self._depth[self._parent[v]]

    # -- members ----------------------------------------------------------------------------------
    def add(self, v: int, kept: int) -> None:
        """Make v a member with ``kept`` tokens."""
        self._explicit[v] = kept
        heapq.heappush(self._heap, (-(self._floor(v) + kept), -v))

    def kept_of(self, v: int) -> int:
        """Tokens of edge v cached now (0 if v is not a member)."""
        if v in self._explicit:
            return self._explicit[v]
        if v not in self._in_band:
            return 0
        holds = self._cut is None or v <= self._cut or v in self._extra
        return self._level - (0 if holds else 1) - self._floor(v)

    def remove(self, v: int) -> int:
        """v leaves the group (it is requested now); return the tokens it had."""
        kept = self.kept_of(v)
        if v in self._explicit:
            del self._explicit[v]
        elif v in self._in_band:
            self._in_band.discard(v)
            self._band.remove(v)
            self._extra.discard(v)
        return kept

    def members(self) -> list[int]:
        return [*self._explicit, *self._band]

    # -- eviction ---------------------------------------------------------------------------------
    def _top_off_band(self) -> int | None:
        """The highest top among members off the band (stale heap entries dropped)."""
        heap = self._heap
        while heap:
            top, neg_v = heap[0]
            kept = self._explicit.get(-neg_v)
            if kept and self._floor(-neg_v) + kept == -top:
                return -top
            heapq.heappop(heap)
        return None

    def _pop_off_band(self) -> int:
        _, neg_v = heapq.heappop(self._heap)
        del self._explicit[-neg_v]
        return -neg_v

    def _join_band(self, v: int) -> None:
        """v, whose top is the level, joins the band holding its token there."""
        self._band.add(v)
        self._in_band.add(v)
        heapq.heappush(self._floors, (-self._floor(v), v))
        if self._cut is not None and v > self._cut:
            self._extra.add(v)

    def _highest_floor(self) -> int:
        floors = self._floors
        while floors[0][1] not in self._in_band:
            heapq.heappop(floors)
        return -floors[0][0]

    def _settle(self, level: int) -> None:
        """Every band member is at ``level``: drop the emptied ones, let members whose top is there join."""
        self._level, self._cut = level, None
        self._extra.clear()
        floors = self._floors
        while floors and (floors[0][1] not in self._in_band or -floors[0][0] == level):
            _, v = heapq.heappop(floors)
            if v in self._in_band:
                self._in_band.discard(v)
                self._band.remove(v)
        while self._top_off_band() == level:  # each pass pops one
            v = self._pop_off_band()
            self._join_band(v)

    def drain(self, tokens: int) -> int:
        """Evict up to ``tokens`` tokens, deepest first, ties to the larger id; return how many went.

        Each round that does not end the drain lowers phi = 3 (tokens - evicted) + 3 (members off the
        band) + [band empty] + 2 [cut]: it evicts a token (which can empty the band or settle a cut), or
        moves members off the band onto it (filling an empty band), or clears a cut that holds nothing.
        phi starts at most 3 (tokens + len(self) + 1) and never goes below 0, which bounds the rounds."""
        evicted = 0
        for _ in range(3 * (tokens + len(self) + 1)):
            if evicted >= tokens:
                return evicted
            top = self._top_off_band()
            if not self._band:
                if top is None:
                    return evicted
                self._settle(top)
                continue
            if top is not None and top > self._level:
                evicted += self._lower_to_band(tokens - evicted)
                continue
            if top == self._level:
                self._join_band(self._pop_off_band())
                continue
            if self._cut is not None:
                evicted += self._drain_cut(tokens - evicted)
                continue
            width = len(self._band)
            lowest = max(self._highest_floor(), top or 0)
            steps = min((tokens - evicted) // width, self._level - lowest)
            if steps:
                evicted += steps * width
                self._settle(self._level - steps)
                continue
            # fewer tokens left than band members: the largest ids lose their token at this level
            self._cut = self._band[width - (tokens - evicted) - 1]
            return tokens
        raise AssertionError(f"draining {tokens} tokens did not end within its bound on the rounds")

    def _drain_cut(self, tokens: int) -> int:
        """Take up to ``tokens`` of the tokens still held at the level: ``extra`` first (larger ids),
        then the largest ids up to the cut."""
        held_below_cut = self._band.bisect_right(self._cut)
        held = held_below_cut + len(self._extra)
        if tokens >= held:
            self._settle(self._level - 1)
            return held
        from_extra = min(tokens, len(self._extra))
        for _ in range(from_extra):
            self._extra.pop()
        rest = tokens - from_extra
        if rest:
            self._cut = self._band[held_below_cut - rest - 1]
        return tokens

    def _lower_to_band(self, tokens: int) -> int:
        """Lower the members above the band, edge by edge, until they reach its level (then they join
        it) or ``tokens`` are evicted; return how many went.

        Each round lowers the active members (those whose top is the current ``level``) together to the
        next event: a member's floor, the next top off the band, or the band's level ``stop``. That
        event is below ``level`` (an active member holds a token at ``level``, and the members with top
        ``level`` were all taken), so every round lowers the level by at least one and the rounds end,
        by return, within ``level - stop`` of them."""
        stop = self._level
        active: set[int] = set()
        floors: list[tuple[int, int]] = []
        level = self._top_off_band()
        evicted = 0

        def take(at: int) -> None:
            while self._top_off_band() == at:
                v = self._pop_off_band()
                active.add(v)
                heapq.heappush(floors, (-self._floor(v), v))

        take(level)
        for _ in range(level - stop):
            top = self._top_off_band()  # floors holds one entry per active member, and some are active
            lowest = max(-floors[0][0], stop, top or 0)
            room = len(active) * (level - lowest)
            if tokens - evicted < room:
                steps, extra = divmod(tokens - evicted, len(active))
                level -= steps
                for rank, v in enumerate(sorted(active, reverse=True)):
                    kept = level - (1 if rank < extra else 0) - self._floor(v)
                    if kept:
                        self.add(v, kept)
                return tokens
            evicted += room
            level = lowest
            while floors and -floors[0][0] == level:  # each pass pops one
                _, emptied = heapq.heappop(floors)
                active.discard(emptied)
            if level == stop:
                for v in active:
                    self._join_band(v)
                return evicted
            take(level)
            if not active:
                return evicted
        raise AssertionError(f"the members above the band did not reach its level {stop}")
