"""Trace formats (docs/formats.md §Trace formats): Mooncake block traces equal their token expansion hit for hit,
the flat readers read hand-written files, and bad input is one file:line error."""

import struct

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvtheory import ONLINE_POLICIES, InputError, PrefixTrie, Workload, run_fif, run_policy, write_workload
from kvtheory.model.query import BlockQuery
from kvtheory.model.traces import detect_format, read_workload, write_mooncake
from kvtheory.model.traces.mooncake import read_mooncake
from kvtheory.optimum.exact import solve_optimum
from kvtheory.workloads import generate


def random_block_trace(seed: int, block_size: int, requests: int = 40) -> Workload:
    """Requests on a random tree of blocks (each tree node its own id, so ids are consistent): every request
    is a root path, its last block of random length 1..block_size, so one id appears partial and full."""
    rng = np.random.default_rng(seed)
    parents = {}  # block id -> parent block id (None at the root)
    queries = []
    for _ in range(requests):
        path = []
        node = None
        while True:
            children = [b for b, p in parents.items() if p == node]
            if children and rng.random() < 0.7:
                node = int(rng.choice(children))
            elif len(path) < 5 and (not path or rng.random() < 0.5):
                node = len(parents) * 3 + 1  # spread-out ids, not 0..n-1
                parents[node] = path[-1] if path else None
            else:
                break
            path.append(node)
            if rng.random() < 0.3:
                break
        if not path:
            continue
        last = int(rng.integers(1, block_size + 1))
        queries.append(BlockQuery(tuple(path), block_size * (len(path) - 1) + last, block_size, None, None))
    return Workload(tuple(queries))


def _both(tmp_path, workload: Workload, block_size: int):
    """The trace read as Mooncake, and its token expansion read as kvtheory JSON Lines."""
    write_mooncake(workload, tmp_path / "trace.jsonl")
    write_workload(Workload(tuple(_expanded(q) for q in workload)), tmp_path / "tokens.jsonl")
    blocks = read_workload(tmp_path / "trace.jsonl", "mooncake", block_size)
    tokens = read_workload(tmp_path / "tokens.jsonl", "kvtheory")
    return blocks, tokens


def _expanded(query: BlockQuery):
    from kvtheory.model.query import Query

    return Query.of(query.tokens, query.arrival, query.output_len)


TRACES = [(seed, 4) for seed in range(4)] + [(10, 1), (11, 3)]


