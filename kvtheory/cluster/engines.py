"""Continuous batching on the cluster's workers (docs/cluster.md §Engines), the way SGLang's scheduler runs.

A worker keeps a **running batch** of admitted requests and repeats iterations. At each iteration
boundary it first tries to form a prefill batch (SGLang's ``PrefillAdder``, first come first served,
prefill before decode):

1. the request whose prefill was cut at the last iteration (if any) continues with up to
   ``chunk_size`` tokens (SGLang's ``chunked_prefill_size``);
2. then the waiting requests in arrival order, while chunk tokens are left: the head of the queue is
   admitted if its prompt fits next to the prompts of the requests already admitted and not finished
   (the union of their token nodes at most B), else it and everything behind it waits; an admitted
   request with h hits computes its L - h missed tokens in this iteration if they fit in the chunk
   tokens left, else as many as are left (it becomes the cut request and no one else is admitted).

If that batch is empty and requests are decoding, a decode iteration generates one token for each. If
nothing is admitted or decoding, the worker is idle until a request arrives.

Hits. A request's hits h are counted **at admission, against the cache then**: the admitted requests of
one iteration form one batch of ``policy.serve`` (hits against the cache before the batch). One
correction: SGLang inserts a cut prompt into its tree chunk by chunk, while ``serve`` makes the whole
path resident at once; a request admitted while another's prefill is cut gets at most the part of that
prompt computed so far, if it shares more of it (``early_hit_tokens`` counts the hits so taken away).

Locks. An admitted request holds its prompt's token nodes until it finishes (SGLang locks them: they are
never evicted while it runs). The policy interface protects only the paths of the batch being served,
so when an admission must evict (the cache would overflow B), the running requests are served with it
(their hits are ignored): eviction then skips their paths exactly. The price is a side effect on the
policy's bookkeeping: the running requests count as accessed again (L-LRU refreshes their nodes,
RLT marks them and keeps their marks through a new phase, LFU counts them once more);
``protected_serves`` counts these serves. When a request finishes, its path is served once more (hits
ignored, nothing evicted): SGLang's ``cache_finished_req`` inserting the finished request. Output tokens'
KV is not counted against B, as in the batch engine (B counts prompt token nodes, as in the model);
``max_running`` bounds what that leaves out: at most max_running * max o_j tokens per worker.

Times (:class:`kvtheory.cluster.cluster.Worker`). A prefill iteration lasts the sum over its chunks of
a_cached * (hits, first chunk only) + a_miss * (tokens computed): the model's prefill cost, split by
token. A decode iteration of n requests whose contexts (prompt + tokens generated) sum to C lasts
max(n * decode_compute, decode_base + decode_per_context * C). TTFT = end of the iteration holding the
prompt's last chunk - arrival; latency = end of the iteration generating the last output token -
arrival. A request alone on a worker therefore takes a_cached h + a_miss (L - h) to its first token and
O_ij more to its last, the batch engine's Cost_ij: the same functions compute both, so at low load the two
engines agree to the bit when no prompt is cut (tested).

Timing rules at their boundaries (tests/cluster/test_engines.py pins each). Iterations begin and end at instants
of the :class:`~kvtheory.cluster.events.EventLoop`, whose same-instant ordering rule puts an instant's
arrivals before its starts: a request arriving exactly when an iteration ends is considered for the
iteration that begins then; one arriving during a prefill iteration waits for its end. Decode iterations
up to the first running request's last token form one decode run, summed in closed form: a run started
at t of n sequences whose contexts sum to C has its boundaries at t + decode_steps(n, C, s), s = 1, 2, ...
A request arriving at a during a decode run that heads the waiting queue and fits next to the admitted
prompts (a union of exactly B fits) ends the run at the first boundary at or after a, the least s with
t + decode_steps(n, C, s) >= a: on a boundary it is admitted at a itself. Any other arrival leaves the
run alone. A prompt whose missed tokens equal the chunk tokens left is computed whole in that iteration
(not cut), and no one else is admitted to it.
"""

from __future__ import annotations

from collections import deque

from kvtheory.cluster.events import Engine, EventLoop
from kvtheory.policies.base import union_misses

#: the worker engines: batch-1 (or batch-beta) FIFO, or SGLang-style continuous batching
ENGINES = ("batch", "continuous")
#: SGLang's default chunked_prefill_size on GPUs of at least 25 GB (docs/cluster.md §Engines)
DEFAULT_CHUNK_SIZE = 8192

_IDLE, _PREFILL, _DECODE = 0, 1, 2


