"""Trace formats as a registry (docs/formats.md §Trace formats), the Bailian reader (§Bailian traces), the
prefix-closure check and ``kvtheory trace-stats`` (§Trace statistics). Every expected value is worked out by
hand in the comments beside it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from kvtheory import InputError, Workload, run_policy
from kvtheory.cli import build_parser, main
from kvtheory.experiments.grid import expand
from kvtheory.model.query import BlockQuery
from kvtheory.model.traces import (
    TRACE_FORMATS,
    default_block_size,
    detect_format,
    format_names,
    read_workload,
    register_format,
)
from kvtheory.model.traces.bailian import BailianQuery, read_bailian
from kvtheory.model.traces.base import BY_NAME, BY_SHAPE, Sample, TraceFormat
from kvtheory.model.traces.stats import prefix_closure, trace_stats


def bailian_line(chat_id=1, parent=-1, timestamp=0.0, length=20, output=5, kind="text", turn=1, ids=(1, 2), **extra):
    record = {
        "chat_id": chat_id,
        "parent_chat_id": parent,
        "timestamp": timestamp,
        "input_length": length,
        "output_length": output,
        "type": kind,
        "turn": turn,
        "hash_ids": list(ids),
        **extra,
    }
    return json.dumps(record)


#: three requests of 16-token blocks: r1 = [1, 2] of 20 tokens (16 + 4), r2 = [1, 2, 3] of 40 (16 + 16 + 8),
#: the next turn of r1; r3 = [7, 2] of 32 (16 + 16), where id 2 follows 7, not 1
THREE = [
    bailian_line(chat_id=10, parent=-1, timestamp=0, length=20, output=3, turn=1, ids=(1, 2)),
    bailian_line(chat_id=11, parent=10, timestamp=1.5, length=40, output=0, kind="search", turn=2, ids=(1, 2, 3)),
    bailian_line(chat_id=12, parent=-1, timestamp=1.5, length=32, output=7, kind="image", turn=1, ids=(7, 2)),
]


def write(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- the registry ---------------------------------------------------------------------------------------


def format_choices(command: str) -> tuple:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    (action,) = [a for a in subparsers.choices[command]._actions if a.dest == "format"]
    return tuple(action.choices)


def test_format_choices_come_from_the_registry():
    assert format_names() == ("auto", *TRACE_FORMATS)
    assert format_names()[:6] == ("auto", "kvtheory", "mooncake", "oracle-general", "csv", "bailian")
    for command in ("evict", "opt", "mrc", "trace-stats"):
        assert format_choices(command) == format_names()
    assert TRACE_FORMATS["bailian"].block_size == 16 and TRACE_FORMATS["mooncake"].block_size == 512
    with pytest.raises(InputError, match=r"^unknown format 'json'; known formats: auto, kvtheory, .*bailian"):
        read_workload("whatever", "json")


class TinyFormat(TraceFormat):
    """A test format: ``.tiny`` files, one integer per line, each a one-token query."""

    name = "tiny-test"
    summary = "one integer per line"

    @classmethod
    def read(cls, path, block_size):
        return Workload.from_token_lists([[int(line)] for line in path.read_text().split()])

    @classmethod
    def detect(cls, sample: Sample) -> int:
        return BY_NAME if sample.name.endswith(".tiny") else 0


@pytest.fixture
def tiny_format():
    register_format(TinyFormat)
    try:
        yield TinyFormat
    finally:
        del TRACE_FORMATS[TinyFormat.name]


def test_a_format_registered_later_is_a_choice_and_is_detected(tmp_path, capsys, tiny_format):
    path = tmp_path / "ids.tiny"
    path.write_text("5\n6\n5\n")
    assert "tiny-test" in format_names() and "tiny-test" in format_choices("trace-stats")
    assert detect_format(path) == "tiny-test"
    for fmt in ("auto", "tiny-test"):
        code, out, _ = run_cli(capsys, "trace-stats", "--workload", path, "--format", fmt, "--json")
        record = orjson.loads(out)
        # queries (5), (6), (5): 3 tokens, 2 distinct token nodes, one hit
        assert code == 0 and record["format"] == "tiny-test" and record["tokens"] == 3
        assert record["ideal_hit_rate"] == pytest.approx(1 / 3) and record["blocks"] is None


def test_once_removed_a_format_is_no_choice(tmp_path, capsys):
    path = write(tmp_path / "ids.tiny", ["5"])
    with pytest.raises(SystemExit) as exited:
        main(["trace-stats", "--workload", str(path), "--format", "tiny-test"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "invalid choice: 'tiny-test'" in err and err.count("\n") == 1
    assert detect_format(path) == "csv"  # without the plug-in a .tiny text file is CSV ids


def test_the_registry_decides_between_formats_that_claim_a_file(tmp_path):
    """Bailian's detection is more specific than Mooncake's, which is more specific than a JSON object; an
    equal score goes to the format registered first."""
    files = {
        "b.jsonl": bailian_line(),
        "m.jsonl": '{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [4]}',
        "w.jsonl": '{"tokens": [1, 2]}',
        # a Bailian line cut by the 64 KiB head: its keys are found in the text
        "long.jsonl": bailian_line(length=16 * 9000, ids=range(10**6, 10**6 + 9000)),
        "chat-only.jsonl": '{"chat_id": 1, "tokens": [1]}',  # chat_id without hash_ids: not a trace
    }
    for name, line in files.items():
        write(tmp_path / name, [line])
    assert len((tmp_path / "long.jsonl").read_bytes()) > 1 << 16
    assert {name: detect_format(tmp_path / name) for name in files} == {
        "b.jsonl": "bailian",
        "m.jsonl": "mooncake",
        "w.jsonl": "kvtheory",
        "long.jsonl": "bailian",
        "chat-only.jsonl": "kvtheory",
    }

    class AnyJson(TraceFormat):
        name = "any-json-test"

        @classmethod
        def detect(cls, sample):
            return BY_SHAPE if sample.first_line is not None else 0

    register_format(AnyJson)
    try:  # ties kvtheory on a token file: kvtheory was registered first
        assert detect_format(tmp_path / "w.jsonl") == "kvtheory"
    finally:
        del TRACE_FORMATS[AnyJson.name]
    assert default_block_size("auto", tmp_path / "b.jsonl") == 16
    assert default_block_size("auto", tmp_path / "m.jsonl") == 512
    assert default_block_size("csv") == 512


# -- the Bailian reader ---------------------------------------------------------------------------------


def test_bailian_lines_are_read_with_their_fields_and_arrivals(tmp_path):
    path = write(tmp_path / "trace.jsonl", THREE)
    for workload in (read_workload(path, "auto"), read_workload(path, "bailian"), read_bailian(path)):
        assert [type(q) for q in workload] == [BailianQuery] * 3
        assert [q.hash_ids for q in workload] == [(1, 2), (1, 2, 3), (7, 2)]
        assert [q.length for q in workload] == [20, 40, 32] and {q.block_size for q in workload} == {16}
        assert [q.arrival for q in workload] == [0.0, 1.5, 1.5]  # seconds, as written
        assert [q.output_len for q in workload] == [3, 0, 7]
        assert [(q.chat_id, q.parent_chat_id, q.turn, q.type) for q in workload] == [
            (10, -1, 1, "text"),
            (11, 10, 2, "search"),
            (12, -1, 1, "image"),
        ]
        assert workload.where(2) == f"{path}:3"
    # the fields travel with the query when a workload is taken apart
    picked = read_bailian(path).select([1])
    assert (picked[0].chat_id, picked[0].parent_chat_id) == (11, 10)
    assert read_bailian(path)[1:][0].turn == 2


def test_the_partial_last_block_follows_the_mooncake_rule(tmp_path):
    """r1's block 2 holds 4 tokens (20 = 16 + 4), r2 completes it: they share min(2 * 16, 20, 40) = 20
    tokens, and r3 shares none (its first id is 7): an infinite LRU cache hits 0, 20, 0."""
    workload = read_bailian(write(tmp_path / "trace.jsonl", THREE))
    assert run_policy(workload, 1000, "lru").query_hits.tolist() == [0, 20, 0]
    expanded = Workload.from_token_lists([q.tokens for q in workload])
    assert run_policy(expanded, 1000, "lru").query_hits.tolist() == [0, 20, 0]
    # a last block of exactly 16 tokens, and 1 token, are whole and partial blocks of the same rule
    for length, n in ((16, 1), (17, 2), (32, 2)):
        (q,) = read_bailian(write(tmp_path / "one.jsonl", [bailian_line(length=length, ids=range(n))]))
        assert q.length == length
    # --hash-block-size overrides the format's 16: the same line is then one 20-token block of 32
    (q,) = read_workload(write(tmp_path / "wide.jsonl", [bailian_line(length=20, ids=(1,))]), "bailian", 32)
    assert q.block_size == 32 and q.length == 20


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            bailian_line(length=33, ids=(1, 2)),
            "input_length 33 does not fit 2 block(s) of 16 tokens (it must lie in (16, 32])",
        ),
        (
            bailian_line(length=16, ids=(1, 2)),
            "input_length 16 does not fit 2 block(s) of 16 tokens (it must lie in (16, 32])",
        ),
        ('{"chat_id": 1}', "missing '"),
        (bailian_line(turn=0), "'turn' must be a positive integer, got 0"),
        (bailian_line(parent=-2), "'parent_chat_id' must be a non-negative integer, or -1 for a root request, got -2"),
        (bailian_line(chat_id=-1), "'chat_id' must be a non-negative integer, got -1"),
        (bailian_line(kind=""), "'type' must be a non-empty string"),
        (bailian_line(kind=3), "'type' must be a non-empty string"),
        (bailian_line(timestamp="1.0"), "'timestamp' must be a non-negative number of seconds, got '1.0'"),
        (bailian_line(timestamp=-0.5), "'timestamp' must be a non-negative number of seconds, got -0.5"),
        (bailian_line(ids=()), "'hash_ids' is empty"),
        (bailian_line(ids=(1, 2.5)), "hash id 2.5 is not an integer"),
        (bailian_line(output=1.0), "'output_length' must be a non-negative integer, got 1.0"),
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_malformed_bailian_line_is_one_error_naming_its_line(tmp_path, capsys, line, message):
    path = write(tmp_path / "bad.jsonl", [THREE[0], "", line])
    with pytest.raises(InputError) as caught:
        read_bailian(path)
    assert str(caught.value).startswith(f"{path}:3: ") and message in str(caught.value)
    code, out, err = run_cli(capsys, "trace-stats", "--workload", path, "--format", "bailian")
    assert (code, out) == (2, "") and err.count("\n") == 1 and f"{path}:3: " in err and "Traceback" not in err


def test_timestamps_must_not_decrease_and_a_file_must_have_requests(tmp_path):
    path = write(tmp_path / "t.jsonl", [bailian_line(timestamp=2.5), bailian_line(timestamp=2)])
    with pytest.raises(InputError, match=r":2: timestamp 2 is before the previous line's 2.5$"):
        read_bailian(path)
    with pytest.raises(InputError, match="empty workload"):
        read_bailian(write(tmp_path / "empty.jsonl", ["", "  "]))


def test_unknown_keys_are_read_past_with_one_warning(tmp_path, capsys):
    workload = read_bailian(write(tmp_path / "x.jsonl", [bailian_line(model="qwen"), bailian_line(model="q")]))
    assert len(workload) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ignored unknown key(s) 'model'" in err


# -- prefix closure and trace-stats --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "open_ids", "open_requests"),
    [
        ([[1, 2, 3], [1, 2, 4], [5]], 0, 0),  # a tree: every id has one predecessor
        ([[1, 2, 3], [9, 2, 3]], 1, 2),  # 2 follows 1 and 9 (3 follows 2 both times): both requests hold 2
        ([[1, 2], [2]], 1, 2),  # 2 is second in one request, first in the other
        ([[1, 1]], 1, 1),  # 1 follows nothing and itself
        ([[1, 2], [3, 4], [5, 2], [6]], 1, 2),  # requests 0 and 2 hold id 2
        ([[1, 2], [3, 2], [3, 1]], 2, 3),  # 1 after nothing and 3, 2 after 1 and 3
    ],
)
def test_prefix_closure_counts(ids, open_ids, open_requests):
    closure = prefix_closure(ids)
    assert (closure.open_ids, closure.open_requests) == (open_ids, open_requests)


def test_trace_stats_of_a_bailian_trace(tmp_path, capsys):
    """T = 20 + 40 + 32 = 92 tokens; M = 2 + 3 + 2 = 7 block references of 4 ids {1, 2, 3, 7}, reuse
    (7 - 4) / 7; the infinite cache hits 20 (r2's shared head), so D = 72 token nodes; by id alone r2 hits
    16 + min(16, 4) = 20 and r3 hits 16 (id 2, held whole by r2): 36; id 2 follows 1 and 7, and all three
    requests hold it."""
    path = write(tmp_path / "trace.jsonl", THREE)
    code, out, _ = run_cli(capsys, "trace-stats", "--workload", path, "--json")
    assert code == 0
    assert orjson.loads(out) == {
        "workload": str(path),
        "format": "bailian",
        "requests": 3,
        "tokens": 92,
        "distinct_tokens": 72,
        "ideal_hit_rate": pytest.approx(20 / 92),
        "block_size": 16,
        "blocks": 7,
        "distinct_blocks": 4,
        "reuse": pytest.approx(3 / 7),
        "id_hit_rate": pytest.approx(36 / 92),
        "open_ids": 1,
        "open_requests": 3,
        "prefix_closed": False,
    }
    code, out, _ = run_cli(capsys, "trace-stats", "--workload", path)
    assert code == 0 and "open_requests" in out and "prefix_closed    False" in out


def test_trace_stats_of_a_mooncake_trace_and_of_tokens(tmp_path):
    """A prefix-closed Mooncake trace: [5, 6] of 600 tokens and [5, 6, 8] of 1100 at 512 per block share
    min(2 * 512, 600, 1100) = 600 tokens; by id the same (5 whole, then 6 held to 88 tokens): 600 of 1700."""
    path = tmp_path / "m.jsonl"
    path.write_text(
        '{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [5, 6]}\n'
        '{"timestamp": 5, "input_length": 1100, "output_length": 1, "hash_ids": [5, 6, 8]}\n'
    )
    stats = trace_stats(read_workload(path, "auto"))
    assert (stats.block_size, stats.blocks, stats.distinct_blocks, stats.prefix_closed) == (512, 5, 3, True)
    assert stats.ideal_hit_rate == stats.id_hit_rate == 600 / 1700 and stats.reuse == 2 / 5
    # token queries (1, 2, 3), (1, 2, 4): 6 tokens, 4 token nodes; no block fields
    tokens = trace_stats(Workload.from_token_lists([[1, 2, 3], [1, 2, 4]]))
    assert (tokens.tokens, tokens.distinct_tokens, tokens.ideal_hit_rate) == (6, 4, 2 / 6)
    assert tokens.blocks is tokens.open_requests is tokens.prefix_closed is None


def test_the_ideal_hit_rate_is_what_an_unbounded_cache_reaches(tmp_path):
    workload = read_bailian(write(tmp_path / "trace.jsonl", THREE))
    stats = trace_stats(workload)
    for policy in ("lru", "fifo"):
        result = run_policy(workload, stats.distinct_tokens, policy)
        assert result.hits == round(stats.ideal_hit_rate * stats.tokens) == 20


def test_a_sweep_names_bailian_and_gets_its_block_size(tmp_path):
    spec = {"policies": ["lru"], "budget": 100, "grid": [{"workload": "t.jsonl", "format": "bailian"}]}
    (cell,) = expand(spec, base=tmp_path)
    assert cell["params"]["block_size"] == 16
    spec["grid"][0]["format"] = "mooncake"
    assert expand(spec, base=tmp_path)[0]["params"]["block_size"] == 512  # as before formats had block sizes
    spec["grid"][0]["format"] = "jsonlines"
    with pytest.raises(InputError, match="unknown format 'jsonlines'; known formats: auto, kvtheory"):
        expand(spec, base=tmp_path)


def test_block_queries_and_bailian_queries_are_never_equal():
    plain = BlockQuery((1, 2), 20, 16, 0.0, 3)
    rich = BailianQuery((1, 2), 20, 16, 0.0, 3, chat_id=1, parent_chat_id=-1, turn=1, type="text")
    assert (
        plain != rich
        and rich != plain
        and rich == BailianQuery((1, 2), 20, 16, 0.0, 3, chat_id=1, parent_chat_id=-1, turn=1, type="text")
    )
    assert rich != BailianQuery((1, 2), 20, 16, 0.0, 3, chat_id=1, parent_chat_id=-1, turn=2, type="text")


def test_the_docs_list_the_registered_formats():
    """docs/formats.md's ``--format`` list and detection table name exactly the registered formats."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    assert f"`--format {'|'.join(format_names())}`" in docs
    section = docs.split("**Detection**", 1)[1].split("### ", 1)[0]
    rows = {line.split("|")[2].strip(" `") for line in section.splitlines() if line.startswith("| ")}
    assert rows - {"format", "---"} == set(TRACE_FORMATS)


@pytest.mark.parametrize("value", ["0", "-16", "1.5", "abc", str(2**41)])
def test_trace_stats_refuses_a_bad_block_size_in_one_line(tmp_path, capsys, value):
    path = write(tmp_path / "trace.jsonl", THREE)
    with pytest.raises(SystemExit) as exited:
        main(["trace-stats", "--workload", str(path), "--hash-block-size", value])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and "--hash-block-size" in err


def test_a_block_size_the_lines_do_not_fit_is_the_first_lines_error(tmp_path, capsys):
    path = write(tmp_path / "trace.jsonl", THREE)
    code, _, err = run_cli(capsys, "trace-stats", "--workload", path, "--hash-block-size", "8")
    # r1: 20 tokens in 2 blocks of 8 would need 8 < 20 <= 16
    assert code == 2 and err == (
        f"kvtheory trace-stats: error: {path}:1: input_length 20 does not fit 2 block(s) of 8 tokens "
        "(it must lie in (8, 16])\n"
    )
