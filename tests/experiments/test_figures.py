"""The one figure style (kvtheory.experiments.plot): a policy has the same colour in every figure, the format
follows the file's suffix, no two tick labels overlap, ``mrc`` plots the miss ratio (or, asked, the hit rate)
with a GiB axis from the cost model, the demo writes each value on its bar, and ``plot`` draws the bound a
claim states. Figures are built in memory (Agg) and inspected through matplotlib's artists."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from kvtheory.cli import main  # noqa: E402
from kvtheory.errors import InputError  # noqa: E402
from kvtheory.experiments.demo import Scenario, demo_figure, run_scenario  # noqa: E402
from kvtheory.experiments.plot import (  # noqa: E402
    POLICY_STYLES,
    log_axis,
    mrc_figure,
    plot_mrc,
    policy_style,
    results_figure,
    save_figure,
    tidy_ticks,
)
from kvtheory.policies import built_in_policies  # noqa: E402

GIB = 2**30


def _overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of visible tick labels whose boxes overlap, on any axis of ``fig`` (secondary axes too)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pairs = []
    for ax in fig.axes:
        for axis in [ax.xaxis, ax.yaxis] + [a for child in ax.child_axes for a in (child.xaxis, child.yaxis)]:
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            pairs += [
                (labels[i].get_text(), labels[j].get_text())
                for i in range(len(labels))
                for j in range(i + 1, len(labels))
                if boxes[i].overlaps(boxes[j])
            ]
    return pairs


def _mrc_result(budgets, policies=("lru", "rlt", "token-lru", "fif")):
    """A miss-ratio curve as miss_ratio_curve returns it, with made-up values falling with the budget."""
    n = len(budgets)
    hit = {p: [0.3 + 0.5 * i / max(n - 1, 1) - 0.03 * j for i in range(n)] for j, p in enumerate(policies)}
    return {
        "budgets": list(budgets),
        "evict_amount": "shortfall",
        "hit_rate": hit,
        "miss_ratio": {p: [1 - r for r in rates] for p, rates in hit.items()},
        "misses": {p: [1000 * (1 - r) for r in rates] for p, rates in hit.items()},
        "infeasible": [],
    }


def _record(family, policy, x, ratios, **fields):
    params = fields.pop("params", {})
    return {
        "family": family,
        "policy": policy,
        "params": params,
        "budget": fields.pop("budget", 16),
        "batch": 1,
        "k": fields.pop("k", x),
        "queries": 60,
        "opt_misses": 10,
        "ratios": ratios,
        "seeds": list(range(len(ratios))),
        "randomized": policy in ("rlt", "random-leaf", "rlt-authors"),
        "cell": f"{family}-{policy}-{x}",
    }


def _records():
    return [
        _record("cyclic", policy, k, ratios, params={"k": k, "L": 3})
        for k in (2, 4, 8, 16)
        for policy, ratios in (("lru", [k * 0.9]), ("token-lru", [k * 0.8]), ("rlt", [1.1, 1.3, 1.2 + k / 20]))
    ]


@pytest.fixture(scope="module")
def demo_results():
    scenarios = [
        Scenario("small cyclic", "cyclic", {"k": 3, "L": 3, "n": 40}, 5),
        Scenario("small imbalanced", "imbalanced", {"B": 32, "k": 2, "n": 60}, 32),
    ]
    return [run_scenario(s, seeds=3) for s in scenarios]


@pytest.fixture
def closing():
    figures = []
    yield figures.append
    for fig in figures:
        plt.close(fig)


PER_TOKEN = 131072  # Llama-3.1-8B: 128 KiB of KV cache per token
MRC_BUDGETS = [20000, 35000, 66000, 120000, 220000, 400000]


@pytest.fixture(scope="module")
def figures(demo_results):
    """Each kind of figure once (drawing is the slow part): the issue's mrc (20k-400k, which overlapped) with
    its GiB axis, the same curves as hit rates, sweep results and the demo."""
    built = {
        "mrc": mrc_figure(
            _mrc_result(MRC_BUDGETS), workload="w.jsonl", batch=2, seeds=5,
            kv_bytes_per_token=PER_TOKEN, hardware="M on G",
        ),
        "hit": mrc_figure(_mrc_result([1000, 4000, 16000]), y="hit-rate"),
        "results": results_figure(_records())[0],
        "demo": demo_figure(demo_results),
    }  # fmt: skip
    for fig in built.values():
        tidy_ticks(fig)
    yield built
    for fig in built.values():
        plt.close(fig)


# -- one colour per policy ----------------------------------------------------------------------------------
def test_every_built_in_policy_has_its_own_colour_and_marker():
    names = built_in_policies()
    assert set(names) <= set(POLICY_STYLES)  # a new built-in policy gets a fixed style, not a hashed one
    assert len({policy_style(n)["color"] for n in names}) == len(names)
    assert len({policy_style(n)["marker"] for n in names}) == len(names)
    assert policy_style("fif") == policy_style("opt") and policy_style("fif")["color"] == "black"
    assert policy_style("my-plugin") == policy_style("my-plugin")  # a plug-in's too, stable across figures


def test_a_policy_has_the_same_colour_in_every_figure(figures):
    seen: dict[str, set[str]] = {}
    mrc, results, demo = figures["mrc"], figures["results"], figures["demo"]
    for fig in (mrc, results):
        for line in (line for ax in fig.axes for line in ax.get_lines()):
            if line.get_label() in POLICY_STYLES:
                seen.setdefault(line.get_label(), set()).add(to_hex(line.get_color()))
    for ax in demo.axes:  # bars: one per y tick, in the order of the tick labels
        names = [t.get_text() for t in ax.get_yticklabels()]
        for name, bar in zip(names, ax.patches):
            seen.setdefault(name, set()).add(to_hex(bar.get_facecolor()))
    assert {"lru", "rlt", "token-lru", "fifo", "lfu"} <= set(seen)
    for name, colours in seen.items():
        assert colours == {to_hex(policy_style(name)["color"])}, name
    opt = [line for line in mrc.axes[0].get_lines() if line.get_label() == "OPT"]
    assert opt and to_hex(opt[0].get_color()) == "#000000" and opt[0].get_linestyle() == "--"


def test_a_seeded_series_has_a_confidence_band(figures):
    bands = figures["results"].axes[0].collections
    colours = {to_hex(c.get_facecolor()[0]) for c in bands if type(c).__name__ == "FillBetweenPolyCollection"}
    assert to_hex(policy_style("rlt")["color"]) in colours  # rlt has three seeds: a band
    assert to_hex(policy_style("lru")["color"]) not in colours  # lru has one run per point: none


# -- formats ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix,magic", [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".SVG", b"<svg")])
def test_the_format_follows_the_suffix(tmp_path, suffix, magic):
    path = tmp_path / f"fig{suffix}"
    fig, ax = plt.subplots(figsize=(1.5, 1))
    ax.plot([1, 2], [1, 2])
    save_figure(fig, path)  # (plot_mrc end to end: the command line test below writes an SVG)
    assert magic in path.read_bytes()[:400]


@pytest.mark.parametrize("name", ["mrc.jpg", "mrc", "mrc.png.txt"])
def test_an_unknown_suffix_is_an_input_error_before_any_drawing(tmp_path, name):
    with pytest.raises(InputError, match="unknown figure format"):
        plot_mrc(_mrc_result([1000, 2000]), tmp_path / name)
    assert not (tmp_path / name).exists()


# -- ticks --------------------------------------------------------------------------------------------------
def test_the_overlap_check_sees_overlapping_labels(closing):
    fig, ax = plt.subplots(figsize=(2, 2))
    closing(fig)
    ax.set_xticks(range(30))
    assert _overlaps(fig)  # the check below is not vacuous


@pytest.mark.parametrize("name", ["mrc", "hit", "results", "demo"])
def test_no_tick_labels_overlap(figures, name):
    assert _overlaps(figures[name]) == []
    for ax in figures[name].axes:
        assert any(t.get_visible() and t.get_text() for t in ax.xaxis.get_ticklabels()), "an axis has labels"


def test_no_tick_labels_overlap_on_log_budget_axes_of_any_span(closing):
    """The budget axis of a miss-ratio curve over a fraction of a decade to nine decades, at the mrc figure's
    width (one panel per span, one draw): log_axis alone, no tidying."""
    spans = [(30000, 40000), (20000, 400000), (100, 10**7), (1, 10**9)]
    fig, axes = plt.subplots(len(spans), 1, figsize=(6.4, 1.0 * len(spans)))
    closing(fig)
    for ax, (low, high) in zip(axes, spans):
        ax.plot([low, high], [0, 1])
        ax.set_xscale("log")
        log_axis(ax.xaxis, low, high)
    assert _overlaps(fig) == []
    assert all(sum(bool(t.get_text()) for t in ax.get_xticklabels()) >= 2 for ax in axes)


@pytest.mark.slow
def test_tidy_ticks_clears_what_overlapped(closing):
    """matplotlib's defaults on the issue's budgets (the old mrc figure: "3x10^4 4x10^4"), and a linear
    axis with far too many ticks: overlapping before, not after."""
    fig, (old, dense) = plt.subplots(2, 1, figsize=(6.4, 3))
    closing(fig)
    old.plot(MRC_BUDGETS, range(len(MRC_BUDGETS)))
    old.set_xscale("log")
    dense.plot([0, 1], [0, 1])
    dense.xaxis.set_major_locator(MaxNLocator(nbins=80))
    assert _overlaps(fig)
    tidy_ticks(fig)
    assert _overlaps(fig) == []
    assert sum(bool(t.get_text()) for t in dense.get_xticklabels()) >= 3


# -- mrc ----------------------------------------------------------------------------------------------------
def test_mrc_plots_the_miss_ratio_by_default_and_the_hit_rate_when_asked(figures):
    miss, hit = figures["mrc"], figures["hit"]
    for fig, result, key in (
        (miss, _mrc_result(MRC_BUDGETS), "miss_ratio"),
        (hit, _mrc_result([1000, 4000, 16000]), "hit_rate"),
    ):
        lines = {line.get_label(): list(line.get_ydata()) for line in fig.axes[0].get_lines()}
        assert lines["lru"] == pytest.approx(result[key]["lru"]) and lines["OPT"] == pytest.approx(result[key]["fif"])
    assert "miss ratio" in miss.axes[0].get_ylabel() and "hit rate" in hit.axes[0].get_ylabel()
    title = miss.axes[0].get_title()
    assert "w.jsonl" in title and "β = 2" in title and "seeds = 5" in title and "B = 20,000–400,000" in title
    with pytest.raises(InputError, match="unknown y"):
        mrc_figure(_mrc_result([1, 2]), y="misses")


def test_mrc_second_axis_is_the_budget_in_gib(figures):
    fig = figures["mrc"]
    (top,) = fig.axes[0].child_axes
    assert "GiB" in top.get_xlabel() and "M on G" in top.get_xlabel()
    ax = fig.axes[0]
    checked = 0
    for tick, label in zip(top.get_xticks(), top.get_xticklabels()):
        if not label.get_visible() or not label.get_text() or not 2 <= tick <= 50:
            continue
        # the label for g GiB stands where the budget axis has g GiB / (bytes per token) tokens
        x_budget = ax.transData.transform((tick * GIB / PER_TOKEN, 0))[0]
        box = label.get_window_extent()
        assert box.x0 - 1 <= x_budget <= box.x1 + 1, (label.get_text(), x_budget, box)
        checked += 1
    assert checked >= 2


def _workload(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text("".join(f'{{"tokens": [1, 2, {3 + i % 5}, {10 + i % 3}]}}\n' for i in range(40)))
    return path


def _cli(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    return code, out, err


def test_mrc_cli_y_and_gib_axis(tmp_path, capsys):
    w = _workload(tmp_path)
    base = ["mrc", "--workload", w, "--budgets", "4,6,9", "--policies", "lru,fif", "--workers", 1]
    figure = tmp_path / "m.svg"
    code, _, err = _cli(
        capsys, *base, "--plot", figure, "--y", "hit-rate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B"
    )
    assert code == 0, err
    svg = figure.read_text()
    assert "hit rate" in svg and "GiB" in svg and "w.jsonl" in svg
    for extra, message in [
        (["--y", "hit-rate"], "--y applies to the plot"),
        (["--gpu", "H100-SXM", "--model", "Llama-3.1-8B"], "--gpu applies to the plot"),
        (["--plot", tmp_path / "x.png", "--gpu", "H100-SXM"], "--gpu and --model go together"),
        (["--plot", tmp_path / "x.jpg"], "unknown figure format"),
        (["--plot", tmp_path / "x.png", "--gpu", "H100-SXM", "--model", "nope"], "nope"),
    ]:
        code, _, err = _cli(capsys, *base, *extra)
        assert code == 2 and message in err and err.count("\n") == 1, (extra, err)
    assert not (tmp_path / "x.png").exists()


# -- demo ---------------------------------------------------------------------------------------------------
def test_demo_bars_carry_their_values_and_the_axis_starts_near_one(demo_results, figures):
    for ax, result in zip(figures["demo"].axes, demo_results):
        values = [f"{r.to_dict()['ratio_mean']:.3f}" for r in result.reports]
        assert [t.get_text() for t in ax.texts] == values  # one label per bar, in order
        names = [t.get_text() for t in ax.get_yticklabels()]
        assert names == [r.policy for r in result.reports]
        low, high = ax.get_xlim()
        top = max(r.to_dict()["ratio_ci95"][1] for r in result.reports)
        assert high >= top
        if ax.get_xscale() == "linear":  # starts just below OPT = 1, not at 0
            assert 1 - 0.05 * (top - 1) <= low < 1
        else:
            assert 0.8 < low < 1
        assert "seeds = 3" in ax.get_title() and f"B = {result.budget:,}" in ax.get_title()


# -- plot: the claims' bounds -------------------------------------------------------------------------------
def test_plot_draws_claim_4s_bound_on_imbalanced(closing):
    from kvtheory.cli.plot import claim_curves

    curves = {c.label.split(" ")[0]: c for c in claim_curves()}
    assert "C4" in curves and curves["C4"].family == "imbalanced" and "lru" in curves["C4"].policies
    assert not {"C2", "C6"} & set(curves)  # k and H_k are drawn on every panel already
    records = [
        _record("imbalanced", "lru", b, [b / 3], budget=b, k=2, params={"B": b, "k": 2}) for b in (8, 16, 32)
    ] + [_record("imbalanced", "rlt", b, [1.2, 1.3], budget=b, k=2, params={"B": b, "k": 2}) for b in (8, 16, 32)]
    fig, summary = results_figure(records, x="B", bounds=list(curves.values()))
    closing(fig)
    (line,) = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("C4")]
    assert list(line.get_xdata()) == [8, 16, 32]
    assert list(line.get_ydata()) == pytest.approx([2 * (b + 1) / 3 for b in (8, 16, 32)])
    assert fig.axes[0].get_ylim()[1] >= 2 * 33 / 3  # the bound is in view
    assert any(label.startswith("C4") for label in summary["bounds"])
    other, summary = results_figure(_records(), bounds=list(curves.values()))  # cyclic: no claim curve
    closing(other)
    assert summary["bounds"] == [] and not math.isnan(other.axes[0].get_ylim()[1])


def test_mrc_a_seeded_policy_has_its_interval_and_band(tmp_path, closing):
    from kvtheory.experiments.mrc import miss_ratio_curve
    from kvtheory.model.workload import read_workload
    from kvtheory.simulate import run_policy
    from kvtheory.stats import summarize

    workload = read_workload(_workload(tmp_path))
    result = miss_ratio_curve(workload, [4, 6, 9], ["lru", "rlt", "opt"], seeds=4, workers=1, progress=False)
    assert set(result["misses_ci95"]) == {"rlt"}  # deterministic policies and OPT run once: no interval
    for budget, (low, high) in zip(result["budgets"], result["misses_ci95"]["rlt"]):
        runs = [run_policy(workload, budget, "rlt", seed=s).misses for s in range(4)]
        assert [low, high] == pytest.approx(list(summarize(runs).ci))  # as evict --seeds 4 reports it
    fig = mrc_figure(result)
    closing(fig)
    bands = [c for c in fig.axes[0].collections if type(c).__name__ == "FillBetweenPolyCollection"]
    assert [to_hex(b.get_facecolor()[0]) for b in bands] == [to_hex(policy_style("rlt")["color"])]
