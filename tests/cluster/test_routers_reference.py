"""The reference routers (docs/cluster.md §lbgr, §cache-aware): scripted scenarios where one rule decides
the route, and a cross-check of lbgr against a plain re-implementation driven by explicit timer events."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import EXAMPLE_DEADLINE, token_lists

from kvtheory import Workload
from kvtheory.cluster.cluster import Cluster, Worker
from kvtheory.cluster.routers import RouterView, router_class
from kvtheory.cluster.simulation import simulate
from kvtheory.errors import InputError
from kvtheory.workloads import generate

ONE_CHAR = {"chars_per_token": 1.0}  # characters = tokens: the scripted numbers below are in both


def lbgr(tokens, m=2, **options):
    workload = Workload.from_token_lists(tokens)
    view = RouterView(workload, Cluster.uniform(m, 10_000), [0] * len(workload))
    return router_class("lbgr")(view, options={**ONE_CHAR, **options})


def rls_gain(p: float, forgetting: float = 0.992) -> float:
    return p / (forgetting + p)


# -- lbgr: one rule decides each route -------------------------------------------------------------


def test_lbgr_keeps_the_incumbent_unless_beaten_by_more_than_one_ms():
    router = lbgr([[1, 2, 3], [4, 5], [6]])
    assert router.dispatch(0, 0.0) == 0  # scores 3, 3: the first worker
    assert router.dispatch(1, 0.0) == 1  # 2 + 3 = 5 on worker 0 against 2 + 0 = 2
    assert router.load == [3, 2]
    # 1 + 3 = 4 against 1 + 2 = 3: lower, but not by more than 1 ms, so worker 0 stays
    assert router.dispatch(2, 0.0) == 0


def test_lbgr_charges_a_fully_cached_query_the_one_ms_floor():
    router = lbgr([[1, 2], [1, 2], [1, 2]])
    assert router.dispatch(0, 0.0) == 0
    assert router.load == [2, 0]
    # worker 0 holds all of q1: base max(0, 1) = 1, score 1 + 2 = 3 against 2 + 0 = 2 (not 1 ms better)
    assert router.dispatch(1, 0.0) == 0
    assert router.load == [3, 0]  # + round(1): the floor is charged, not 0


def test_lbgr_score_floor_makes_very_negative_residuals_tie():
    router = lbgr([[1, 2, 3]])
    # learning keeps theta >= 1 (a convex combination of targets >= 1): set it to reach the floor
    router.theta = [-40.0, -50.0]
    assert router.dispatch(0, 0.0) == 0  # both scores max(3 - 40, 1) = max(3 - 50, 1) = 1


def test_lbgr_clips_the_residual_target_at_one_ms():
    router = lbgr([[1, 2, 3], [4, 5, 6]])
    router.dispatch(0, 0.0)
    router.complete(0, 0, 0.002, 0.002, 0.001)  # 2 ms observed against base 3 + load 0: target max(-1, 1)
    gain = rls_gain(1e6)
    assert router.theta[0] == pytest.approx(gain * 1.0, rel=1e-12)
    router.dispatch(1, 1.0)  # base 3, load 0 (released); finishes after 1 s: target 997 ms
    assert router.load == [3, 0]
    router.complete(1, 0, 2.0, 1.0, 0.5)
    p = (1e6 - gain * 1e6) / 0.992
    assert router.theta[0] == pytest.approx(gain + rls_gain(p) * (997.0 - gain), rel=1e-12)
    assert router.state()["updates"] == 2


def test_lbgr_decays_its_load_on_a_fixed_20_ms_grid():
    router = lbgr([list(range(100))], m=1)
    router.dispatch(0, 0.015)
    assert router.load == [100]
    router.advance(0.0199)
    assert router.load == [100]
    router.advance(0.035)  # 20 ms after routing, but only the instant 0.02 has passed: one decay
    assert router.load == [96]  # floor(100 * 31 / 32)
    router.advance(0.039)
    assert router.load == [96]
    router.advance(0.06)  # instants 0.04 and 0.06 (0.06 / 0.02 is 2.9999999999999996 in floats)
    assert router.load == [90]  # 96 -> 93 -> 90
    router.advance(100.0)
    assert router.load == [0]


def test_lbgr_releases_the_decayed_increment_at_completion_floored_at_zero():
    router = lbgr([list(range(100)), list(range(200, 250))], m=1)
    router.dispatch(0, 0.0)
    router.dispatch(1, 0.0)
    assert router.load == [150]
    router.complete(0, 0, 0.05, 0.05, 0.01)
    # grid: 150 -> 145 -> 140; release round(100 * (31/32)^floor(0.05 / 0.02)) = round(93.85) = 94
    assert router.load == [46]
    router.complete(1, 0, 0.05, 0.05, 0.01)
    assert router.load == [0]  # 46 - round(50 * (31/32)^2) = 46 - 47: floored at 0


def test_lbgr_reinserts_at_completion_and_trims_lru_leaves_every_60_s():
    router = lbgr([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4]], m=1, max_tree_chars=4)
    router.dispatch(0, 0.0)
    router.dispatch(1, 1.0)
    router.complete(0, 0, 2.0, 2.0, 1.0)  # q0's path re-inserted: now the more recent of the two
    router.advance(59.9)
    assert router.trees.size == [8]  # over the limit, but the timer has not fired yet
    router.advance(60.0)
    assert router.trees.size == [4] and router.state()["trims"] == 1
    assert router.trees.match_all(2) == [4]  # q1's leaf went, q0's stayed
    assert router.trees.match_all(1) == [0]


def test_lbgr_without_reinsertion_the_older_leaf_would_go():
    router = lbgr([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4]], m=1, max_tree_chars=4)
    router.dispatch(0, 0.0)
    router.dispatch(1, 1.0)
    router.advance(60.0)
    assert router.trees.match_all(2) == [0] and router.trees.match_all(1) == [4]


def test_lbgr_measures_characters():
    router = lbgr([list(range(10))], chars_per_token=4.0, max_tree_chars=20)
    router.dispatch(0, 0.0)
    assert router.load == [40, 0]  # 1 ms per character, 4 per token
    router.advance(60.0)
    assert router.trees.size == [0, 0]  # 40 characters > 20: the only leaf goes


def test_lbgr_options_are_checked():
    for bad in ({"chars_per_token": "0"}, {"max_tree_chars": "0"}, {"trim_interval": "-1"}, {"learn": "full"}):
        with pytest.raises(InputError, match="lbgr"):
            lbgr([[1]], **bad)
    with pytest.raises(InputError, match="no option"):
        lbgr([[1]], rho="0.5")


# -- lbgr against a plain re-implementation -------------------------------------------------------


class PlainLBGR:
    """The reference rules written the obvious way: prefixes as tuples, the timer as explicit events."""

    def __init__(self, m: int, chars: float, forgetting: float = 0.992, p0: float = 1e6):
        self.m, self.chars, self.lam = m, chars, forgetting
        self.held = [set() for _ in range(m)]
        self.load = [0] * m
        self.theta = [0.0] * m
        self.p = [p0] * m
        self.tick = 0
        self.pending = {}

    def timers(self, now: float) -> None:
        while (self.tick + 1) * 20 <= round(now * 1000, 6):  # timer instants in ms, exact for these times
            self.tick += 1
            self.load = [x * 31 // 32 for x in self.load]

    def dispatch(self, j: int, q: tuple, now: float) -> int:
        self.timers(now)
        best = None
        for i in range(self.m):
            cached = max([k for k in range(len(q) + 1) if q[:k] in self.held[i]], default=0)
            base = max(self.chars * (len(q) - cached), 1.0)
            score = max(base + self.load[i] + self.theta[i], 1.0)
            if best is None or score + 1.0 < best[1]:
                best = (i, score, base, self.load[i])
        i, _, base, load = best
        self.load[i] += math.floor(base + 0.5)
        self.held[i].update(q[:k] for k in range(len(q) + 1))
        self.pending[j] = (now, math.floor(base + 0.5), base, load)
        return i

    def complete(self, j: int, i: int, now: float, latency: float) -> None:
        self.timers(now)
        routed, increment, base, load = self.pending.pop(j)
        ticks = math.floor(round((now - routed) * 1000, 6) / 20)
        self.load[i] = max(self.load[i] - math.floor(increment * (31 / 32) ** ticks + 0.5), 0)
        y = max(1000 * latency - (base + load), 1.0)
        gain = self.p[i] / (self.lam + self.p[i])
        self.theta[i] += gain * (y - self.theta[i])
        self.p[i] = (self.p[i] - gain * self.p[i]) / self.lam


@settings(max_examples=30, deadline=EXAMPLE_DEADLINE)
@given(
    token_lists(max_queries=14, max_length=6, alphabet=3),
    st.integers(2, 3),
    st.sampled_from([1.0, 4.0]),
    st.integers(0, 2**16),
)
def test_lbgr_routes_as_a_plain_reimplementation(tokens, m, chars, seed):
    w = Workload.from_token_lists(tokens)
    # arrivals on a 1 ms grid, service times in whole ms: every time below is exact in ms
    arrivals = [0.001 * (7 * j + (seed >> j) % 13) for j in range(len(w))]
    cluster = Cluster(tuple(Worker(0.003, 0.001, 100, 0.002) for _ in range(m)))
    calls, routers = [], []
    cls = router_class("lbgr")

    class Recording(cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            routers.append(self)

        def dispatch(self, j, now):
            i = super().dispatch(j, now)
            calls.append(("dispatch", j, now, i))
            return i

        def complete(self, j, i, now, latency, ttft):
            calls.append(("complete", j, now, i, latency))
            super().complete(j, i, now, latency, ttft)

    Recording.name = "lbgr"
    simulate(w, cluster, Recording, "lru", arrivals=arrivals, output_len=2, router_options={"chars_per_token": chars})
    plain = PlainLBGR(m, chars)
    for call in calls:
        if call[0] == "dispatch":
            _, j, now, i = call
            assert plain.dispatch(j, tuple(tokens[j]), now) == i
        else:
            _, j, now, i, latency = call
            plain.complete(j, i, now, latency)
    assert len(calls) == 2 * len(w)
    assert routers[0].theta == pytest.approx(plain.theta, rel=1e-12) and routers[0].load == plain.load


# -- cache-aware in characters, and its cache path on gsp ------------------------------------------


def test_cache_aware_trims_its_trees_in_characters_on_the_timer():
    workload = Workload.from_token_lists([[1, 2, 3, 4, 5], [6, 7, 8]])
    view = RouterView(workload, Cluster.uniform(2, 100), [0, 0])
    router = router_class("cache-aware")(view, options={"chars_per_token": "4", "max_tree_chars": "12"})
    assert router.dispatch(0, 0.0) == 0
    assert router.dispatch(1, 0.0) == 1  # q1 shares nothing: the smallest tree
    router.dispatch(0, 59.0)
    assert router.trees.size == [5, 3]
    router.dispatch(1, 61.0)  # the 60 s timer fired first: worker 0 held 20 characters > 12
    assert router.trees.size == [0, 3] and router.state()["trims"] == 1


def small_gsp(**params):
    base = {"groups": 6, "prompts": 8, "lengths": [40, 80, 120], "rate": 20.0, "output_len": 4}
    return generate("gsp", {**base, **params}, seed=0)


def test_cache_aware_takes_its_cache_path_on_gsp_prompts_with_the_separator():
    cluster = Cluster(tuple(Worker(1.8e-4, 1.5e-7, 4000, 0.0186, 1.5e-7) for _ in range(4)))
    run = simulate(small_gsp(), cluster, "cache-aware", "lru", seed=0)
    decisions = run.router_state["decisions"]
    # each group's first prompt finds no match (smallest tree); every later one matches
    # (system prompt + separator) / length > 0.5 and follows it (no imbalance at this load)
    assert decisions == {"balance": 0, "match": 6 * 7, "smallest_tree": 6}
    bare = simulate(small_gsp(separator=""), cluster, "cache-aware", "lru", seed=0)
    # without the separator the match rate is exactly 0.5, never above the threshold
    assert bare.router_state["decisions"] == {"balance": 0, "match": 0, "smallest_tree": 48}
    assert run.hit_rate > bare.hit_rate


def test_lbgr_follows_the_cache_on_gsp():
    cluster = Cluster(tuple(Worker(1.8e-4, 1.5e-7, 4000, 0.0186, 1.5e-7) for _ in range(4)))
    w = small_gsp()
    run = simulate(w, cluster, "lbgr", "lru", seed=0)
    spread = simulate(w, cluster, "round-robin", "lru", seed=0)
    assert run.hit_rate > spread.hit_rate


# -- reproduce/table1.py ------------------------------------------------------------------------------


def load_table1():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "reproduce" / "table1.py"
    spec = importlib.util.spec_from_file_location("reproduce_table1", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_table1_script_prints_every_row_with_intervals(capsys):
    import json

    assert load_table1().main(["--quick", "--seeds", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["router"], r["eviction"]) for r in out["rows"]] == [
        ("cache-aware", "lru"),
        ("cache-aware", "rlt"),
        ("lbgr", "lru"),
        ("lbgr", "rlt"),
    ]
    assert [r["model"] for r in out["ratios"]] == ["Llama-3.1-70B", "Llama-3.1-8B"]
    for row in out["rows"] + out["ratios"]:
        for metric in ("latency_p50", "ttft_p50"):
            low, high = row[metric]["ci95"]
            assert low <= row[metric]["mean"] <= high and row[metric]["mean"] > 0
    assert out["rows"][0]["paper"]["latency_p50"] == 26.7


def test_table1_script_rejects_bad_input_in_one_line(capsys):
    table1 = load_table1()
    assert table1.main(["--quick", "--seeds", "1", "--rlt", "nope"]) == 2
    assert table1.main(["--quick", "--seeds", "0"]) == 2
    assert table1.main(["--quick", "--seeds", "1", "--mfu", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("table1: ") for line in err)


@pytest.mark.parametrize("name", ["lbgr-calibrated", "lbgr-full"])
def test_lbgr_calibrated_decays_its_load_estimate_per_grid_instant(name):
    """P~_i decays by rho at each instant k * dt passed since routing: none before 0.02, one at 0.035, three
    at 0.06 (instants 0.02, 0.04, 0.06)."""
    workload = Workload.from_token_lists([list(range(100))])
    view = RouterView(workload, Cluster.uniform(1, 10_000), [0])
    router = router_class(name)(view, options={})
    assert router.dispatch(0, 0.015) == 0
    cost = router.loads(0.0199)[0]
    assert cost > 0
    rho = 31.0 / 32.0
    assert router.loads(0.035)[0] == pytest.approx(cost * rho, rel=1e-12)
    assert router.loads(0.039)[0] == pytest.approx(cost * rho, rel=1e-12)
    assert router.loads(0.06)[0] == pytest.approx(cost * rho**3, rel=1e-12)
