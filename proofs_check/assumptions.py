"""Named assumptions: predicates over an :class:`~proofs_check.instance.Instance`.

Each returns ``(holds, detail)``; the detail says by how much a failing assumption fails, in the symbols
of docs/model.md §Symbols (``beta*L_max = 9000 > B = 8192``). Assumptions about the policy (deterministic, online) are
stated in each claim's text and enforced by which policies the claim is run on, not by predicates here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvtheory.errors import InputError
from proofs_check.instance import Instance


@dataclass(frozen=True)
class Assumption:
    name: str
    text: str
    predicate: Callable[[Instance], tuple[bool, str]]

    def __call__(self, instance: Instance) -> tuple[bool, str]:
        return self.predicate(instance)


ASSUMPTIONS: dict[str, Assumption] = {}
ALIASES: dict[str, str] = {}


def _assumption(name: str, text: str, *aliases: str):
    def decorate(predicate):
        ASSUMPTIONS[name] = Assumption(name, text, predicate)
        for alias in aliases:
            ALIASES[alias] = name
        return predicate

    return decorate


def get_assumption(name: str) -> Assumption:
    key = ALIASES.get(name.replace(" ", ""), name)
    if key not in ASSUMPTIONS:
        raise InputError(f"unknown assumption {name!r}; known: {', '.join(ASSUMPTIONS)}")
    return ASSUMPTIONS[key]


@_assumption("queries-fit", "every query fits, L_max <= B, and so does every batch's footprint (the model's rule)")
def _queries_fit(inst: Instance):
    if inst.max_length > inst.budget:
        return False, f"L_max = {inst.max_length} > B = {inst.budget}"
    if inst.batch > 1 and inst.workers == 1:
        worst = max(range(len(inst.batch_footprints)), key=inst.batch_footprints.__getitem__)
        if inst.batch_footprints[worst] > inst.budget:
            return False, f"batch {worst} needs {inst.batch_footprints[worst]} token nodes > B = {inst.budget}"
        return True, f"L_max = {inst.max_length} <= B = {inst.budget}, batch footprints <= {inst.max_footprint}"
    return True, f"L_max = {inst.max_length} <= B = {inst.budget}"


@_assumption("single-worker", "one worker (M = 1)")
def _single_worker(inst: Instance):
    return inst.workers == 1, f"M = {inst.workers}"


@_assumption("multi-worker", "M >= 2 identical workers, each of budget B")
def _multi_worker(inst: Instance):
    return inst.workers >= 2, f"M = {inst.workers}"


@_assumption("batch-1", "batch size beta = 1", "beta=1")
def _batch_one(inst: Instance):
    return inst.batch == 1, f"beta = {inst.batch}"


@_assumption("batched", "batch size beta >= 2", "beta>=2")
def _batched(inst: Instance):
    return inst.batch >= 2, f"beta = {inst.batch}"


@_assumption("batch-fits", "beta*L_max <= B (the paper's Theorem 5), i.e. k = B - beta*L_max + 1 >= 1", "beta*L_max<=B")
def _batch_fits(inst: Instance):
    need = inst.batch * inst.max_length
    sign = "<=" if need <= inst.budget else ">"
    return need <= inst.budget, f"beta*L_max = {need} {sign} B = {inst.budget}"


@_assumption("distinct-queries", "the queries of each batch are pairwise distinct", "distinct")
def _distinct(inst: Instance):
    repeats = inst.repeats_in_batches()
    if not repeats:
        return True, "no query repeats inside a batch"
    number, first, again = repeats[0]
    more = f" (and {len(repeats) - 1} more)" if len(repeats) > 1 else ""
    return False, f"batch {number} repeats query {first} as query {again}{more}"


@_assumption("uniform-cost", "a_cached = a_miss (a hit saves nothing: makespan scheduling)", "a_cached=a_miss")
def _uniform_cost(inst: Instance):
    equal = inst.a_cached == inst.a_miss
    return equal, f"a_cached = {inst.a_cached} {'=' if equal else '!='} a_miss = {inst.a_miss}"


@_assumption("hit-discount", "0 < a_cached <= a_miss (a hit never costs more than a miss)")
def _hit_discount(inst: Instance):
    ok = 0 < inst.a_cached <= inst.a_miss
    return ok, f"a_cached = {inst.a_cached}, a_miss = {inst.a_miss}"


@_assumption("depth-1", "every query is one token (classic paging with k = B pages)")
def _depth_one(inst: Instance):
    return inst.max_length == 1, f"L_max = {inst.max_length}"


def _common_prefix(workload) -> int:
    first = workload[0].tokens
    common = first.size
    for query in workload:
        m = min(common, query.tokens.size)
        diff = (first[:m] != query.tokens[:m]).nonzero()[0]
        common = int(diff[0]) if diff.size else m
    return common


@_assumption("star", "a shared prefix of L_max - 1 tokens with k + 1 one-token leaves (k = B - L_max + 1)")
def _star(inst: Instance):
    w = inst.workload
    lengths = {q.length for q in w}
    if len(lengths) != 1:
        return False, f"query lengths differ ({min(lengths)}..{max(lengths)})"
    (length,) = lengths
    common = _common_prefix(w)
    if common < length - 1:
        return False, f"shared prefix {common} < L_max - 1 = {length - 1}"
    leaves = len({int(q.tokens[-1]) for q in w})
    want = inst.k + 1
    return leaves == want, f"{leaves} leaves {'=' if leaves == want else '!='} k + 1 = {want}"


@_assumption("hot-prefix", "every query starts with one shared prefix of at least half the shortest query")
def _hot_prefix(inst: Instance):
    common = _common_prefix(inst.workload)
    shortest = min(q.length for q in inst.workload)
    ok = 2 * common >= shortest
    return ok, f"shared prefix {common} {'>=' if ok else '<'} L_min/2 = {shortest / 2:g}"


def prefix_sharing(workload) -> float:
    """sum_j h*_j / sum_j |q_j| with h*_j the longest prefix q_j shares with an earlier query."""
    trie = workload.trie
    seen = [False] * trie.n_nodes
    shared = 0
    for j in range(len(workload)):
        path = trie.path(j)
        shared += max((trie.depth[v] for v in path if seen[v]), default=0)
        for v in path:
            seen[v] = True
    return shared / workload.total_tokens


@_assumption("grouped-prefixes", "high sharing: >= M prefix groups and >= 50% of all tokens repeat an earlier prefix")
def _grouped(inst: Instance):
    groups = len({int(q.tokens[0]) for q in inst.workload})
    share = prefix_sharing(inst.workload)
    ok = groups >= inst.workers and share >= 0.5
    return ok, f"{groups} groups (M = {inst.workers}), prefix sharing {share:.0%} {'>=' if share >= 0.5 else '<'} 50%"


def evaluate_assumptions(names, instance: Instance) -> list[tuple[str, bool, str]]:
    """``(name, holds, detail)`` for each named assumption on ``instance``."""
    return [(name, *ASSUMPTIONS[name](instance)) for name in names]
