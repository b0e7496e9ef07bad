"""Reading and writing JSON Lines workloads, and the one-line errors for malformed files."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kvtheory import InputError, PrefixTrie, Query, Workload, read_workload, write_workload


def _write(tmp_path, text, name="w.jsonl"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_round_trip_keeps_tokens_arrival_and_output_len(tmp_path):
    workload = Workload((Query.of([1, 2, 3], 0.5, 4), Query.of([1, 2], None, None), Query.of([7], 2.0, 0)))
    path = tmp_path / "w.jsonl"
    write_workload(workload, path)
    again = read_workload(path)
    assert list(again) == list(workload)


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"tokens": [1, 2', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"tokens": []}', "'tokens' is empty"),
        ('{"tokens": [1, 2.5]}', "token 2.5 is not an integer"),
        ('{"tokens": [1, "a"]}', "token 'a' is not an integer"),
        ('{"tokens": [1, true]}', "token True is not an integer"),
        ('{"tokens": [1, 99999999999999999999]}', "does not fit"),
        ('{"tokens": "12"}', "'tokens' must be a non-empty list of integer token ids, got '12'"),
        ('{"tokens": [1], "arrival": -1}', "'arrival' must be a non-negative"),
        ('{"tokens": [1], "output_len": 1.5}', "'output_len' must be a non-negative integer"),
        ('{"tokens": [1,,2]}', "not valid JSON"),
    ],
)
def test_a_bad_line_is_named_with_file_and_line(tmp_path, line, message):
    path = _write(tmp_path, '{"tokens": [5]}\n\n' + line + "\n")
    with pytest.raises(InputError) as info:
        read_workload(path)
    text = str(info.value)
    assert text.startswith(f"{path}:3: ") and message in text and "\n" not in text


def test_unknown_keys_are_ignored_with_one_warning_naming_them(tmp_path, capsys):
    path = _write(tmp_path, '{"tokens": [1], "prompt": "x"}\n{"tokens": [1, 2], "arival": 3}\n{"tokens": [2]}\n')
    workload = read_workload(path)
    assert workload.token_lists() == [[1], [1, 2], [2]]
    assert workload[1].arrival is None  # the typo is not read as an arrival
    warning = capsys.readouterr().err.splitlines()
    assert len(warning) == 1
    assert str(path) in warning[0] and "'arival'" in warning[0] and "'prompt'" in warning[0]


def test_empty_and_missing_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="empty workload"):
        read_workload(_write(tmp_path, "\n  \n"))
    with pytest.raises(InputError, match="cannot read"):
        read_workload(tmp_path / "absent.jsonl")


def test_fast_and_checked_parsing_agree(tmp_path):
    lines = ['{"tokens":[3,1,2],"arrival":1.5}', '{"arrival": 2, "tokens": [ 4 , 5 ]}', '{"tokens": [-3, 4]}']
    workload = read_workload(_write(tmp_path, "\n".join(lines)))
    assert [q.tokens.tolist() for q in workload] == [[3, 1, 2], [4, 5], [-3, 4]]
    assert [q.arrival for q in workload] == [1.5, 2.0, None]


@given(
    st.lists(
        st.one_of(st.just(None), st.lists(st.integers(0, 10**18 - 1), min_size=1, max_size=4)), min_size=1, max_size=30
    )
)
@settings(max_examples=60, deadline=None)
@example([[0], None, [0], [7, 7], None])
@example([[5]])
def test_plain_files_read_in_bulk_equal_the_line_by_line_reading(tmp_path_factory, rows):
    """The bulk reader (columns, no object per line) gives the same queries, line numbers and trie as
    parsing each line on its own and building the trie from the token lists."""
    if all(row is None for row in rows):
        rows = [*rows, [1]]
    text = "".join("\n" if row is None else '{"tokens":[' + ",".join(map(str, row)) + "]}\n" for row in rows)
    path = tmp_path_factory.mktemp("plain") / "w.jsonl"
    path.write_text(text)
    workload = read_workload(path)
    expected = [(number, row) for number, row in enumerate(rows, start=1) if row is not None]
    assert [q.tokens.tolist() for q in workload] == [row for _, row in expected]
    assert [workload.where(j) for j in range(len(workload))] == [f"{path}:{number}" for number, _ in expected]
    assert workload.lengths.tolist() == [len(row) for _, row in expected]
    reference = PrefixTrie.__new__(PrefixTrie)  # the general construction, even for one-token rows
    reference._build_sorted([np.array(row, dtype=np.int64) for _, row in expected])
    assert (workload.trie.parent, workload.trie.depth, workload.trie.end) == (
        reference.parent,
        reference.depth,
        reference.end,
    )
    assert (workload.trie.tin, workload.trie.tout) == (reference.tin, reference.tout)
    if len(workload) > 1:
        tail = workload[1:]
        assert [q.tokens.tolist() for q in tail] == [row for _, row in expected[1:]]


def test_plain_files_are_checked_in_pieces_cut_at_line_ends():
    """The whole-file check runs piece by piece (``chunk`` bytes, then to the end of that line): a valid file
    passes whatever the piece size, and a bad line is found in whichever piece it falls."""
    from kvtheory.model.workload import _all_plain

    good = b'{"tokens":[1,2]}\n\n{"tokens":[30]}\n{"tokens":[4]}\n{"tokens":[5,6,7]}'
    for chunk in range(1, len(good) + 2):
        assert _all_plain(good, chunk=chunk), chunk
        assert _all_plain(good + b"\n", chunk=chunk), chunk
    lines = good.split(b"\n")
    for bad_line in range(len(lines)):
        bad = b"\n".join(line + b" " if i == bad_line else line for i, line in enumerate(lines))
        for chunk in range(1, len(bad) + 2):
            assert not _all_plain(bad, chunk=chunk), (bad_line, chunk)


def test_a_slice_or_a_selection_still_names_the_file_and_line(tmp_path):
    path = _write(tmp_path, '{"tokens":[1]}\n\n{"tokens":[2]}\n{"tokens":[3]}\n')
    workload = read_workload(path)
    assert [workload.where(j) for j in range(3)] == [f"{path}:1", f"{path}:3", f"{path}:4"]
    assert workload[1:].where(0) == f"{path}:3"
    assert workload.select([2, 0]).where(0) == f"{path}:4"
    assert [q.tokens.tolist() for q in workload.select([2, 0])] == [[3], [1]]


def test_column_slices_inside_the_workload_keep_exactly_their_queries():
    """A slice that stops before the last query: its queries, arrivals and output lengths, no more; equal
    columns hash alike, different ones (here) do not."""
    from kvtheory.model.workload import QueryColumns

    columns = QueryColumns(
        np.array([1, 2, 3, 4, 5, 6], dtype=np.int64),
        np.array([0, 2, 3, 5, 6], dtype=np.int64),
        arrival=np.array([0.0, 1.0, 2.0, 3.0]),
        output_len=np.array([7, 8, 9, 10]),
    )
    middle = columns[1:3]
    assert len(middle) == 2 and middle.offsets.tolist() == [0, 1, 3]
    assert list(middle) == [Query.of([3], 1.0, 8), Query.of([4, 5], 2.0, 9)]
    assert columns[0:0].offsets.tolist() == [0] and len(columns[2:1]) == 0
    assert hash(columns[1:3]) == hash(middle) and hash(columns[0:2]) != hash(middle)


def test_an_empty_workload_is_refused_and_where_names_a_line_only_with_both_file_and_lines():
    with pytest.raises(InputError) as caught:
        Workload(())
    assert str(caught.value) == "empty workload: it has no queries"
    queries = (Query.of([1]), Query.of([2]))
    assert Workload(queries, "w.jsonl", (3, 9)).where(1) == "w.jsonl:9"
    assert Workload(queries, "w.jsonl", None).where(1) == "query 1"
    assert Workload(queries, None, (3, 9)).where(1) == "query 1"


def test_the_bulk_reader_reads_one_digit_records_and_blank_lines():
    """Plain files are read in bulk (one numpy parse), one-token records and blank lines included: the
    line numbers are those of the file."""
    from kvtheory.model.workload import _read_plain

    data = b'{"tokens":[5]}\n\n{"tokens":[6,7]}\n{"tokens":[8]}'
    workload = _read_plain(data, Path("w.jsonl"))
    assert workload.token_lists() == [[5], [6, 7], [8]]
    assert (workload.source, workload.lines) == ("w.jsonl", (1, 3, 4))


def test_write_workload_renames_a_file_beside_the_target_with_the_mode_open_gives(tmp_path, monkeypatch):
    """The temporary file is ``.NAME.*`` in the target's folder, renamed over the target; its mode is
    0o666 less the umask; a failed write removes it and raises the first error, even when removing it fails."""
    import os

    target = tmp_path / "w.jsonl"
    workload = Workload((Query.of([1, 2]),))
    renamed = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renamed.append((src, dst)), real_replace(src, dst)))
    old_umask = os.umask(0o022)
    try:
        write_workload(workload, target)
    finally:
        os.umask(old_umask)
    ((source, destination),) = renamed
    assert Path(source).parent == tmp_path and Path(source).name.startswith(".w.jsonl.") and destination == target
    assert target.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.jsonl"]

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="^disk full$"):
        write_workload(workload, tmp_path / "x.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.jsonl"]
    monkeypatch.setattr(os, "unlink", lambda name: refuse(name, None))
    with pytest.raises(OSError, match="^disk full$"):
        write_workload(workload, tmp_path / "y.jsonl")


def test_a_plain_file_is_read_in_bulk_without_parsing_a_line(tmp_path, monkeypatch):
    """What write_workload writes without arrivals or output lengths takes the bulk path (the per-line
    parser is never called); any other line sends the whole file through the per-line parser."""
    from kvtheory.model import workload as module

    real_parse = module.parse_query_line
    parsed = []
    monkeypatch.setattr(module, "parse_query_line", lambda *args: (parsed.append(args[1]), real_parse(*args))[1])
    path = tmp_path / "w.jsonl"
    write_workload(Workload((Query.of([3, 1]), Query.of([2]))), path)
    assert read_workload(path).token_lists() == [[3, 1], [2]] and parsed == []
    path.write_text('{"tokens":[3,1]}\n{"tokens": [2]}\n')
    assert read_workload(path).token_lists() == [[3, 1], [2]] and parsed == [f"{path}:1", f"{path}:2"]
