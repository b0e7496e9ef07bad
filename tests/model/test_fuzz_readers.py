"""Fuzzing the readers: every line is read to exactly what it says, or rejected with one line naming it.

Each generated record is checked against a reference written here from the file format's definition
(plain Python over the parsed JSON, independent of kvtheory.model.records): when the reference accepts,
the reader must return exactly those tokens, arrival and output length (int64 tokens, nothing squashed);
when it rejects, the reader must raise InputError with one line that starts with ``file:line``. Any other
exception is a failure.
"""

from __future__ import annotations

import json
import math

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kvtheory.errors import InputError
from kvtheory.experiments.sweep import read_results, stability_rows
from kvtheory.model.workload import MAX_ARRIVAL, MAX_OUTPUT_LEN, parse_query_line, read_workload

INT64 = (-(2**63), 2**63 - 1)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# JSON values: every scalar kind at its edges (bools, 0, +-2^63, huge ints, -0.0, 1.0, 1e308, NaN,
# infinities, strings), nested in lists and objects.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([0, 1, -1, INT64[0], INT64[1], INT64[1] + 1, INT64[0] - 1, 2**64, 10**30, MAX_OUTPUT_LEN]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e308, MAX_ARRIVAL, MAX_ARRIVAL * 2]),
    st.text(max_size=8),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
)
token_values = st.one_of(
    st.lists(st.integers(INT64[0], INT64[1]), max_size=6),  # plain: mostly accepted
    st.lists(st.integers(10**5, 10**6), min_size=100, max_size=120),  # the reader's fast path (>= 512 bytes)
    st.lists(st.one_of(st.integers(), st.booleans(), st.floats(), st.lists(st.integers(), max_size=2)), max_size=5),
    json_values,
)
optional_fields = {
    "arrival": st.one_of(st.floats(-1.0, 2 * MAX_ARRIVAL), st.integers(-5, 2 * int(MAX_ARRIVAL)), json_values),
    "output_len": st.one_of(st.integers(-5, 2 * MAX_OUTPUT_LEN), json_values),
    "prompt": json_values,
}
records = st.one_of(
    st.fixed_dictionaries({"tokens": token_values}, optional=optional_fields),
    st.fixed_dictionaries({}, optional={"tokens": token_values, **optional_fields}),
    json_values,
)


def reference(value) -> tuple[list[int], float | None, int | None] | None:
    """What a workload line means by the format's definition, or None when it is not a valid line (other keys,
    such as the fuzzer's ``prompt``, are ignored)."""
    if type(value) is not dict:
        return None
    tokens, arrival, output_len = value.get("tokens"), value.get("arrival"), value.get("output_len")
    if type(tokens) is not list or not tokens:
        return None
    if any(type(t) is not int or not INT64[0] <= t <= INT64[1] for t in tokens):
        return None
    if arrival is not None and (
        type(arrival) not in (int, float) or not math.isfinite(arrival) or not 0 <= arrival <= MAX_ARRIVAL
    ):
        return None
    if output_len is not None and (type(output_len) is not int or not 0 <= output_len <= MAX_OUTPUT_LEN):
        return None
    return tokens, None if arrival is None else float(arrival), output_len


def _contains_nan_or_infinity(value) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(_contains_nan_or_infinity(v) for v in value)
    if isinstance(value, dict):
        return any(_contains_nan_or_infinity(v) for v in value.values())
    return False


def _check_line(line: bytes, meaning) -> None:
    try:
        query = parse_query_line(line, "w.jsonl:7")
    except InputError as exc:
        message = str(exc)
        assert meaning is None, f"{line!r} was rejected ({message}) but means {meaning}"
        assert message.startswith("w.jsonl:7: ") and "\n" not in message
        return
    assert meaning is not None, f"{line!r} was accepted as {query} but is not a valid line"
    tokens, arrival, output_len = meaning
    assert query.tokens.dtype == np.int64 and query.tokens.ndim == 1
    assert query.tokens.tolist() == tokens
    assert query.arrival == arrival and type(query.arrival) is type(arrival)
    assert query.output_len == output_len


