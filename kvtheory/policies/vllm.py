"""vLLM v1's prefix cache, block for block (docs/policies.md §vllm): its block pool, free queue and hash map.

The rule, as vLLM 0.33.0's ``BlockPool``, ``FreeKVCacheBlockQueue`` and ``KVCacheManager`` run it for one
full-attention group with prefix caching on:

- the pool has N = B / b + 1 blocks of b tokens; block 0 is the null block, never handed out, so B / b blocks
  are usable; the free queue starts as 1, 2, ..., N - 1;
- a full block is keyed by its chain (:mod:`kvtheory.policies.block_chain`); the map key -> blocks keeps every
  block cached under a key, oldest first, and a lookup takes the oldest (vLLM does not deduplicate);
- a request of L tokens hits the longest run of its first blocks found in the map, at most floor((L - 1) / b)
  (a prompt cached whole recomputes its last token); hits are b x that run;
- it allocates ceil(L / b) blocks in all at once: the hit blocks, each taken off the free queue if no running
  request holds it (touch: reference count + 1), and the rest popped from the queue's front; a popped block that
  still has a key leaves the map then (lazy eviction). The request's full blocks are keyed as soon as they are
  allocated; the partial last block never is. If the allocation needs more blocks than the queue holds, the
  batch does not fit: an InputError;
- when the request finishes its blocks are freed in reverse order (tail first): each one's reference count
  drops, and those that reach 0 go back on the queue, keyed ones to the back in that order, unkeyed ones to
  the front (reused first).

A batch is one scheduler step: its requests are looked up and allocated in order (a later one hits the blocks an
earlier one has just keyed, and never a block an earlier one evicted), then all are freed in order.
:meth:`cached_blocks` gives every keyed block, :meth:`kept` the tokens under the blocks whose whole chain is cached
(the reachable ones: all of them, as the free order keeps the cache prefix-closed in blocks, which the engine's
block ledger checks); ``size`` counts the tokens of the keyed blocks, duplicates included. :attr:`evicted` reports
the blocks each request of the last batch evicted, for the engine to replay (:mod:`kvtheory.policies.block_ledger`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from numbers import Integral

from kvtheory.errors import InputError
from kvtheory.model.trie import PrefixTrie
from kvtheory.policies import register_policy
from kvtheory.policies.base import EvictionPolicy
from kvtheory.policies.block_chain import BlockKey, chain_keys, covered_tokens, reachable


def check_block_size(budget: int, block_size: int) -> int:
    """``block_size`` as an int if it is a positive integer that divides the budget, else an InputError."""
    if isinstance(block_size, bool) or not isinstance(block_size, Integral) or block_size <= 0:
        raise InputError(f"block size must be a positive number of tokens, got {block_size!r}")
    if budget % block_size:
        raise InputError(f"budget B = {budget} is not a multiple of the block size b = {block_size}")
    return int(block_size)


@register_policy
class VllmPrefixCache(EvictionPolicy):
    """vLLM v1's block pool with prefix caching (see the module). ``evict_amount`` "shortfall" only: vLLM takes
    a fresh block before a keyed one, so it evicts exactly the blocks its allocation lacks; "allocation"
    (SGLang's over-eviction) is refused."""

    name = "vllm"
    block_engine = True

    def __init__(
        self,
        trie: PrefixTrie,
        budget: int,
        *,
        seed: int | None = None,
        evict_amount: str = "shortfall",
        block_size: int = 1,
    ) -> None:
        super().__init__(trie, budget, seed=seed, evict_amount=evict_amount)
        if self.evict_amount != "shortfall":
            raise InputError(
                f"policy 'vllm' does not take an eviction amount (evict_amount) {evict_amount!r}: vLLM evicts "
                "exactly the blocks its allocation lacks (shortfall)"
            )
        self.block_size = check_block_size(budget, block_size)
        blocks = budget // self.block_size
        #: free queue of block ids, front first (vLLM's FreeKVCacheBlockQueue), values unused
        self.queue: OrderedDict[int, None] = OrderedDict.fromkeys(range(1, blocks + 1))
        self.ref = [0] * (blocks + 1)
        self.key: list[BlockKey | None] = [None] * (blocks + 1)
        #: key -> {block id: None}, oldest first (vLLM's BlockHashToBlockMap)
        self.cached: dict[BlockKey, dict[int, None]] = {}
        #: per query of the last batch, in order: the keys its allocation evicted (their last block was reused)
        self.evicted: list[list[BlockKey]] = []
        self._keys: dict[int, list[BlockKey]] = {}

    def keys(self, j: int) -> list[BlockKey]:
        """The keys of query j's full blocks, first block first."""
        end = self.trie.end[j]
        keys = self._keys.get(end)
        if keys is None:
            keys = self._keys[end] = chain_keys(self.trie, end, self.block_size)
        return keys

    def _lookup(self, j: int) -> list[int]:
        """The blocks query j hits now: its longest run of cached first blocks, at most floor((L - 1) / b)."""
        cap = (self.trie.length(j) - 1) // self.block_size
        hit = []
        for key in self.keys(j)[:cap]:
            blocks = self.cached.get(key)
            if not blocks:
                break
            hit.append(next(iter(blocks)))
        return hit

    def cached_prefix(self, j: int) -> int:
        return len(self._lookup(j)) * self.block_size

    def serve(self, batch: Sequence[int]) -> list[int]:
        hits, held = [], []
        self.evicted = []
        for j in batch:
            blocks = self._allocate(j)
            hits.append(len(blocks[1]) * self.block_size)
            held.append(blocks[0])
        for blocks in held:
            self._free(blocks)
        return hits

    def _allocate(self, j: int) -> tuple[list[int], list[int]]:
        """Look query j up and allocate its blocks; return (all its blocks, the hit ones)."""
        b, ref, queue = self.block_size, self.ref, self.queue
        hit = self._lookup(j)
        length = self.trie.length(j)
        new = -(-length // b) - len(hit)
        needed = new + sum(1 for block in hit if ref[block] == 0)
        if needed > len(queue):
            raise InputError(
                f"query {j}: vLLM's allocation needs {needed} free blocks of b = {b} tokens and {len(queue)} are "
                f"free (pool of B / b = {self.budget // b} blocks): the batch does not fit"
            )
        for block in hit:  # touch
            if ref[block] == 0:
                del queue[block]
            ref[block] += 1
        evicted = []
        fresh = []
        for _ in range(new):
            block, _ = queue.popitem(last=False)
            key = self.key[block]
            if key is not None:
                owners = self.cached[key]
                del owners[block]
                if not owners:
                    del self.cached[key]
                    evicted.append(key)
                self.key[block] = None
                self.size -= b
            ref[block] = 1
            fresh.append(block)
        self.evicted.append(evicted)
        blocks = hit + fresh
        for block, key in zip(blocks[len(hit) :], self.keys(j)[len(hit) :]):
            self.key[block] = key
            self.cached.setdefault(key, {})[block] = None
            self.size += b
        return blocks, hit

    def _free(self, blocks: list[int]) -> None:
        """Free a finished request's blocks, tail first: unkeyed ones to the queue's front, keyed ones to its back."""
        front = []
        for block in reversed(blocks):
            self.ref[block] -= 1
            if self.ref[block] == 0:
                if self.key[block] is None:
                    front.append(block)
                else:
                    self.queue[block] = None
        for block in reversed(front):
            self.queue[block] = None
            self.queue.move_to_end(block, last=False)

    def cached_blocks(self) -> set[BlockKey]:
        """Every key with a block cached under it (reachable or not)."""
        return set(self.cached)

    def kept(self) -> dict[int, int]:
        return covered_tokens(self.trie, reachable(self.trie, self.cached, self.block_size))
