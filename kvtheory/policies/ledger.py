"""The engine's own books on a policy's cache (docs/model.md §The engine owns the cache).

A policy decides; the engine keeps the books. :class:`CacheLedger` holds the cache as the engine last
accepted it (``kept[v]`` tokens of radix edge v, counted from the edge's head), counts each query's hits h
itself (the cached prefix before the batch), and after every batch reads the policy's cache and checks it
against section 1 of the model:

- **hits**: the hits the policy reports for each query equal the engine's count;
- **well-formed**: every entry is a trie edge v with 0 < kept[v] <= edge_len[v];
- **prefix-closed**: kept[v] > 0 only under a full parent edge;
- **resident**: every token node of the batch is cached afterwards;
- **no prefetch**: off the batch's paths, no edge holds more tokens than before the batch;
- **budget**: the cache holds at most B tokens, and the policy's ``size`` says how many;
- **demand paging**: with ``missing`` tokens of the batch uncached and overflow = size + missing - B, the
  tokens due are max(overflow, 0) (``shortfall``), or min(missing, everything off the batch's paths) when
  overflow > 0 and none otherwise (``allocation``). A policy that evicts a token at a time evicts exactly
  the tokens due; one that evicts whole radix nodes (``whole_node``, as L-LRU) at least the tokens due, and
  fewer than due + the longest chain of evicted tokens (its last node went while tokens were still due).

Since the cache before and after is prefix-closed and the batch's nodes are resident, the tokens that left
are exactly those a sequence of leaf evictions off the batch's paths can remove: only cached leaves go and
never a node of the batch. A decision that breaks a rule raises :class:`ModelViolation` (an InputError: exit
status 2 on the command line) naming the policy, the batch, the token node and the rule.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from kvtheory.errors import InputError
from kvtheory.model.trie import PrefixTrie


class ModelViolation(InputError):
    """A policy's decision broke the model: the message names the policy, the batch, the token and the rule."""


class CacheLedger:
    """The cache of one worker as the engine last accepted it, and the checks of each batch's outcome."""

    def __init__(
        self, trie: PrefixTrie, budget: int, policy_name: str, evict_amount: str = "shortfall", whole_node: bool = False
    ) -> None:
        self.trie = trie
        self.whole_node = whole_node
        self.budget = budget
        self.policy_name = policy_name
        self.evict_amount = evict_amount
        self.kept: dict[int, int] = {}
        self.size = 0
        self.batches = 0

    def hits(self, j: int) -> int:
        """h_j: the length of query j's longest cached prefix in the accepted cache."""
        edge_len, kept = self.trie.edge_len, self.kept
        h = 0
        for v in self.trie.path(j):
            cached = kept.get(v, 0)
            h += cached
            if cached < edge_len[v]:
                break
        return h

    def serve(self, policy, group: Sequence[int]) -> list[int]:
        """Serve ``group`` (query indices) with ``policy``, check the outcome, and return the engine's hits."""
        self.batches += 1
        trie, kept = self.trie, self.kept
        expected = [self.hits(j) for j in group]
        on_paths = {v for j in group for v in trie.path(j)}
        missing = sum(trie.edge_len[v] - kept.get(v, 0) for v in on_paths)
        reported = list(policy.serve(group))
        self._check_hits(group, reported, expected)
        after = policy.kept()
        self._check_cache(group, on_paths, after)
        size = sum(after.values())
        if size > self.budget:
            self._refuse(group, None, f"the cache holds {size} tokens, over the budget B = {self.budget}")
        if policy.size != size:
            self._refuse(group, None, f"the policy says it caches {policy.size} tokens, its cache holds {size}")
        self._check_evicted(group, on_paths, missing, self.size + missing - size, after)
        self.kept, self.size = dict(after), size
        return expected

    # -- the rules --------------------------------------------------------------------------------------
    def _check_hits(self, group: Sequence[int], reported: list, expected: list[int]) -> None:
        if len(reported) != len(group):
            self._refuse(group, None, f"serve() returned {len(reported)} hit counts for {len(group)} queries")
        for j, got, want in zip(group, reported, expected):
            if isinstance(got, bool) or not isinstance(got, numbers.Integral) or got != want:
                self._refuse(group, None, f"the policy reports {got!r} hits for query {j}, the engine counts {want}")

    def _check_cache(self, group: Sequence[int], on_paths: set[int], after) -> None:
        trie, before = self.trie, self.kept
        if not isinstance(after, dict):
            self._refuse(group, None, f"kept() returned a {type(after).__name__}, not a dict of edge -> tokens")
        edge_len, parent, n = trie.edge_len, trie.parent, trie.n_nodes
        for v, tokens in after.items():
            if not isinstance(v, numbers.Integral) or not 0 < v < n:
                self._refuse(group, None, f"kept() names {v!r}, which is not an edge of the workload's trie")
            if isinstance(tokens, bool) or not isinstance(tokens, numbers.Integral) or not 0 < tokens <= edge_len[v]:
                self._refuse(group, (v, 1), f"kept() says {tokens!r} tokens of an edge of {edge_len[v]}")
            p = parent[v]
            if p and after.get(p, 0) != edge_len[p]:
                self._refuse(
                    group,
                    (p, after.get(p, 0) + 1),
                    "the cache is not prefix-closed: this token is missing under a cached one",
                )
            if v not in on_paths and tokens > before.get(v, 0):
                self._refuse(group, (v, before.get(v, 0) + 1), "a token no query of the batch asked for was loaded")
        for v in on_paths:
            if after.get(v, 0) != edge_len[v]:
                self._refuse(
                    group, (v, after.get(v, 0) + 1), "a token of the batch being served is not cached after it"
                )

    def _check_evicted(self, group: Sequence[int], on_paths: set[int], missing: int, evicted: int, after) -> None:
        overflow = self.size + missing - self.budget
        if self.evict_amount == "allocation" and overflow > 0:
            off_paths = self.size - sum(self.kept.get(v, 0) for v in on_paths)
            due, what = min(missing, off_paths), f"the allocation of {missing} tokens"
        else:
            due, what = max(overflow, 0), f"the shortfall of {max(overflow, 0)} tokens"
        if self.whole_node and due > 0:
            if due <= evicted < due + self._longest_evicted_chain(after):
                return
            rule = "whole leaf nodes until no more is due"
        elif evicted == due:
            return
        else:
            rule = "exactly the tokens due"
        self._refuse(group, None, f"{evicted} tokens were evicted where {what} asks for {due}: the model evicts {rule}")

    def _longest_evicted_chain(self, after) -> int:
        """The most tokens on one root path among those evicted (``self.kept`` minus ``after``): no radix node
        evicted whole is longer."""
        trie, before = self.trie, self.kept
        gone = {v: before[v] - after.get(v, 0) for v in before if before[v] > after.get(v, 0)}
        longest: dict[int, int] = {}
        for v in sorted(gone, key=trie.depth.__getitem__, reverse=True):  # children before parents
            longest[v] = gone[v] + max((longest[c] for c in trie.children[v] if c in longest), default=0)
        return max(longest.values(), default=0)

    def _refuse(self, group: Sequence[int], token: tuple[int, int] | None, rule: str) -> None:
        """Raise :class:`ModelViolation`; ``token`` = (edge v, position on v from 1), if one is to blame."""
        first, last = group[0], group[-1]
        queries = f"query {first}" if len(group) == 1 else f"queries {first}-{last}"
        where = ""
        if token is not None:
            v, position = token
            depth = self.trie.depth[self.trie.parent[v]] + position
            through = next((j for j, end in enumerate(self.trie.end) if self.trie.is_ancestor(v, end)), None)
            where = f" token {depth} of query {through}:"
        raise ModelViolation(
            f"policy {self.policy_name!r} broke the model at batch {self.batches} ({queries}):{where} {rule}"
        )


