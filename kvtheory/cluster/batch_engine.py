"""The batch engine (docs/cluster.md §Batches on a worker): each worker serves its queue one batch after another.

A worker that is free at an instant of the :class:`~kvtheory.cluster.events.EventLoop` with a non-empty
queue takes the longest prefix of its queue of at most ``batch`` requests whose token footprint fits its
budget (a footprint equal to B fits; at block size b > 1, whose blocks fit B / b: ``fits``,
:mod:`kvtheory.cluster.blocks`), serves it through ``policy.serve`` (hits against the cache as it
was before the batch), prefills for sum(a_cached * h + a_miss * (L - h)) and then decodes the batch in
lock step (:meth:`~kvtheory.cluster.cluster.Worker.decode_batch`). With batch 1 the service time of j on
i is exactly Cost_ij = a_cached_i * h_ij + a_miss_i * (|q_j| - h_ij) + O_ij.

Clocks: start = the instant the batch is taken; prefill end = start + the batch's prefill time (the
same for every request of the batch); finish = prefill end + the request's own decode time. Each
request's completion is an event at its finish, and the worker is free again at an event at start +
prefill + the batch's decode time (scheduled after the batch's completions): a request arriving at
that very instant is served in the batch taken then, and a request that finished then has been
reported to the router before it routes the arrival.
"""

from __future__ import annotations

from collections import deque

from kvtheory.cluster.events import Engine, EventLoop
from kvtheory.model.batches import footprint

_FREE = -1  # the tag of a worker's "free again" event; a completion's tag is its request


class BatchWorker:
    __slots__ = ("spec", "policy", "queue", "busy_until", "idle", "busy", "service")

    def __init__(self, spec, policy) -> None:
        self.spec = spec
        self.policy = policy
        self.queue: deque[int] = deque()
        self.busy_until = 0.0
        self.idle = True
        self.busy = 0.0
        self.service: list[float] = []


class BatchEngine(Engine):
    """Batches of at most ``batch`` requests on workers (spec, policy) over the shared ``trie``."""

    def __init__(self, trie, lengths: list[int], outputs: list[int], workers, batch: int, fits=None) -> None:
        super().__init__(len(lengths))
        self.fits = self._token_fits if fits is None else fits
        self.trie = trie
        self.lengths = lengths
        self.outputs = outputs
        self.batch = batch
        self.workers = [BatchWorker(spec, policy) for spec, policy in workers]

    def arrive(self, loop: EventLoop, j: int, i: int, now: float) -> None:
        self.workers[i].queue.append(j)

    def due(self, i: int, tag: int, now: float) -> list[int]:
        if tag == _FREE:
            self.workers[i].idle = True
            return []
        return [tag]

    def begin(self, loop: EventLoop, i: int, now: float) -> None:
        w = self.workers[i]
        if not w.idle or not w.queue:
            return
        group = self._take(w)
        got = w.policy.serve(group)
        spec, lengths, outputs = w.spec, self.lengths, self.outputs
        hits, start, prefill_end, finish = self.hits, self.start, self.prefill_end, self.finish
        prefill = 0.0
        for q, h in zip(group, got):
            hits[q] = h
            start[q] = now
            prefill += spec.prefill(lengths[q], h)
        done, decode = spec.decode_batch([lengths[q] for q in group], [outputs[q] for q in group])
        for q, d in zip(group, done):
            prefill_end[q] = now + prefill
            finish[q] = now + prefill + d
            loop.at(finish[q], i, q)
        took = prefill + decode
        w.service.append(took)
        w.busy += took
        w.busy_until = now + took
        w.idle = False
        loop.at(w.busy_until, i, _FREE)

    def _take(self, w: BatchWorker) -> list[int]:
        """The longest prefix of w's queue of at most ``batch`` requests whose footprint fits w's budget."""
        queue = w.queue
        group = [queue.popleft()]
        if self.batch > 1:
            while queue and len(group) < self.batch:
                if not self.fits(group + [queue[0]], w.spec.budget):
                    break
                group.append(queue.popleft())
        return group

    def _token_fits(self, group: list[int], budget: int) -> bool:
        """Whether the union of ``group``'s token nodes is at most ``budget`` tokens."""
        trie = self.trie
        return footprint(trie, [trie.path(q) for q in group]) <= budget

    def backlog(self, i: int, now: float) -> float:
        """The rest of the current batch plus, for each queued request, its batch-1 cost with its current
        cached prefix."""
        w = self.workers[i]
        remaining = max(w.busy_until - now, 0.0) if not w.idle else 0.0
        policy, spec, lengths, outputs = w.policy, w.spec, self.lengths, self.outputs
        return remaining + sum(spec.cost(lengths[q], policy.cached_prefix(q), outputs[q]) for q in w.queue)

    def state(self) -> dict:
        return {}
