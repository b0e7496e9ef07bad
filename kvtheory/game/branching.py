"""Every outcome of serving one batch, with its exact probability (docs/game.md §Randomized policies).

A deterministic policy has one outcome. A randomized one draws at each evicted token (or leaf); the
outcomes of a batch are the leaves of the tree of its draws, and the probability of one is the product of
its draws' probabilities. :func:`outcomes` walks that tree depth first: it serves a copy of the policy
with a *script* of draws, and where the script runs out the draw raises :class:`_Draw` with its options
(each draw's exact distribution), so each option is tried with the script one longer. A batch's draws
never change its hits (they are counted before it), so each outcome is (probability, policy after it).

The draws, as the policies make them:

- :class:`~kvtheory.policies.edge_cache.LeafTokenSampler` (``rlt``, ``random-leaf``): each evicted token
  is the leaf token of a candidate edge chosen uniformly (the candidates: the unmarked cached leaves off the
  batch's paths), one token at a time; with none left, the policy's own ``_no_candidates`` hook (RLT: a new
  phase) makes more. The engine draws in blocks, cut at the first draw that changes the candidates: the same
  distribution, token by token.
- :class:`~kvtheory.policies.rules.SamplerRule` (plug-ins): each eviction comes from leaf v with probability
  weight(v) / (sum of the weights), computed in exact rationals from the floats ``weight`` returns.
- :class:`~kvtheory.policies.rlt_authors.AuthorsRLT` (``rlt-authors``): each evicted token is one
  ``integers(n)`` of its generator, uniform over the n entries of ``cy_evict``'s candidate list; the
  generator is replaced by the script, each of the n entries with probability 1/n.

Any other randomized policy is refused with an InputError: its draws cannot be enumerated exactly.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from fractions import Fraction

from kvtheory.errors import InputError
from kvtheory.policies.base import EvictionPolicy
from kvtheory.policies.edge_cache import LeafTokenSampler
from kvtheory.policies.ledger import CacheLedger, built_in
from kvtheory.policies.rlt_authors import AuthorsRLT
from kvtheory.policies.rules import SamplerRule


class _Draw(Exception):
    """The script ran out at a draw whose options are [(choice, probability), ...]."""

    def __init__(self, options: list[tuple[int, Fraction]]) -> None:
        super().__init__("a draw past the script")
        self.options = options


class _Script:
    """The draws to replay, in order; past them, a draw raises :class:`_Draw`."""

    def __init__(self, choices: Sequence[int]) -> None:
        self.choices = choices
        self.used = 0

    def draw(self, options: list[tuple[int, Fraction]]) -> int:
        if self.used == len(self.choices):
            raise _Draw(options)
        choice = self.choices[self.used]
        self.used += 1
        return choice


def clone(policy: EvictionPolicy) -> EvictionPolicy:
    """A deep copy of ``policy`` that shares its (read-only) trie: through pickle (several times faster than
    ``copy.deepcopy`` on the radix trees), or ``copy.deepcopy`` for an object pickle cannot take (a class
    defined inside a function)."""
    trie = policy.trie
    try:
        policy.trie = None
        try:
            made = pickle.loads(pickle.dumps(policy, pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, AttributeError, TypeError):
            made = copy.deepcopy(policy)
    finally:
        policy.trie = trie
    made.trie = trie
    return made


def enumerable(cls: type) -> bool:
    """Whether :func:`outcomes` can enumerate the draws of policy class ``cls`` (or it draws none)."""
    return not cls.randomized or issubclass(cls, (LeafTokenSampler, SamplerRule, AuthorsRLT))


class _ScriptedGenerator:
    """rlt-authors' generator, replaced: ``integers(n)`` is a uniform draw over 0..n-1 taken from ``script``."""

    def __init__(self, script: _Script) -> None:
        self.script = script

    def integers(self, n: int) -> int:
        p = Fraction(1, n)
        return self.script.draw([(i, p) for i in range(n)])


