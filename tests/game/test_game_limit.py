"""``game limit`` (docs/game.md §The asymptotic ratio), ``game best --deterministic``
(docs/game.md §The best deterministic ratio) and the ``kvtheory game`` command line: the textbook ratios of
classic paging, every certificate cycle re-checked by serving it plainly (the policy's own engine, FIF) and
reading off the misses it adds per lap, and both optimal strategies of the deterministic game re-played
against every reply."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import strategies as st

from kvtheory.cli import main
from kvtheory.errors import InputError
from kvtheory.game import best_deterministic, best_randomized, check_strategies, limit, worst
from kvtheory.model.workload import Workload
from kvtheory.optimum.fif import run_fif
from kvtheory.simulate import run_policy


def lap_costs(queries, budget: int, policy: str, prefix, cycle, laps: int = 3) -> tuple[int, int]:
    """(ALG's, OPT's) misses added by the last lap of prefix + cycle * laps, both served plainly."""

    def costs(m: int) -> tuple[int, int]:
        w = Workload.from_token_lists([queries[j] for j in list(prefix) + list(cycle) * m])
        return run_policy(w, budget, policy, backend="python").misses, run_fif(w, budget).misses

    (a1, o1), (a2, o2) = costs(laps - 1), costs(laps)
    return a2 - a1, o2 - o1


@pytest.mark.parametrize("k, policies", [(2, ["lru", "fifo", "token-lru"]), (3, ["lru"])])
def test_classic_paging_lru_and_fifo_have_asymptotic_ratio_k(k, policies):
    """n = k + 1 pages, B = k: LRU and FIFO are k-competitive and the cycle over k + 1 pages forces k
    (Sleator and Tarjan), so the maximum-ratio cycle is exactly k."""
    pages = [[i] for i in range(k + 1)]
    for policy in policies:
        found = limit(Workload.from_token_lists(pages), k, policy)
        assert found.ratio == k
        assert lap_costs(pages, k, policy, found.prefix, found.cycle) == (found.cycle_alg, found.cycle_opt)


@pytest.mark.parametrize("policy", ["lru", "token-lru", "fifo"])
def test_the_certificate_cycle_adds_what_it_claims_per_lap(policy):
    queries, budget = [[0, 1], [0, 2], [3]], 3
    found = limit(Workload.from_token_lists(queries), budget, policy)
    assert found.ratio == Fraction(found.cycle_alg, found.cycle_opt) and found.cycle_opt > 0
    assert lap_costs(queries, budget, policy, found.prefix, found.cycle) == (found.cycle_alg, found.cycle_opt)


def test_limit_refuses_a_randomized_policy_and_an_unbounded_graph():
    pages = Workload.from_token_lists([[0], [1], [2]])
    with pytest.raises(InputError, match="randomized"):
        limit(pages, 2, "rlt")
    with pytest.raises(InputError, match=r"needs more than 50 nodes"):
        limit(pages, 2, "lfu", state_limit=50)  # request counts grow without bound


@pytest.mark.parametrize("horizon", [4, 5, 6, 8])
def test_best_deterministic_on_classic_paging_meets_the_textbook_bounds(horizon):
    """n = 3 pages, B = k = 2. Lower bound: the adversary that always requests the page the algorithm lacks
    makes it miss all H requests, while OPT misses at most k + ceil((H - k) / k) on any sequence over k + 1
    pages (FIF misses at most once in k requests after the first k). Upper bound: every built-in deterministic
    policy's exact worst case. At H = 6 and 8 the two meet: 3/2 and 8/5."""
    k = 2
    pages = Workload.from_token_lists([[i] for i in range(k + 1)])
    found = best_deterministic(pages, k, horizon)
    lower = Fraction(horizon, k + -(-(horizon - k) // k))
    upper = min(worst(pages, k, policy, horizon).ratio for policy in ("lru", "fifo", "lfu"))
    assert lower <= found.ratio <= upper
    if horizon in (6, 8):
        assert found.ratio == lower == upper
    assert check_strategies(pages, k, found) == (found.ratio, found.ratio)


def test_best_deterministic_on_a_tree_is_certified_and_below_every_policy():
    queries, budget, horizon = [[0, 1], [0, 2], [3]], 3, 5
    w = Workload.from_token_lists(queries)
    found = best_deterministic(w, budget, horizon)
    assert check_strategies(w, budget, found) == (found.ratio, found.ratio)
    assert all(found.ratio <= worst(w, budget, p, horizon).ratio for p in ("lru", "token-lru", "fifo", "lfu"))
    assert found.ratio > 1


def test_a_wrong_strategy_fails_its_check():
    pages = Workload.from_token_lists([[0], [1], [2]])
    found = best_deterministic(pages, 2, 6)
    # the algorithm that always keeps the last allowed cache (evicts by a fixed page order), in place of the
    # optimal one: it keeps the higher pages, so 0 1 2 0 1 0 makes it miss 6 times where OPT misses 3
    from kvtheory.game.best import _Game
    from kvtheory.game.universe import Universe

    game = _Game(Universe(pages, 2), 6)
    naive = {key: game.moves(key[1], key[4])[1][-1] for key in found.algorithm}
    changed = type(found)(found.budget, found.horizon, found.ratio, found.states, naive, found.requester)
    upper, lower = check_strategies(pages, 2, changed)
    assert lower == found.ratio and upper == 2 > found.ratio


@pytest.mark.parametrize("horizon", [4, 6])
def test_best_randomized_on_classic_paging_is_exact_and_below_every_algorithm(horizon):
    """n = 3 pages, B = k = 2: the LP's two certificates meet, and the value is at most what RLT (randomized
    marking here), random-leaf and the best deterministic algorithm reach. At H = 6 it is 17/14, as an
    independent brute force finds, below marking's 5/4: the best randomized algorithm over a finite horizon
    is not marking."""
    k = 2
    pages = Workload.from_token_lists([[i] for i in range(k + 1)])
    found = best_randomized(pages, k, horizon)
    assert found.exact and found.to_dict()["ratio"] == f"{found.upper.numerator}/{found.upper.denominator}"
    others = [worst(pages, k, p, horizon).ratio for p in ("rlt", "random-leaf")]
    assert 1 < found.upper <= min(*others, best_deterministic(pages, k, horizon).ratio)
    if horizon == 6:
        assert found.upper == Fraction(17, 14) < worst(pages, k, "rlt", 6).ratio == Fraction(5, 4)


def test_best_randomized_on_a_tree_brackets_and_bounds():
    queries, budget, horizon = [[0, 1], [0, 2], [3]], 3, 4
    w = Workload.from_token_lists(queries)
    found = best_randomized(w, budget, horizon)
    assert found.lower <= found.upper and found.lower <= Fraction(found.lp).limit_denominator(10**6) + Fraction(
        1, 10**6
    )
    assert found.upper <= min(worst(w, budget, "rlt", horizon).ratio, best_deterministic(w, budget, horizon).ratio)


def test_the_randomized_certificates_bound_from_the_right_sides():
    """Any strategy's exact worst case is an upper bound and any distribution's best reply a lower bound: a
    deterministic strategy (all weight on one choice) and a uniform adversary land on their sides of the value."""
    from kvtheory.game.best import _Game
    from kvtheory.game.randomized import _adversary_bound, _optima, _strategy_bound
    from kvtheory.game.universe import Universe

    pages = Workload.from_token_lists([[0], [1], [2]])
    universe, horizon = Universe(pages, 2), 5
    game = _Game(universe, horizon)
    value = best_randomized(pages, 2, horizon).upper
    ys, x = [], [0.0]
    frontier = [((), 0)]
    for _ in range(horizon):
        grown = []
        for h, c in frontier:
            for r in range(3):
                keep = game.moves(c, r)[1]
                for i, c2 in enumerate(keep):
                    ys.append((h, c, r, c2))
                    x.append(1.0 if i == 0 else 0.0)
                    if i == 0:
                        grown.append((h + (r,), c2))
        frontier = grown
    assert _strategy_bound(universe, game, horizon, ys, x, 1000) >= value
    sequences = sorted({h + (r,) for h, _, r, _ in ys}, key=lambda s: (len(s), s))
    opt = _optima(universe, sequences)
    uniform = [1.0 / opt[s] for s in sequences]
    assert _adversary_bound(universe, game, horizon, sequences, opt, uniform, 1000) <= value


@pytest.fixture
def paging_file(tmp_path):
    path = tmp_path / "paging.jsonl"
    path.write_text("".join(f'{{"tokens": [{i}]}}\n' for i in range(3)))
    return path


def test_game_worst_and_limit_print_exact_ratios(capsys, paging_file):
    argv = ["--workload", str(paging_file), "--budget", "2", "--json"]
    assert main(["game", "worst", *argv, "--policy", "fifo", "--horizon", "4"]) == 0
    record = json.loads(capsys.readouterr().out)
    # FIFO on 0 1 2 0: 4 misses, FIF 3 (the brute force of tests/game/test_game.py covers every sequence)
    assert record["ratio"] == "4/3" and record["alg"] == 4 and record["opt"] == 3 and len(record["sequence"]) <= 4
    assert main(["game", "limit", *argv, "--policy", "lru"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["ratio"] == "2/1" and record["cycle"]
    assert (
        main(
            ["game", "best", "--workload", str(paging_file), "--budget", "2", "--horizon", "6"]
            + ["--deterministic", "--json"]
        )
        == 0
    )
    record = json.loads(capsys.readouterr().out)
    assert record["ratio"] == "3/2" and record["certificate"] == "checked"  # the textbook bounds meet at H = 6
    assert main(["game", "best", *argv, "--horizon", "3", "--randomized"]) == 0
    record = json.loads(capsys.readouterr().out)
    # H = 3 over 3 pages with k = 2: no page comes back after an eviction, so every algorithm misses exactly
    # the distinct pages requested, as OPT does
    assert record["ratio"] == "1/1" and record["exact"] and record["certificate"] == "checked"


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["worst", "--budget", "2", "--policy", "lru", "--horizon", "0"], "horizon"),
        (["worst", "--budget", "2", "--policy", "nope", "--horizon", "3"], "unknown policy"),
        (["worst", "--budget", "2", "--policy", "lru", "--horizon", "6", "--state-limit", "3"], "search states"),
        (["worst", "--budget", "2", "--policy", "lru", "--horizon", "3", "--batch", "0"], "batch"),
        (["limit", "--budget", "2", "--policy", "random-leaf"], "randomized"),
        (["best", "--budget", "2", "--horizon", "4"], "--deterministic"),
        (["best", "--budget", "2", "--horizon", "4", "--deterministic", "--randomized"], "not allowed"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, paging_file, argv, needle):
    try:
        code = main(["game", argv[0], "--workload", str(paging_file), *argv[1:]])
    except SystemExit as exited:
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err and "Traceback" not in err


GAME_BASES = {
    "worst": ["--budget", "2", "--policy", "lru", "--horizon", "3"],
    "limit": ["--budget", "2", "--policy", "fifo"],
    "best": ["--budget", "2", "--horizon", "3", "--deterministic"],
}
ODD_VALUES = st.one_of(
    st.sampled_from(["-1", "0", "1", "2", "3", "5", "2" * 50, "nan", "inf", "1e3", "0x10", "", " ", "abc", "1,2"]),
    st.sampled_from(["lru", "rlt", "rlt-authors", "lfu", "random-leaf", "nope", "auto", "jsonl", "w.txt"]),
)


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(GAME_BASES))
def test_every_option_of_every_game_mode_is_a_result_or_one_line(mode, paging_file, capsys):
    import argparse

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as hst

    from kvtheory.cli import build_parser

    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    (modes,) = [a for a in commands.choices["game"]._actions if isinstance(a, argparse._SubParsersAction)]
    options = [a for a in modes.choices[mode]._actions if a.option_strings and a.nargs != 0]
    options = [a for a in options if a.option_strings[0] not in ("-h",)]
    base = ["--workload", str(paging_file), *GAME_BASES[mode]]

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
    @given(action=hst.sampled_from(options), value=ODD_VALUES)
    def one(action, value):
        argv = list(base)
        flag = action.option_strings[0]
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
        try:
            code = main(["game", mode, *argv])
        except SystemExit as exited:
            code = exited.code
        out, err = capsys.readouterr()
        assert "Traceback" not in err and code in (0, 2), (argv, code, err)
        if code == 2:
            assert err.count("\n") == 1, (argv, err)

    one()
