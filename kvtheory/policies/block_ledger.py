"""The engine's books on a block engine's cache (docs/policies.md §vllm, "What the engine checks").

A policy with ``block_engine = True`` (vLLM's block pool) keeps a cache of whole blocks of b tokens, each named
by its chain (:mod:`kvtheory.policies.block_chain`), that need not be prefix-closed, and serves a batch as one
scheduler step: request by request, each looked up and allocated before the next. :class:`BlockLedger` holds
the set of cached blocks as the engine last accepted it and replays each batch from the policy's decisions,
which the policy reports after ``serve``: ``evicted[i]``, the blocks that left the cache while the batch's i-th
request was allocated. Request by request it

- counts the request's hits itself: b x its longest run of cached first blocks, at most floor((L - 1) / b)
  blocks (a prompt cached whole recomputes its last token), and checks the policy's report against it;
- checks each eviction: a cached block, not one the batch's requests hold (the blocks they hit or allocated so
  far), and no more blocks than the request allocates (ceil(L / b) minus its hit blocks);
- caches the request's full blocks;

and after the batch checks that the policy's cache (``cached_blocks()``) is the engine's and prefix-closed in
blocks (the block before a cached block on its chain is cached: vLLM frees a request's blocks tail first and a
later free puts a block behind every block freed before it, so a block never outlives its parent; measured on
every instance tried, and checked here so that an instance where it fails would be found), that ``size`` (tokens
of the keyed blocks, duplicates counted) is a multiple of b between b x the cached blocks and the budget B (the
pool's B / b usable blocks), and that ``kept()`` is the tokens the cached blocks cover.

What section 1's :class:`~kvtheory.policies.ledger.CacheLedger` checks and this one does not, because vLLM does
otherwise: hits against the cache as it was before the batch (a request sees what the batch's earlier requests
cached or evicted) and up to the last token (vLLM recomputes it); residency of every token (the partial last
block is never cached); and the model's shortfall in tokens (vLLM evicts when its allocation runs out of blocks
that hold no key, and the duplicate blocks its recomputed last blocks leave take room).
"""

from __future__ import annotations

from collections.abc import Sequence

from kvtheory.model.trie import PrefixTrie
from kvtheory.policies.block_chain import BlockKey, chain_keys, covered_tokens, parent_key
from kvtheory.policies.ledger import ModelViolation


class BlockLedger:
    """The cached blocks of one worker as the engine last accepted them, and the checks of each batch."""

    def __init__(self, trie: PrefixTrie, budget: int, policy_name: str, block_size: int) -> None:
        self.trie = trie
        self.budget = budget
        self.policy_name = policy_name
        self.block_size = block_size
        self.cached: set[BlockKey] = set()
        self.kept: dict[int, int] = {}
        self.size = 0
        self.batches = 0
        self._keys: dict[int, list[BlockKey]] = {}

    def keys(self, j: int) -> list[BlockKey]:
        end = self.trie.end[j]
        if end not in self._keys:
            self._keys[end] = chain_keys(self.trie, end, self.block_size)
        return self._keys[end]

    def _run(self, j: int, cached: set[BlockKey]) -> int:
        """Query j's hit blocks against ``cached``: its leading cached blocks, at most floor((L - 1) / b)."""
        run = 0
        for key in self.keys(j)[: (self.trie.length(j) - 1) // self.block_size]:
            if key not in cached:
                break
            run += 1
        return run

    def hits(self, j: int) -> int:
        """The hits query j would get now, in tokens."""
        return self._run(j, self.cached) * self.block_size

    def serve(self, policy, group: Sequence[int]) -> list[int]:
        """Serve ``group`` with ``policy``, replay and check it, and return the engine's hits."""
        self.batches += 1
        b = self.block_size
        reported = list(policy.serve(group))
        evicted = policy.evicted
        if len(reported) != len(group) or len(evicted) != len(group):
            self._refuse(group, f"serve() returned {len(reported)} hit counts and {len(evicted)} eviction lists")
        cached, held, expected = set(self.cached), set(), []
        for j, got, gone in zip(group, reported, evicted):
            run = self._run(j, cached)
            expected.append(run * b)
            if got != run * b:
                self._refuse(group, f"the policy reports {got!r} hits for query {j}, the engine counts {run * b}")
            keys = self.keys(j)
            held.update(keys[:run])
            allocated = -(-self.trie.length(j) // b) - run
            if len(gone) > allocated:
                self._refuse(group, f"query {j} allocates {allocated} blocks and evicted {len(gone)}")
            for key in gone:
                if key not in cached:
                    self._refuse(group, f"query {j} evicted block {key}, which was not cached")
                if key in held:
                    self._refuse(group, f"query {j} evicted block {key}, which a request of the batch holds")
                cached.discard(key)
            cached.update(keys)
            held.update(keys)
        after = policy.cached_blocks()
        if after != cached:
            extra, missing = sorted(after - cached), sorted(cached - after)
            self._refuse(group, f"the policy caches {extra[:3]} beyond the engine's books and lacks {missing[:3]}")
        orphan = next((key for key in cached if parent_key(self.trie, key, b) not in cached | {None}), None)
        if orphan is not None:
            self._refuse(group, f"block {orphan} is cached and the block before it on its chain is not")
        size = policy.size
        if size % b or not len(cached) * b <= size <= self.budget:
            self._refuse(
                group,
                f"the policy says its blocks hold {size} tokens: not a multiple of b = {b} between "
                f"{len(cached) * b} (its {len(cached)} cached blocks) and the budget B = {self.budget}",
            )
        kept = covered_tokens(self.trie, cached)
        if policy.kept() != kept:
            self._refuse(group, "kept() is not the tokens the cached blocks cover")
        self.cached, self.kept, self.size = cached, kept, size
        return expected

    def _refuse(self, group: Sequence[int], rule: str) -> None:
        first, last = group[0], group[-1]
        queries = f"query {first}" if len(group) == 1 else f"queries {first}-{last}"
        raise ModelViolation(f"policy {self.policy_name!r} broke the model at batch {self.batches} ({queries}): {rule}")