@pytest.mark.slow
@FUZZ
@given(record=records, spaced=st.booleans())
@example(record={"tokens": [[1], [2]]}, spaced=True)  # the case: was read as [1, 2]
@example(record={"tokens": [[1, 2], [3]]}, spaced=True)
@example(record={"tokens": [1, True]}, spaced=False)
@example(record={"tokens": [1.0, 2]}, spaced=False)
@example(record={"tokens": [2**63]}, spaced=False)
@example(record={"tokens": [1], "arrival": True}, spaced=False)
@example(record={"tokens": [1], "output_len": 1.0}, spaced=False)
@example(record={"tokens": [1], "arrival": None, "output_len": None}, spaced=False)
@example(record={"x": {"tokens": [1]}, "tokens": [2]}, spaced=False)
def test_a_workload_line_is_read_exactly_or_rejected(record, spaced):
    line = json.dumps(record, separators=(", ", ": ") if spaced else (",", ":")).encode()
    meaning = None if _contains_nan_or_infinity(record) else reference(record)  # NaN is no JSON
    _check_line(line, meaning)


@pytest.mark.slow
@FUZZ
@given(record=records)
def test_orjson_and_numpy_written_lines_read_the_same(record):
    """Lines as orjson writes them (what kvtheory writes), tokens as a numpy array when they fit."""
    tokens = record.get("tokens") if isinstance(record, dict) else None
    if isinstance(tokens, list) and tokens and all(type(t) is int and INT64[0] <= t <= INT64[1] for t in tokens):
        record = dict(record, tokens=np.array(tokens, dtype=np.int64))
    try:
        line = orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:  # integers beyond 64 bits: orjson cannot write them
        return
    _check_line(line, reference(orjson.loads(line)))


@pytest.mark.parametrize(
    "line, needle",
    [
        (b'{"tokens": [1], "tokens": [2]}', "key 'tokens' appears twice"),
        (b'{"tokens": [1], "arrival": 1, "arrival": 2}', "key 'arrival' appears twice"),
        (b'{"tokens": [1], "arrival": NaN}', "not valid JSON"),
        (b'{"tokens": [Infinity]}', "not valid JSON"),
        (b'{"tokens": [007]}', "not valid JSON"),
        (b'{"tokens": [1 2]}', "not valid JSON"),
        (b'{"tokens": [1,]}', "not valid JSON"),
        (b'{"tokens": [1], "arrival": 1e999}', "'arrival' must be"),
        (b'{"tokens": [\xff]}', "not UTF-8"),
        (b'\xef\xbb\xbf{"tokens": [1]}', "not valid JSON"),
        (b"[" * 100000, "not valid JSON"),
        (b'{"tokens": "\\u0000kvtheory"}', "'tokens' must be"),
    ],
)
def test_malformed_json_is_one_line_naming_the_line(line, needle):
    with pytest.raises(InputError) as info:
        parse_query_line(line, "w.jsonl:7")
    message = str(info.value)
    assert message.startswith("w.jsonl:7: ") and needle in message and "\n" not in message


def test_an_unknown_key_holding_the_fast_paths_sentinel_is_ignored():
    tokens = list(range(10**5, 10**5 + 100))  # a line long enough for the fast path
    line = b'{"tokens": [%s], "x": "\\u0000kvtheory"}' % ",".join(map(str, tokens)).encode()
    query = parse_query_line(line, "w.jsonl:7", unknown := set())
    assert query.tokens.tolist() == tokens and unknown == {"x"}


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(lines=st.lists(records, min_size=1, max_size=5), data=st.data())
def test_a_file_names_its_first_bad_line(tmp_path_factory, lines, data):
    """read_workload: the error names the file and the first line the reference rejects."""
    path = tmp_path_factory.mktemp("fuzz") / "w.jsonl"
    texts = []
    for record in lines:
        texts.append(json.dumps(record))
        if data.draw(st.booleans()):
            texts.append("   ")  # blank lines are skipped but counted
    path.write_text("\n".join(texts) + "\n")
    meanings = [
        None if _contains_nan_or_infinity(json.loads(t)) else reference(json.loads(t)) for t in texts if t.strip()
    ]
    numbers = [n for n, t in enumerate(texts, start=1) if t.strip()]
    bad = [n for n, m in zip(numbers, meanings) if m is None]
    try:
        workload = read_workload(path)
    except InputError as exc:
        assert bad and str(exc).startswith(f"{path}:{bad[0]}: ") and "\n" not in str(exc)
        return
    assert not bad
    assert [q.tokens.tolist() for q in workload] == [m[0] for m in meanings]
    assert workload.lines == tuple(numbers)