@pytest.mark.parametrize("seed,block_size", TRACES)
def test_mooncake_reading_equals_the_token_expansion_for_every_policy_and_fif(tmp_path, seed, block_size):
    blocks, tokens = _both(tmp_path, random_block_trace(seed, block_size), block_size)
    assert all(isinstance(q, BlockQuery) for q in blocks)
    shared = {h for a in blocks for b in blocks if a is not b for h in set(a.hash_ids) & set(b.hash_ids)}
    partial = {q.hash_ids[-1] for q in blocks if q.length % block_size}
    full = {h for q in blocks for h in q.hash_ids[: q.length // block_size]}
    assert shared and (block_size == 1 or partial & full), "the trace must share blocks, partially and fully"
    bt, tt = blocks.trie, tokens.trie
    assert (bt.parent, bt.depth, bt.edge_len, bt.end) == (tt.parent, tt.depth, tt.edge_len, tt.end)
    assert blocks.total_tokens == tokens.total_tokens
    for budget in sorted({blocks.max_length, blocks.max_length + block_size, bt.distinct_tokens // 2}):
        if budget < blocks.max_length:
            continue
        for name in ONLINE_POLICIES:
            for policy_seed in (0, 1):
                a = run_policy(blocks, budget, name, seed=policy_seed)
                b = run_policy(tokens, budget, name, seed=policy_seed)
                assert np.array_equal(a.query_hits, b.query_hits), (name, budget)
        a, b = run_fif(blocks, budget), run_fif(tokens, budget)
        assert np.array_equal(a.query_hits, b.query_hits)


def test_shared_blocks_are_shared_and_a_partial_block_is_a_head_of_the_full_one():
    blocks = Workload(
        (
            BlockQuery((7, 9), 6, 4),  # 4 + 2 tokens: block 9 partial
            BlockQuery((7, 9, 3), 9, 4),  # block 9 full here: shares 6 tokens with the first
            BlockQuery((7, 8), 8, 4),  # shares block 7 only
        )
    )
    hits = run_policy(blocks, 100, "lru").query_hits.tolist()
    assert hits == [0, 6, 4]


def test_the_chat_generator_round_trips_through_the_mooncake_format(tmp_path):
    workload = generate("chat-blocks", {"conversations": "6", "block_size": "16", "system_len": "40"}, seed=3)
    write_mooncake(workload, tmp_path / "chat.jsonl")
    again = read_workload(tmp_path / "chat.jsonl", "auto", block_size=16)
    assert detect_format(tmp_path / "chat.jsonl") == "mooncake"
    assert list(again) == list(workload)
    arrivals = [q.arrival for q in again]
    assert arrivals == sorted(arrivals) and arrivals[0] == 0.0


def test_chat_trace_equals_its_expansion_for_every_policy_fif_and_batches(tmp_path):
    workload = generate(
        "chat-blocks",
        {"conversations": "8", "turns": "1,3,5", "block_size": "8", "system_len": "20", "user_len": "10"},
        seed=1,
    )
    blocks, tokens = _both(tmp_path, workload, 8)
    budget = blocks.max_length * 2
    for name in ONLINE_POLICIES:
        a = run_policy(blocks, budget, name, batch=2, seed=0)
        assert np.array_equal(a.query_hits, run_policy(tokens, budget, name, batch=2, seed=0).query_hits)
    assert run_fif(blocks, budget).misses == run_fif(tokens, budget).misses
    exact_blocks = solve_optimum(blocks, budget, batch=2, time_limit=60)
    exact_tokens = solve_optimum(tokens, budget, batch=2, time_limit=60)
    assert (exact_blocks.status, exact_blocks.misses) == (exact_tokens.status, exact_tokens.misses)


# -- flat traces -------------------------------------------------------------------------------------------
def _oracle(tmp_path, records) -> str:
    path = tmp_path / "t.oracleGeneral"
    path.write_bytes(b"".join(struct.pack("<IQIq", *r) for r in records))
    return path


def test_oracle_general_reader_against_a_hand_written_file(tmp_path):
    path = _oracle(tmp_path, [(1, 5, 100, 2), (2, 2**64 - 1, 7, -1), (4, 5, 100, -1)])
    workload = read_workload(path, "auto")
    assert workload.token_lists() == [[5], [-1], [5]]
    assert [q.arrival for q in workload] == [1.0, 2.0, 4.0]
    assert run_policy(workload, 1, "lru").misses == 3 and run_policy(workload, 2, "lru").misses == 2
    assert workload.source == str(path)  # the file it came from, as every reader records it


def test_oracle_general_ids_stream_in_chunks_either_way(tmp_path):
    """The lazy columns of an oracleGeneral file: its ids chunk by chunk (forward, and the same chunks from the
    last), equal to the whole id column; every query one token, counted without reading the file."""
    ids = [7, 2**64 - 1, 0, 7, 2**63, 5, 5]
    path = _oracle(tmp_path, [(t, x, 1, -1) for t, x in enumerate(ids)])
    workload = read_workload(path, "auto")
    forward = [chunk.tolist() for chunk in workload.queries.id_chunks(3)]
    backward = [chunk.tolist() for chunk in workload.queries.id_chunks(3, reverse=True)]
    assert forward == backward[::-1] == [[7, -1, 0], [7, -(2**63), 5], [5]]
    assert sum(forward, []) == workload.queries.tokens.tolist()
    assert workload.lengths.tolist() == [1] * len(ids) and workload.total_tokens == len(ids)


def test_csv_and_plain_text_readers_against_hand_written_files(tmp_path):
    (tmp_path / "a.csv").write_text("obj_id,size\n3,10\n\n4,1\n3,10\n")
    (tmp_path / "b.txt").write_text("3\n4\n3\n")
    (tmp_path / "c").write_text("3\n4\n3\n")
    for name in ("a.csv", "b.txt", "c"):
        workload = read_workload(tmp_path / name, "auto")
        assert workload.token_lists() == [[3], [4], [3]], name
    assert read_workload(tmp_path / "a.csv", "csv").where(2) == f"{tmp_path / 'a.csv'}:5"


def test_csv_ids_are_64_bit_with_unsigned_ids_wrapped_to_the_same_bits(tmp_path):
    ids = [-(2**63), 2**63 - 1, 2**63, 2**64 - 1, 0]
    (tmp_path / "ids.csv").write_text("".join(f"{x},1\n" for x in ids))
    workload = read_workload(tmp_path / "ids.csv", "csv")
    assert workload.token_lists() == [[-(2**63)], [2**63 - 1], [-(2**63)], [-1], [0]]
    assert workload.trie.n_nodes == 1 + 4  # 2**63 is -(2**63) again: one object
    for bad in (2**64, -(2**63) - 1):
        (tmp_path / "bad.csv").write_text(f"1\n{bad}\n")
        with pytest.raises(InputError, match=f"bad.csv:2: object id '{bad}' is not a 64-bit integer"):
            read_workload(tmp_path / "bad.csv", "csv")
    (tmp_path / "header.csv").write_text("id,size\n5,1\nx,1\n")
    with pytest.raises(InputError, match="header.csv:3: object id 'x'"):
        read_workload(tmp_path / "header.csv", "csv")
    (tmp_path / "headers.csv").write_text("id\nname\n5\n")
    with pytest.raises(InputError, match="headers.csv:2: object id 'name'"):
        read_workload(tmp_path / "headers.csv", "csv")  # only the first line may be a header


def test_auto_detects_each_format_from_the_name_or_the_content(tmp_path):
    (tmp_path / "w").write_text('  {"tokens": [1, 2]}\n')
    (tmp_path / "m").write_text('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}\n')
    (tmp_path / "torn").write_text('{"tokens": [1, 2], "hash_ids_note": 1')  # first line not valid JSON
    (tmp_path / "torn-m").write_text('{"hash_ids": [1')
    (tmp_path / "ids").write_text("5\n6\n")
    (tmp_path / "IDS.CSV").write_bytes(b"\x00\x01")  # the name decides before the content
    (tmp_path / "t.BIN").write_text("5\n")
    (tmp_path / "raw").write_bytes(struct.pack("<IQIq", 1, 5, 1, -1))  # not UTF-8
    (tmp_path / "raw-ascii").write_bytes(struct.pack("<IQIq", 1, 5, 1, 2))  # UTF-8, but with NUL bytes
    (tmp_path / "cut").write_bytes(b"5\n" * 10 + "é".encode()[:1])  # text cut inside a character
    expected = {
        "w": "kvtheory",
        "m": "mooncake",
        "torn": "kvtheory",
        "torn-m": "mooncake",
        "ids": "csv",
        "IDS.CSV": "csv",
        "t.BIN": "oracle-general",
        "raw": "oracle-general",
        "raw-ascii": "oracle-general",
        "cut": "csv",
    }
    assert {name: detect_format(tmp_path / name) for name in expected} == expected


def test_detection_rules_at_their_edges(tmp_path):
    """The name decides first (``.oracleGeneral``, ``.txt``, whatever the content); then the first line
    alone, parsed (a later line's ``hash_ids``, or ``"hash_ids"`` as a string value, do not make a Mooncake
    trace); then the first 64 KiB only: a NUL or a byte that is not UTF-8 further on is not looked at, and a
    bad byte in the last 4 bytes of those 64 KiB counts as a character cut by the 64 KiB limit."""
    head = 1 << 16
    files = {
        "a.oracleGeneral": b'{"tokens": [1]}\n',
        "a.txt": b'{"tokens": [1]}\n',
        "second": b'{"tokens": [1]}\n{"tokens": [2], "hash_ids": [1]}\n{"tokens": [3]}\n',
        "value": b'{"tokens": [1], "note": "hash_ids"}\n',
        "late-nul": b"5\n" * (head // 2) + b"\x00",
        "early-nul": b"5\n" * (head // 2 - 1) + b"\x00\n",
        "cut-at-limit": b"5" * (head - 4) + b"\xff" * 10,
        "bad-before": b"5" * (head - 5) + b"\xff" * 10,
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    assert {name: detect_format(tmp_path / name) for name in files} == {
        "a.oracleGeneral": "oracle-general",
        "a.txt": "csv",
        "second": "kvtheory",
        "value": "kvtheory",
        "late-nul": "csv",
        "early-nul": "oracle-general",
        "cut-at-limit": "csv",
        "bad-before": "oracle-general",
    }


def test_csv_ids_are_read_exactly_from_the_first_field(tmp_path):
    (tmp_path / "ids.csv").write_text("126,1,x\n1000,2,y,z\n9223372036854775807\n")
    assert read_workload(tmp_path / "ids.csv", "csv").token_lists() == [[126], [1000], [2**63 - 1]]


def test_mooncake_defaults_to_512_token_blocks_and_names_file_lines(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        '\n{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}\n'
        '{"timestamp": 1, "input_length": 513, "output_length": 1, "hash_ids": [1, 2]}\n'
    )
    for workload in (read_workload(path, "mooncake"), read_mooncake(path)):
        assert [q.length for q in workload] == [512, 513] and workload.where(1) == f"{path}:3"
    path.write_text('{"timestamp": 0, "input_length": 513, "output_length": 1, "hash_ids": [1]}\n')
    with pytest.raises(InputError) as caught:
        read_workload(path, "mooncake")
    assert (
        str(caught.value)
        == f"{path}:1: input_length 513 does not fit 1 block(s) of 512 tokens (it must lie in (0, 512])"
    )


def test_a_columnar_workload_slices_with_its_arrivals_and_output_lengths():
    from kvtheory.model.workload import QueryColumns

    columns = QueryColumns(
        np.array([1, 2, 3, 4, 5]), np.array([0, 2, 3, 5]), np.array([0.5, 1.5, 2.5]), np.array([7, 8, 9])
    )
    assert [(q.tokens.tolist(), q.arrival, q.output_len) for q in columns] == [
        ([1, 2], 0.5, 7),
        ([3], 1.5, 8),
        ([4, 5], 2.5, 9),
    ]
    tail = columns[1:]
    assert [(q.tokens.tolist(), q.arrival, q.output_len) for q in tail] == [([3], 1.5, 8), ([4, 5], 2.5, 9)]
    assert [q.tokens.tolist() for q in columns[::2]] == [[1, 2], [4, 5]]
    assert [q.tokens.tolist() for q in columns[2:1]] == []
    assert columns[-1].tokens.tolist() == [4, 5] and columns == tuple(columns)
    workload = Workload(columns)
    assert workload.lengths.tolist() == [2, 1, 2] and workload.total_tokens == 5


def test_columns_from_narrower_integer_arrays_are_int64_and_equal_with_equal_hashes():
    """Tokens and offsets are cast to int64 on construction: columns read from int32 or uint16 arrays equal
    the int64 ones and hash alike (the hash reads the raw bytes, so a kept narrower dtype would break the
    hash/equality contract), and the kernels receive the one dtype they are compiled for."""
    from kvtheory.model.workload import QueryColumns

    wide = QueryColumns(np.array([5, 6, 5], dtype=np.int64), np.array([0, 2, 3], dtype=np.int64))
    for dtype in (np.int32, np.uint16):
        narrow = QueryColumns(np.array([5, 6, 5], dtype=dtype), np.array([0, 2, 3], dtype=dtype))
        assert narrow.tokens.dtype == np.int64 and narrow.offsets.dtype == np.int64
        assert narrow == wide and hash(narrow) == hash(wide)


# -- bad input ---------------------------------------------------------------------------------------------
GOOD = '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}'


@pytest.mark.parametrize(
    "line,message",
    [
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2.5]}', "hash id 2.5 is not"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": 3}', "hash_ids"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, true]}', "hash id True is not"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": []}', "'hash_ids' is empty"),
        ('{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1, 2]}', "input_length 4"),
        ('{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": [1, 2]}', "input_length 9"),
        ('{"timestamp": -1, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}', "'timestamp'"),
        ('{"timestamp": 1.5, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}', "'timestamp'"),
        ('{"input_length": 5, "output_length": 1, "hash_ids": [1, 2]}', "missing 'timestamp'"),
        ('{"timestamp": 0, "input_length": 5, "hash_ids": [1, 2]}', "missing 'output_length'"),
        ("[1, 2]", "JSON object"),
        ('{"timestamp": 0,', "not valid JSON"),
    ],
)
def test_a_bad_mooncake_line_is_named_with_file_and_line(tmp_path, line, message):
    path = tmp_path / "m.jsonl"
    path.write_text('{"timestamp": 3, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}\n\n' + line + "\n")
    with pytest.raises(InputError) as info:
        read_workload(path, "mooncake", block_size=4)
    text = str(info.value)
    assert text.startswith(f"{path}:3: ") and message in text and "\n" not in text


def test_decreasing_timestamps_are_an_error(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(GOOD.replace('"timestamp": 0', '"timestamp": 10') + "\n" + GOOD + "\n")
    with pytest.raises(InputError, match=rf"^{path}:2: timestamp 0 is before the previous line's 10$"):
        read_workload(path, "mooncake", block_size=4)


def test_unknown_mooncake_keys_are_ignored_with_one_warning(tmp_path, capsys):
    path = tmp_path / "m.jsonl"
    path.write_text(GOOD.replace("{", '{"session": 1, ') + "\n" + GOOD + "\n")
    assert len(read_workload(path, "auto", block_size=4)) == 2
    assert capsys.readouterr().err.count("'session'") == 1


def test_oracle_general_size_must_be_a_multiple_of_24(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(b"\x00" * 25)
    with pytest.raises(InputError, match="25 bytes is not a multiple of 24"):
        read_workload(path, "auto")


def test_a_csv_id_that_is_not_an_integer_names_its_line(tmp_path):
    (tmp_path / "a.csv").write_text("1\n2\nx\n")
    with pytest.raises(InputError, match=r"a\.csv:3: object id 'x'"):
        read_workload(tmp_path / "a.csv", "auto")


def test_unknown_format_and_bad_block_size_are_errors(tmp_path):
    (tmp_path / "m.jsonl").write_text(GOOD + "\n")
    with pytest.raises(InputError, match="unknown format 'parquet'"):
        read_workload(tmp_path / "m.jsonl", "parquet")
    with pytest.raises(InputError, match="hash-block-size"):
        read_workload(tmp_path / "m.jsonl", "mooncake", block_size=0)


# -- sweeps over files, routing on a trace's arrivals ----------------------------------------------------
def test_a_sweep_grid_may_name_a_trace_file(tmp_path):
    from kvtheory.experiments.grid import expand
    from kvtheory.experiments.sweep import run_cell
    from kvtheory.ratio import competitive_ratio

    workload = generate("chat-blocks", {"conversations": "6", "block_size": "16", "system_len": "40"}, seed=4)
    write_mooncake(workload, tmp_path / "chat.jsonl")
    spec = {
        "policies": ["lru", "rlt"],
        "policy_seeds": 2,
        "grid": [{"workload": "chat.jsonl", "format": "mooncake", "block_size": 16, "budget": ["L_max", "2 * L_max"]}],
    }
    cells = expand(spec, base=tmp_path)
    assert len(cells) == 4 and {c["family"] for c in cells} == {"file"}
    for cell in cells:
        record = run_cell(cell)
        budget = workload.max_length * (1 if cell["budget"] == "L_max" else 2)
        report = competitive_ratio(workload, budget, cell["policy"], seeds=cell["policy_seeds"])
        assert record["budget"] == budget and record["ratios"] == report.to_dict()["ratios"]
    with pytest.raises(InputError, match="unknown format 'jsonl'"):
        expand({**spec, "grid": [{**spec["grid"][0], "format": "jsonl"}]}, base=tmp_path)
    with pytest.raises(InputError, match="unknown key"):
        expand({**spec, "grid": [{**spec["grid"][0], "family": "gsp"}]}, base=tmp_path)


def test_route_on_a_trace_uses_its_timestamps_as_arrivals(tmp_path, capsys):
    from kvtheory.cli import main
    from kvtheory.cluster.simulation import arrival_times

    path = tmp_path / "m.jsonl"
    lines = [GOOD.replace('"timestamp": 0', f'"timestamp": {ms}') for ms in (0, 1500, 1500, 4250)]
    path.write_text("\n".join(lines) + "\n")
    workload = read_workload(path, "auto", block_size=4)
    assert arrival_times(workload, None, None).tolist() == [0.0, 1.5, 1.5, 4.25]
    assert [q.output_len for q in workload] == [1, 1, 1, 1]
    argv = ["route", "--workload", path, "--hash-block-size", 4, "--workers", 2, "--router", "round-robin"]
    argv += ["--eviction", "lru", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--json"]
    assert main([str(a) for a in argv]) == 0
    record = orjson.loads(capsys.readouterr().out)
    assert record["queries"] == 4 and record["makespan"] >= 4.25


@given(
    st.lists(
        st.tuples(st.lists(st.integers(-3, 3), min_size=1, max_size=4), st.integers(1, 3)), min_size=1, max_size=10
    )
)
def test_the_block_trie_is_the_trie_of_the_token_expansion(requests):
    """Any id sequences (even an id reused under another prefix): built from blocks or from the expanded tokens,
    the compressed trie is the same, node numbering included."""
    block_size = 3
    queries = [BlockQuery(tuple(ids), block_size * (len(ids) - 1) + last, block_size) for ids, last in requests]
    blocks = Workload(tuple(queries)).trie
    tokens = PrefixTrie([q.tokens for q in queries])
    assert (blocks.parent, blocks.depth, blocks.end) == (tokens.parent, tokens.depth, tokens.end)


def test_write_mooncake_writes_a_missing_arrival_and_output_length_as_zero(tmp_path):
    """The inverse of the reader on exact lines: arrival in ms (rounded), a missing one as 0, a missing
    output length as 0."""
    workload = Workload((BlockQuery((7, 9), 6, 4, 1.2346, 3), BlockQuery((7,), 4, 4, None, None)))
    path = tmp_path / "m.jsonl"
    write_mooncake(workload, path)
    assert [orjson.loads(line) for line in path.read_bytes().splitlines()] == [
        {"timestamp": 1235, "input_length": 6, "output_length": 3, "hash_ids": [7, 9]},
        {"timestamp": 0, "input_length": 4, "output_length": 0, "hash_ids": [7]},
    ]