def built_in(rule: type) -> bool:
    """Whether the policy class ``rule`` is one of kvtheory's own, which the test suite runs through every
    check of :func:`kvtheory.testing.check_policy`; any other (a user's plug-in) is served checked."""
    return rule.__module__.startswith("kvtheory.policies.")


def served_checked(policy, rule: type, budget: int, evict_amount: str = "shortfall", check: bool | None = None):
    """``policy`` (an object of the class ``rule``) as the engine serves it: through a :class:`CheckedPolicy`
    if ``check`` says so, by default (None) when ``rule`` is not :func:`built_in`."""
    if check is None:
        check = not built_in(rule)
    return CheckedPolicy(policy, rule, budget, evict_amount) if check else policy


class CheckedPolicy:
    """A policy object of the policy class ``rule`` served through a :class:`CacheLedger` (a
    :class:`~kvtheory.policies.block_ledger.BlockLedger` for a ``block_engine``): ``serve`` returns the
    engine's hits after the batch's outcome is checked; ``kept``, ``size`` and ``cached_prefix`` answer from
    the engine's books."""

    def __init__(self, policy, rule: type, budget: int, evict_amount: str = "shortfall") -> None:
        self.policy = policy
        self.name = rule.name
        if getattr(rule, "block_engine", False):
            from kvtheory.policies.block_ledger import BlockLedger  # it imports ModelViolation from here

            self.ledger = BlockLedger(policy.trie, budget, rule.name, policy.block_size)
        else:
            self.ledger = CacheLedger(policy.trie, budget, rule.name, evict_amount, rule.whole_node)

    @property
    def size(self) -> int:
        return self.ledger.size

    @property
    def trie(self) -> PrefixTrie:
        return self.ledger.trie

    @property
    def budget(self) -> int:
        return self.ledger.budget

    def serve(self, batch: Sequence[int]) -> list[int]:
        return self.ledger.serve(self.policy, batch)

    def cached_prefix(self, j: int) -> int:
        return self.ledger.hits(j)

    def kept(self) -> dict[int, int]:
        return dict(self.ledger.kept)