# -- sweep results (plot, resume) ---------------------------------------------------------------------
GOOD_RESULT = {
    "cell": "54dffa8d2ddb67f7",
    "family": "cyclic",
    "params": {"k": 2, "L": 2, "n": 40},
    "seed": 0,
    "policy": "rlt",
    "budget": 3,
    "batch": 1,
    "k": 2,
    "ratios": [1.45, 1.55, None],
    "steady_ratios": [1.5, 1.6, 1.4],
    "ratio_mean": 1.5,
    "ratio_ci95": [1.3, 1.7],
    "worst_seed": 1,
    "worst_ratio": 1.55,
    "randomized": True,
}


@pytest.mark.slow
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(sorted(GOOD_RESULT) + ["error"]), value=json_values, drop=st.booleans())
def test_a_results_line_with_any_value_in_any_field_is_read_or_rejected(tmp_path, field, value, drop):
    record = dict(GOOD_RESULT)
    if drop:
        record.pop(field, None)
    else:
        record[field] = value
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(record) + "\n")
    try:
        records = read_results(path)
    except InputError as exc:
        assert str(exc).startswith(f"{path}:1: ") and "\n" not in str(exc)
        return
    assert not _contains_nan_or_infinity(record)  # NaN and Infinity are not JSON: never accepted
    written = {key: value for key, value in record.items() if value is not None}  # null: absent
    assert json.dumps(records, sort_keys=True) == json.dumps([written], sort_keys=True)  # true stays true, 1.0 1.0
    stability_rows(records)  # what `kvtheory sweep` prints from them: never a traceback


def test_duplicate_cells_in_an_old_results_file_are_rejected_naming_both_lines(tmp_path):
    path = tmp_path / "old.jsonl"
    other = dict(GOOD_RESULT, cell="0000000000000001")
    path.write_text("\n".join(json.dumps(r) for r in (GOOD_RESULT, other, GOOD_RESULT)) + "\n")
    with pytest.raises(InputError) as info:
        read_results(path)
    message = str(info.value)
    assert message.startswith(f"{path}:3: cell 54dffa8d2ddb67f7 is already on line 1") and "\n" not in message


# -- sweep specs (TOML, read by `kvtheory sweep`) -----------------------------------------------------
expression_tokens = st.sampled_from(
    ["k", "L", "L_max", "distinct", "x", "0", "1", "2", "10", "63", "1e308", "0.5", "-", "+", "*", "/", "//"]
    + ["%", "**", "(", ")", "min(", "max(", "ceil(", "floor(", "round(", ",", "__import__", "'a'", "True"]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=2000)  # a hang (2 ** 2 ** 2 ** 10) fails the deadline
@given(text=st.lists(expression_tokens, min_size=1, max_size=9).map(" ".join))
def test_a_budget_expression_is_evaluated_or_rejected_quickly(text):
    from kvtheory.experiments.grid import evaluate

    try:
        value = evaluate(text, {"k": 4, "L": 3, "L_max": 3, "distinct": 10})
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert type(value) is int and abs(value) < 2**63


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    key=st.sampled_from(["seeds", "policy_seeds", "budget", "batch", "policies", "params", "family", "name"]),
    value=json_values,
)
def test_a_sweep_spec_with_any_value_in_any_key_expands_or_is_rejected(key, value):
    from kvtheory.experiments.grid import expand

    grid = {"family": "cyclic", "params": {"k": 2, "L": 2, "n": 20}}
    spec = {"policies": ["lru", "rlt"], "budget": "k + L - 1", "grid": [grid]}
    if key in ("family", "params"):
        grid[key] = value
    else:
        spec[key] = value
    try:
        cells = expand(spec, where="spec.toml")
    except InputError as exc:
        assert str(exc).startswith("spec.toml") and "\n" not in str(exc)
        return
    for cell in cells:
        assert 0 <= cell["seed"] < 2**63 and all(0 <= s < 2**63 for s in cell["policy_seeds"])
        assert isinstance(cell["budget"], str) or 1 <= cell["budget"] <= 2**40