class ContinuousWorker:
    """The scheduler state of one worker: waiting queue, running batch, locks, current iteration."""

    def __init__(self, index: int, spec, policy, engine: ContinuousEngine) -> None:
        self.index = index
        self.spec = spec
        self.policy = policy
        self.engine = engine
        self.waiting: deque[int] = deque()
        self.admitted: list[int] = []  # locked requests, in admission order (prefilling or decoding)
        self.decoding: list[int] = []
        self.cut: int | None = None  # the request whose prefill continues at the next iteration
        self.cut_left = 0  # its tokens still to compute
        self.cut_depth = 0  # its prompt tokens resident and computed before the current iteration
        self.refs: dict[int, int] = {}  # trie node -> admitted requests holding it
        self.locked_tokens = 0
        self.kind = _IDLE
        self.started = 0.0
        self.end = 0.0
        self.version = 0
        self.prefilled: list[tuple[int, bool]] = []  # (request, its last chunk) of the current prefill
        self.run = (0, 0, 0)  # (sequences, contexts, steps) of the current decode run
        self.busy = 0.0
        self.service: list[float] = []
        self.max_running = 0

    # -- locks (the union of the admitted prompts' token nodes) -------------------------------------
    def fits(self, j: int) -> bool:
        """Whether j's prompt fits next to the admitted ones: |union of their token nodes| <= B."""
        refs, edge_len = self.refs, self.engine.trie.edge_len
        extra = sum(edge_len[v] for v in self.engine.trie.path(j) if v not in refs)
        return self.locked_tokens + extra <= self.spec.budget

    def _lock(self, j: int) -> None:
        refs, edge_len = self.refs, self.engine.trie.edge_len
        for v in self.engine.trie.path(j):
            held = refs.get(v, 0)
            if not held:
                self.locked_tokens += edge_len[v]
            refs[v] = held + 1
        self.admitted.append(j)

    def _unlock(self, j: int) -> None:
        refs, edge_len = self.refs, self.engine.trie.edge_len
        for v in self.engine.trie.path(j):
            held = refs[v] - 1
            if held:
                refs[v] = held
            else:
                del refs[v]
                self.locked_tokens -= edge_len[v]
        self.admitted.remove(j)

    # -- iterations ---------------------------------------------------------------------------------
    def start(self, now: float) -> bool:
        """Begin the next iteration at ``now`` (prefill if any can be formed, else decode); False if idle."""
        if self._start_prefill(now):
            return True
        if not self.decoding:
            return False
        e = self.engine
        sequences = len(self.decoding)
        contexts = sum(e.lengths[j] + e.generated[j] for j in self.decoding)
        steps = min(e.outputs[j] - e.generated[j] for j in self.decoding)
        self.run = (sequences, contexts, steps)
        self._begin(_DECODE, now, self.spec.decode_steps(sequences, contexts, steps))
        e.decode_iterations += steps
        return True

    def _start_prefill(self, now: float) -> bool:
        e, spec = self.engine, self.spec
        left = e.chunk_size
        took = 0.0
        prefilled: list[tuple[int, bool]] = []
        earlier_cut, depth = self.cut, self.cut_depth
        if earlier_cut is not None:
            take = min(self.cut_left, left)
            took += spec.prefill_chunk(0, take)
            left -= take
            self.cut_left -= take
            self.cut_depth += take
            if not self.cut_left:
                self.cut = None
            prefilled.append((earlier_cut, not self.cut_left))
        new: list[int] = []
        matched: list[int] = []
        while self.waiting and left > 0 and self.fits(self.waiting[0]):
            j = self.waiting.popleft()
            h = self.policy.cached_prefix(j)
            matched.append(h)
            if earlier_cut is not None and self._shared(earlier_cut, j) > depth and h > depth:
                e.early_hit_tokens += h - depth
                h = depth
            e.hits[j] = h
            e.start[j] = now
            self._lock(j)
            new.append(j)
            missed = e.lengths[j] - h
            take = min(missed, left)
            took += spec.prefill_chunk(h, take)
            left -= take
            if take < missed:
                self.cut, self.cut_left, self.cut_depth = j, missed - take, h + take
            prefilled.append((j, take == missed))
        if not prefilled:
            return False
        if new:
            self._serve(new, matched)
        self.prefilled = prefilled
        self._begin(_PREFILL, now, took)
        e.prefill_iterations += 1
        return True

    def _shared(self, a: int, b: int) -> int:
        """Tokens of the longest common prefix of queries a and b (their paths share whole edges)."""
        trie = self.engine.trie
        common = 0
        for u, v in zip(trie.path(a), trie.path(b)):
            if u != v:
                break
            common = trie.depth[u]
        return common

    def _serve(self, new: list[int], matched: list[int]) -> None:
        """Serve the admitted requests as one batch; with the running ones too if an eviction is due."""
        policy, trie = self.policy, self.engine.trie
        missing = union_misses(trie, [trie.path(j) for j in new], matched)
        running = self.admitted[: len(self.admitted) - len(new)]
        if running and policy.size + missing > policy.budget:
            policy.serve(new + running)
            self.engine.protected_serves += 1
        else:
            policy.serve(new)

    def _begin(self, kind: int, now: float, duration: float) -> None:
        self.kind = kind
        self.started = now
        self.end = now + duration
        self.version += 1
        self.max_running = max(self.max_running, len(self.admitted))

    def cut_decode(self, now: float) -> bool:
        """A request that can be admitted arrived at ``now`` during a decode run: end the run at the first
        iteration boundary at or after ``now`` (a boundary at ``now`` itself ends it at ``now``: its event
        is processed in a further round of this instant). True if the run's end moved (a new event is due)."""
        sequences, contexts, steps = self.run
        low, high = 1, steps  # the first s with started + decode_steps(s) >= now lies in [low, high]
        while low < high:
            mid = (low + high) // 2
            if self.started + self.spec.decode_steps(sequences, contexts, mid) >= now:
                high = mid
            else:
                low = mid + 1
        if low == steps:
            return False
        self.engine.decode_iterations -= steps - low
        self.run = (sequences, contexts, low)
        self.end = self.started + self.spec.decode_steps(sequences, contexts, low)
        self.version += 1
        return True

    def finish(self, now: float) -> list[int]:
        """End the current iteration at ``now``; return the requests that finished, in admission order."""
        e = self.engine
        took = float(now - self.started)
        self.busy += took
        self.service.append(took)
        done: list[int] = []
        if self.kind == _PREFILL:
            for j, last in self.prefilled:
                if last:
                    e.prefill_end[j] = now
                    (self.decoding if e.outputs[j] else done).append(j)
        else:
            steps = self.run[2]
            still = []
            for j in self.decoding:
                e.generated[j] += steps
                (still if e.generated[j] < e.outputs[j] else done).append(j)
            self.decoding = still
        self.kind = _IDLE
        for j in done:
            self._complete(j, now)
        return done

    def _complete(self, j: int, now: float) -> None:
        e = self.engine
        e.finish[j] = now
        self._unlock(j)
        if self.policy.cached_prefix(j) != e.lengths[j]:
            raise RuntimeError(f"query {j} lost cached tokens while it ran on worker {self.index}")
        self.policy.serve([j])

    def backlog(self, now: float) -> float:
        """What an oracle router sees: the rest of the current iteration plus, for each waiting request,
        its batch-1 cost with its current cached prefix."""
        e, spec, policy = self.engine, self.spec, self.policy
        remaining = max(self.end - now, 0.0) if self.kind != _IDLE else 0.0
        return remaining + sum(spec.cost(e.lengths[q], policy.cached_prefix(q), e.outputs[q]) for q in self.waiting)


