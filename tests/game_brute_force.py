"""Brute force for the exact game's tests (tests/game/): every sequence of a small universe, validity at a
batch size, OPT served plainly, and a policy's exact expected misses with every random draw enumerated
through a scripted generator (tests/README.md: shared helpers live at the top of tests/)."""

from __future__ import annotations

import itertools
from fractions import Fraction

from kvtheory.model.workload import Workload
from kvtheory.optimum.exact import solve_optimum
from kvtheory.optimum.fif import run_fif
from kvtheory.reference import reference_policy


def sequences(n: int, horizon: int):
    for length in range(1, horizon + 1):
        yield from itertools.product(range(n), repeat=length)


def valid(universe: Workload, seq, budget: int, batch: int) -> bool:
    trie = universe.trie
    for start in range(0, len(seq), batch):
        nodes = {v for j in seq[start : start + batch] for v in trie.path(j)}
        if sum(trie.edge_len[v] for v in nodes) > budget:
            return False
    return True


def plain_opt(workload: Workload, budget: int, batch: int) -> int:
    if batch == 1:
        return run_fif(workload, budget).misses
    opt = solve_optimum(workload, budget, batch=batch)
    assert opt.status == "optimal"
    return opt.misses


class ScriptedRng:
    """A stand-in for numpy's Generator in the reference policies: integers(n) replays a script of draws and,
    past it, raises with the number of options."""

    class Past(Exception):
        pass

    def __init__(self, script):
        self.script, self.used = script, 0

    def integers(self, n):
        if self.used == len(self.script):
            raise ScriptedRng.Past(n)
        c = self.script[self.used]
        self.used += 1
        return c


def reference_expectation(queries, budget: int, policy: str, seq, batch: int = 1) -> Fraction:
    """E[misses] of the reference (token by token) policy on ``seq``: every draw of the whole run enumerated."""
    chosen = [queries[j] for j in seq]
    total = sum(len(q) for q in chosen)
    expected = Fraction(0)
    pending = [((), Fraction(1))]
    while pending:
        script, p = pending.pop()
        ref = reference_policy(chosen, budget, policy, seed=0)
        ref.rng = ScriptedRng(script)
        hits = 0
        try:
            for start in range(0, len(chosen), batch):
                hits += sum(ref.serve(range(start, min(start + batch, len(chosen)))))
        except ScriptedRng.Past as past:
            n = past.args[0]
            pending.extend((script + (c,), p / n) for c in range(n))
            continue
        expected += p * (total - hits)
    return expected
