"""Predictions of the next request (kvtheory.model.predictions): requests and their true next times, each
predictor's definition, the error eta, and the one-line errors of bad predictor settings."""

from __future__ import annotations

import numpy as np
import pytest

from kvtheory import InputError, Workload
from kvtheory.model.batches import batches
from kvtheory.model.predictions import PREDICTORS, Requests, predict


def brute_requests(workload: Workload, batch: int) -> list[tuple[int, int, int]]:
    """(step, edge, actual next step) of every request, by scanning the schedule forward from each request."""
    trie = workload.trie
    schedule = [{v for j in group for v in trie.path(j)} for group in batches(len(workload), batch)]
    horizon = len(schedule)
    out = []
    for t, edges in enumerate(schedule, start=1):
        for v in sorted(edges):
            later = [s for s in range(t + 1, horizon + 1) if v in schedule[s - 1]]
            out.append((t, v, later[0] if later else horizon + 1))
    return out


WORKLOAD = Workload.from_token_lists([[1, 2, 3], [1, 2, 4], [5], [1, 2, 3], [5, 6], [1, 2], [7], [5]])


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_requests_match_a_forward_scan(batch):
    requests = Requests.of(WORKLOAD.trie, batches(len(WORKLOAD), batch))
    got = list(zip(requests.steps.tolist(), requests.edges.tolist(), requests.actual.tolist()))
    assert got == brute_requests(WORKLOAD, batch)
    assert requests.horizon == len(batches(len(WORKLOAD), batch))


def test_oracle_predicts_the_truth_and_its_error_is_zero():
    p = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), "oracle")
    assert p.eta == 0.0
    assert np.array_equal(p.predicted, p.requests.actual)


@pytest.mark.parametrize("name", ["logdis", "dis", "bin"])
def test_noise_zero_is_the_oracle(name):
    p = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), name, noise=0.0, seed=3)
    assert p.eta == 0.0
    assert np.array_equal(p.predicted, p.requests.actual)


@pytest.mark.parametrize("name", ["logdis", "dis", "bin"])
def test_noisy_predictors_are_seeded(name):
    schedule = batches(len(WORKLOAD), 1)
    noise = 0.5
    a, b = (predict(WORKLOAD.trie, schedule, name, noise=noise, seed=7) for _ in range(2))
    assert np.array_equal(a.predicted, b.predicted) and a.eta == b.eta
    others = [predict(WORKLOAD.trie, schedule, name, noise=noise, seed=s).predicted for s in range(8, 16)]
    assert any(not np.array_equal(a.predicted, other) for other in others)


def test_eta_weights_each_request_by_its_edge_tokens():
    p = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), "dis", noise=1.0, seed=0)
    lengths = np.asarray(WORKLOAD.trie.edge_len)[p.requests.edges]
    assert p.eta == pytest.approx(float(np.sum(lengths * np.abs(p.predicted - p.requests.actual))), rel=1e-12)
    assert p.eta > 0


def test_logdis_and_dis_keep_their_definitions():
    """logdis scales the gap by exp(N(0, s)); dis adds N(0, s) times the gap: with the generator's own normal
    draws the predictions are recomputed here from the definition."""
    requests = Requests.of(WORKLOAD.trie, batches(len(WORKLOAD), 1))
    gap = requests.actual - requests.steps
    z = np.random.default_rng(5).normal(0.0, 0.3, gap.size)
    logdis = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), "logdis", noise=0.3, seed=5).predicted
    dis = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), "dis", noise=0.3, seed=5).predicted
    assert np.allclose(logdis, requests.steps + gap * np.exp(z))
    assert np.allclose(dis, requests.steps + gap + z * gap)


def test_bin_replaces_with_times_in_the_future_up_to_never():
    p = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), "bin", noise=1.0, seed=2)
    steps, horizon = p.requests.steps, p.requests.horizon
    assert np.all(p.predicted >= steps + 1) and np.all(p.predicted <= horizon + 1)
    assert np.all(p.predicted == np.round(p.predicted))


def test_adversarial_reverses_the_true_order():
    p = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), "adversarial")
    actual = p.requests.actual
    for a in range(actual.size):
        for b in range(actual.size):
            if actual[a] < actual[b]:
                assert p.predicted[a] > p.predicted[b]


@pytest.mark.parametrize(
    ("name", "noise", "message"),
    [
        ("psychic", None, "unknown predictor 'psychic'; known predictors: " + ", ".join(PREDICTORS)),
        ("oracle", 0.1, "predictor 'oracle' takes no noise"),
        ("logdis", None, "predictor 'logdis' needs a noise strength"),
        ("dis", -1.0, "--noise -1.0: the strength of 'dis' is a finite number >= 0"),
        ("bin", 1.5, "--noise 1.5: the strength of 'bin' is a probability in [0, 1]"),
        ("logdis", float("nan"), "the strength of 'logdis' is a finite number >= 0"),
    ],
)
def test_bad_predictor_settings_are_one_line_errors(name, noise, message):
    with pytest.raises(InputError, match=None) as error:
        predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), name, noise=noise)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_learned_uses_no_future():
    """Cut the schedule after m steps: every prediction made in those steps is the same (the trace's length,
    which only writes "never" as T + 1, aside), so the learned predictor reads nothing of the future."""
    from kvtheory.workloads import generate

    workload = generate("multiturn", {"conversations": 6, "user_len": 8}, seed=1)
    schedule = batches(len(workload), 2)
    whole = predict(workload.trie, schedule, "learned")
    for m in (3, len(schedule) // 2, len(schedule) - 1):
        cut = predict(workload.trie, schedule[:m], "learned")
        n = cut.requests.edges.size
        never_whole, never_cut = whole.requests.horizon + 1, cut.requests.horizon + 1
        assert np.array_equal(whole.requests.edges[:n], cut.requests.edges)
        for a, b in zip(whole.predicted[:n], cut.predicted):
            assert (a == never_whole and b == never_cut) or a == b


def test_learned_repeats_the_last_gap():
    p = predict(WORKLOAD.trie, batches(len(WORKLOAD), 1), "learned")
    last: dict[int, int] = {}
    for v, t, told in zip(p.requests.edges.tolist(), p.requests.steps.tolist(), p.predicted.tolist()):
        if v in last:
            assert told == t + (t - last[v])
        last[v] = t


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_learned_told_online_is_learned_on_the_whole_schedule(batch):
    """OnlinePredictions (learned told batch by batch, for a schedule decided as it is served) tells each batch
    what ``predict`` made for the whole schedule, and its record has the same requests and eta."""
    from kvtheory.model.predictions import OnlinePredictions
    from kvtheory.workloads import generate

    workload = generate("multiturn", {"conversations": 6, "user_len": 8}, seed=2)
    schedule = batches(len(workload), batch)
    whole = predict(workload.trie, schedule, "learned")
    online = OnlinePredictions(workload.trie, len(schedule))
    for t, group in enumerate(schedule, start=1):
        edges = {v for j in group for v in workload.trie.path(j)}
        assert online.told(t, edges, "p") == whole.at(t)
    made = online.made()
    assert np.array_equal(made.predicted, whole.predicted) and made.eta == whole.eta
    assert np.array_equal(made.requests.actual, whole.requests.actual)
    with pytest.raises(InputError, match="told once per batch, in order"):
        online.told(1, {1}, "p")
    with pytest.raises(InputError, match="more batches served than the horizon"):
        online.told(len(schedule) + 1, {1}, "p")