class ContinuousEngine(Engine):
    """Continuous batching on workers (spec, policy) over the shared ``trie``: a strategy over the
    :class:`~kvtheory.cluster.events.EventLoop`, whose same-instant ordering rule holds as in the batch
    engine. A worker's event is the end of its current iteration (tagged with the worker's ``version``,
    so an iteration whose end moved leaves a cancelled event behind); a worker that is idle at an instant
    with requests waiting starts its next iteration then.
    """

    def __init__(self, trie, lengths: list[int], outputs: list[int], workers, chunk_size: int) -> None:
        super().__init__(len(lengths))
        self.chunk_size = chunk_size
        self.trie = trie
        self.lengths = lengths
        self.outputs = outputs
        self.generated = [0] * len(lengths)
        self.prefill_iterations = 0
        self.decode_iterations = 0
        self.protected_serves = 0
        self.early_hit_tokens = 0
        self.workers = [ContinuousWorker(i, spec, policy, self) for i, (spec, policy) in enumerate(workers)]

    def arrive(self, loop: EventLoop, j: int, i: int, now: float) -> None:
        """j waits on worker i; if it heads the queue and could be admitted, a decode run ends early."""
        w = self.workers[i]
        w.waiting.append(j)
        if w.kind == _DECODE and len(w.waiting) == 1 and w.fits(j) and w.cut_decode(now):
            loop.at(w.end, i, w.version)

    def due(self, i: int, tag: int, now: float) -> list[int] | None:
        w = self.workers[i]
        if tag != w.version:
            return None
        return w.finish(now)

    def begin(self, loop: EventLoop, i: int, now: float) -> None:
        w = self.workers[i]
        if w.kind == _IDLE and w.start(now):
            loop.at(w.end, i, w.version)

    def backlog(self, i: int, now: float) -> float:
        return self.workers[i].backlog(now)

    def state(self) -> dict:
        """Counters of the run (docs/cluster.md §Engines)."""
        return {
            "chunk_size": self.chunk_size,
            "prefill_iterations": self.prefill_iterations,
            "decode_iterations": self.decode_iterations,
            "max_running": [w.max_running for w in self.workers],
            "protected_serves": self.protected_serves,
            "early_hit_tokens": self.early_hit_tokens,
        }
