"""Reference vLLM prefix cache: a transliteration of vLLM 0.33.0's data structures, one block at a time.

Written from vLLM's own classes, independently of :mod:`kvtheory.policies.vllm` (which keeps the same rule with
Python's dicts and the trie's nodes): :class:`Block` is ``KVCacheBlock`` (block id, reference count, hash, the
two links of the free list); :class:`FreeBlockQueue` is ``FreeKVCacheBlockQueue``, a doubly linked list between
a fake head and a fake tail (popleft, remove, append_n, prepend_n); ``hash_to_blocks`` is
``BlockHashToBlockMap`` ({hash: {block id: block}}, oldest first); a block's hash is ``hash_block_tokens``
with an exact interning table in place of a hash function: (parent hash, the block's tokens) -> a new int.
:class:`ReferenceVllm` is ``KVCacheManager`` with one full-attention group and the scheduler's step:
``get_computed_blocks`` (at most num_tokens - 1 tokens hit), ``allocate_slots`` (touch the hits, pop the new
blocks, cache the full ones), ``free`` (reverse order); prompts only, each request finishing after its step.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvtheory.errors import InputError
from kvtheory.reference.core import register_reference, token_lists


class Block:
    """vLLM's ``KVCacheBlock``."""

    __slots__ = ("block_id", "ref_cnt", "block_hash", "prev_free_block", "next_free_block")

    def __init__(self, block_id: int) -> None:
        self.block_id = block_id
        self.ref_cnt = 0
        self.block_hash: int | None = None
        self.prev_free_block: Block | None = None
        self.next_free_block: Block | None = None


class FreeBlockQueue:
    """vLLM's ``FreeKVCacheBlockQueue``: the free blocks as a doubly linked list, front = evicted first."""

    def __init__(self, blocks: list[Block]) -> None:
        self.head, self.tail = Block(-1), Block(-1)
        self.head.next_free_block, self.tail.prev_free_block = self.tail, self.head
        self.num_free_blocks = 0
        self.append_n(blocks)

    def popleft(self) -> Block:
        block = self.head.next_free_block
        assert block is not self.tail, "no free block"
        self.remove(block)
        return block

    def remove(self, block: Block) -> None:
        block.prev_free_block.next_free_block = block.next_free_block
        block.next_free_block.prev_free_block = block.prev_free_block
        block.prev_free_block = block.next_free_block = None
        self.num_free_blocks -= 1

    def append_n(self, blocks: list[Block]) -> None:
        for block in blocks:
            last = self.tail.prev_free_block
            last.next_free_block, block.prev_free_block = block, last
            block.next_free_block, self.tail.prev_free_block = self.tail, block
            self.num_free_blocks += 1

    def prepend_n(self, blocks: list[Block]) -> None:
        for block in reversed(blocks):
            first = self.head.next_free_block
            self.head.next_free_block, block.prev_free_block = block, self.head
            block.next_free_block, first.prev_free_block = first, block
            self.num_free_blocks += 1

    def block_ids(self) -> list[int]:
        """The free block ids, front first."""
        ids, block = [], self.head.next_free_block
        while block is not self.tail:
            ids.append(block.block_id)
            block = block.next_free_block
        return ids


