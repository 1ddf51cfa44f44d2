"""JSONL reading errors name file and line; appends survive a torn last line."""

from __future__ import annotations

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import JsonlAppender, read_jsonl


def test_malformed_line_is_named(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"a": 1}\n\n{"a": \n{"a": 3}\n')
    with pytest.raises(EvalsuiteError, match=r"s.jsonl:3: malformed JSON"):
        list(read_jsonl(path))


def test_non_object_and_non_utf8_lines_are_named(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(EvalsuiteError, match=r"s.jsonl:2: expected a JSON object, got list"):
        list(read_jsonl(path))
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(EvalsuiteError, match=r"s.jsonl:2: not valid UTF-8"):
        list(read_jsonl(path))


def test_torn_tail_is_tolerated_only_when_asked_and_repaired_on_append(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"i": 0}\n{"i": 1}\n{"i": 2, "text": "cut mid-wri')
    with pytest.raises(EvalsuiteError):
        list(read_jsonl(path))
    assert [r["i"] for _, r in read_jsonl(path, tolerate_torn_tail=True)] == [0, 1]
    with JsonlAppender(path) as out:
        out.write({"i": 2})
    assert [r["i"] for _, r in read_jsonl(path)] == [0, 1, 2]


def test_a_whole_last_record_without_its_newline_is_kept_on_append(tmp_path):
    """An editor that drops the file's last newline: the reader counted that row as done, the appender cut it as
    torn, and the run stopped short of it (the twentieth session's run-path round)."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}')
    assert [r for _, r in read_jsonl(path, tolerate_torn_tail=True)] == [{"a": 1}, {"a": 2}]
    with JsonlAppender(path) as out:
        out.write({"a": 3})
    assert [r for _, r in read_jsonl(path)] == [{"a": 1}, {"a": 2}, {"a": 3}]


@pytest.mark.parametrize("sync_every_s, syncs", [(0.0, 5), (3600.0, 1)])
def test_every_record_is_flushed_and_fsyncs_are_at_most_one_a_period_plus_close(tmp_path, monkeypatch, sync_every_s,
                                                                                 syncs):
    synced: list[int] = []
    monkeypatch.setattr("evalsuite.jsonl.os.fsync", synced.append)
    path = tmp_path / "c.jsonl"
    with JsonlAppender(path, sync_every_s=sync_every_s) as out:
        for i in range(5):
            out.write({"i": i})
            assert [r["i"] for _, r in read_jsonl(path)] == list(range(i + 1))  # on the OS's side at once
    assert len(synced) == syncs  # one a record, or only at close (nothing left unsynced: no second fsync)


@pytest.mark.parametrize("name, content, message", [
    ("garbage.jsonl.gz", b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"not deflate at all", "cannot read"),
    ("hugeint.jsonl", b'{"task_id": ' + b"9" * 5000 + b"}\n", "1: JSON this reader refuses: ValueError"),
    ("deep.jsonl", b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n", "1: JSON this reader refuses: RecursionError"),
])
def test_json_python_refuses_to_hold_is_one_line_naming_the_file(tmp_path, name, content, message):
    """A gz of garbage, an integer past Python's 4,300 digits, nesting past the stack: tracebacks before (red-team
    round 11), for --task-data and evaluate's samples alike."""
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(EvalsuiteError, match="^" + str(path)) as caught:
        list(read_jsonl(path))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    import os

    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    with pytest.raises(EvalsuiteError, match="not a regular file"):
        list(read_jsonl(fifo))