def _sampler_evict(policy: LeafTokenSampler, script: _Script):
    """LeafTokenSampler._evict, one token per draw, the draw taken from ``script``."""

    def evict(tokens: int, overflow: int, on_paths) -> None:
        kept = policy._kept
        freed = 0
        while tokens > 0:
            if policy._pool_size == 0:
                if policy._no_candidates(on_paths):
                    continue
                if freed >= overflow:
                    return
                raise RuntimeError("nothing left to evict: the batch footprint exceeds the budget")
            candidates = sorted(int(v) for v in policy._pool[: policy._pool_size])
            p = Fraction(1, len(candidates))
            v = script.draw([(c, p) for c in candidates])
            kept[v] -= 1
            policy.size -= 1
            tokens -= 1
            freed += 1
            if kept[v] == 0:
                policy._emptied(v)

    return evict


def _rule_choose(policy: SamplerRule, script: _Script):
    """SamplerRule._choose with exact probabilities, the draw taken from ``script``."""

    def choose(candidates: list[int]) -> int:
        weights = [Fraction(float(w)) for w in policy._weights(candidates)]
        total = sum(weights)
        if total <= 0:
            raise RuntimeError(f"policy {policy.name!r}: every leaf has weight 0, nothing can be evicted")
        return script.draw([(v, w / total) for v, w in sorted(zip(candidates, weights)) if w > 0])

    return choose


def _unhook(policy: EvictionPolicy, hook: str) -> None:
    """Take the script out of ``policy``: a patched method goes (the class's is back); a replaced generator
    becomes None (an outcome is only ever served again through :func:`outcomes`, with a script)."""
    if hook == "_rng":
        policy._rng = None
    else:
        del policy.__dict__[hook]


def _serve(policy: EvictionPolicy, batch: Sequence[int], checked: bool) -> list[int]:
    """Serve ``batch``; a plug-in (``checked``) through the engine's books, whose hits it returns."""
    if not checked:
        return list(policy.serve(batch))
    ledger = CacheLedger(policy.trie, policy.budget, type(policy).name, policy.evict_amount, type(policy).whole_node)
    ledger.kept = policy.kept()
    ledger.size = sum(ledger.kept.values())
    return ledger.serve(policy, batch)


def outcomes(policy: EvictionPolicy, batch: Sequence[int]) -> tuple[list[int], list[tuple[Fraction, EvictionPolicy]]]:
    """(the batch's hits, [(probability, the policy after the batch), ...]): every outcome of serving ``batch``
    from ``policy`` (left unchanged), the probabilities exact (Fractions; the int 1 for a deterministic
    policy's one outcome) and summing to 1."""
    cls = type(policy)
    checked = not built_in(cls)
    if not cls.randomized:
        after = clone(policy)
        return _serve(after, batch, checked), [(1, after)]
    if isinstance(policy, LeafTokenSampler):
        hook, make = "_evict", _sampler_evict
    elif isinstance(policy, SamplerRule):
        hook, make = "_choose", _rule_choose
    elif isinstance(policy, AuthorsRLT):
        hook, make = "_rng", lambda after, script: _ScriptedGenerator(script)
    else:
        raise InputError(f"policy {cls.name!r} is randomized and its draws cannot be enumerated exactly")
    found: list[tuple[Fraction, EvictionPolicy]] = []
    hits: list[int] = []
    pending: list[tuple[tuple[int, ...], Fraction]] = [((), Fraction(1))]
    while pending:
        choices, probability = pending.pop()
        after = clone(policy)
        script = _Script(choices)
        setattr(after, hook, make(after, script))
        try:
            hits = _serve(after, batch, checked)
        except _Draw as draw:
            pending.extend((choices + (c,), probability * p) for c, p in reversed(draw.options))
            continue
        finally:
            _unhook(after, hook)
        found.append((probability, after))
    return hits, found