@register_reference
class ReferenceVllm:
    """vLLM's block pool and KV-cache manager over ``queries``, a pool of ``budget / block_size`` usable blocks
    (and the null block). ``serve(batch)`` is one scheduler step: every request looked up and allocated in
    order, then every one freed in order; it returns each request's hits in tokens."""

    name = "vllm"
    randomized = False

    def __init__(self, queries, budget: int, *, seed: int | None = None, block_size: int = 1) -> None:
        if budget <= 0:
            raise ValueError(f"budget must be positive, got {budget}")
        self.queries = token_lists(queries)
        self.block_size = block_size
        self.blocks = [Block(i) for i in range(budget // block_size + 1)]
        self.free_block_queue = FreeBlockQueue(self.blocks)
        self.null_block = self.free_block_queue.popleft()
        self.hash_to_blocks: dict[int, dict[int, Block]] = {}
        self.interned: dict[tuple, int] = {}
        self.req_to_blocks: dict[int, list[Block]] = {}

    # -- hashing (kv_cache_utils.hash_block_tokens and the request's block hashes) ----------------------------
    def block_hashes(self, tokens: Sequence[int]) -> list[int]:
        """The chained hashes of the full blocks of ``tokens``."""
        hashes, parent = [], None
        b = self.block_size
        for start in range(0, len(tokens) - b + 1, b):
            parent = self.interned.setdefault((parent, tuple(tokens[start : start + b])), len(self.interned))
            hashes.append(parent)
        return hashes

    # -- KVCacheManager ---------------------------------------------------------------------------------------
    def get_computed_blocks(self, tokens: Sequence[int]) -> list[Block]:
        max_cache_hit_length = len(tokens) - 1
        computed = []
        for block_hash in self.block_hashes(tokens)[: max_cache_hit_length // self.block_size]:
            cached = self.hash_to_blocks.get(block_hash)
            if not cached:
                break
            computed.append(next(iter(cached.values())))
        return computed

    def allocate_slots(self, request: int, tokens: Sequence[int], computed: list[Block]) -> None:
        b = self.block_size
        num_required = -(-len(tokens) // b)
        num_new = num_required - len(computed)
        num_evictable = sum(1 for block in computed if block.ref_cnt == 0)
        if num_new + num_evictable > self.free_block_queue.num_free_blocks:
            raise InputError(f"request {request} of the batch does not fit in the block pool")
        for block in computed:  # BlockPool.touch
            if block.ref_cnt == 0:
                self.free_block_queue.remove(block)
            block.ref_cnt += 1
        new_blocks = []
        for _ in range(num_new):  # BlockPool.get_new_blocks
            block = self.free_block_queue.popleft()
            self.maybe_evict_cached_block(block)
            block.ref_cnt += 1
            new_blocks.append(block)
        req_blocks = computed + new_blocks
        self.req_to_blocks[request] = req_blocks
        hashes = self.block_hashes(tokens)
        for i in range(len(computed), len(hashes)):  # BlockPool.cache_full_blocks
            req_blocks[i].block_hash = hashes[i]
            self.hash_to_blocks.setdefault(hashes[i], {})[req_blocks[i].block_id] = req_blocks[i]

    def maybe_evict_cached_block(self, block: Block) -> None:
        if block.block_hash is None:
            return
        cached = self.hash_to_blocks[block.block_hash]
        del cached[block.block_id]
        if not cached:
            del self.hash_to_blocks[block.block_hash]
        block.block_hash = None

    def free(self, request: int) -> None:
        evict_first, evict_last = [], []  # BlockPool.free_blocks, the request's blocks in reverse order
        for block in reversed(self.req_to_blocks.pop(request)):
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                (evict_first if block.block_hash is None else evict_last).append(block)
        self.free_block_queue.prepend_n(evict_first)
        self.free_block_queue.append_n(evict_last)

    # -- the reference interface --------------------------------------------------------------------------------
    def serve(self, batch: Sequence[int]) -> list[int]:
        hits = []
        for request, j in enumerate(batch):
            computed = self.get_computed_blocks(self.queries[j])
            hits.append(len(computed) * self.block_size)
            self.allocate_slots(request, self.queries[j], computed)
        for request in range(len(batch)):
            self.free(request)
        return hits

    @property
    def size(self) -> int:
        """Tokens of the blocks that hold a hash, duplicates counted."""
        return self.block_size * sum(1 for block in self.blocks if block.block_hash is not None)

    def cached_prefix(self, j: int) -> int:
        return len(self.get_computed_blocks(self.queries[j])) * self.block_size

    def cached_blocks(self, j: int) -> list[bool]:
        """Whether each full block of query j has a block cached under its hash."""
        return [block_hash in self.hash_to_blocks for block_hash in self.block_hashes(self.queries[j])]

    def kept(self, trie) -> dict[int, int]:
        """The reachable cache in ``trie``'s per-edge form: each query's longest run of cached first blocks."""
        kept: dict[int, int] = {}
        for j in range(len(self.queries)):
            flags = self.cached_blocks(j)
            run = flags.index(False) if False in flags else len(flags)
            tokens = run * self.block_size
            for u in trie.path(j):
                top = trie.depth[trie.parent[u]]
                count = min(max(tokens - top, 0), trie.edge_len[u])
                if count:
                    kept[u] = max(kept.get(u, 0), count)
        return kept
