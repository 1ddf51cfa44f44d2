"""Benchmarks added as data: a jsonl file plus a YAML spec in a --task-dir, no Python, run end to end."""

from __future__ import annotations

import re

import json
import textwrap
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import read_jsonl
from evalsuite.tasks.discovery import TaskRegistry
from sandbox import detect_isolation

SPEC_DIR = Path(__file__).parent / "data" / "declarative"
needs_sandbox = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")

# A user's benchmark in MBPP+'s style: a script that calls the function by name, found from the tests.
USER_ROWS = [
    {"uid": "a", "ask": "Return the sum of the squares of xs.", "reference": "def sum_squares(xs):\n    return sum(x * x for x in xs)\n",
     "tests": "for xs, want in [([1, 2], 5), ([], 0), ([-3], 9)]:\n    assert sum_squares(xs) == want\n"},
    {"uid": "b", "ask": "Return s reversed.", "reference": "def reverse(s):\n    return s[::-1]\n",
     "tests": "for s in ['abc', '', 'aa']:\n    assert reverse(s) == ''.join(reversed(s))\n"},
]
USER_SPEC = textwrap.dedent('''\
    name: userbench
    description: "a user's benchmark: two problems"
    data: problems.jsonl
    prompt: "# {ask}\\n"
    stop_sequences: ["\\n#", "\\nassert"]
    id_field: uid
    test_field: tests
    test_style: script
    solution_field: reference
''')


def write_user_bench(directory: Path) -> Path:
    directory.mkdir()
    (directory / "problems.jsonl").write_text("".join(json.dumps(row) + "\n" for row in USER_ROWS))
    (directory / "task_userbench.yaml").write_text(USER_SPEC)
    return directory


def test_spec_files_are_discovered_like_task_modules(capsys):
    assert main(["tasks", "--task-dir", str(SPEC_DIR)]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("wordbench"))
    assert " 3 " in line and "spec:" in line and "task_wordbench.yaml" in line
    task = TaskRegistry.discover([SPEC_DIR]).get("wordbench")
    problem = task.problems()[0]
    assert problem.task_id == "wordbench/1" and problem.entry_point == "longest_word"
    assert problem.prompt == ("# Return the longest word of text (the first one on ties).\n"
                              "# Example: assert longest_word('a bb ccc dd') == 'ccc'\ndef longest_word(text):\n")
    assert task.stop_sequences[-1] == "\nassert" and task.provenance()["spec"]["test_style"] == "asserts"


@needs_sandbox
def test_a_users_jsonl_and_spec_run_end_to_end(tmp_path, capsys):
    bench = write_user_bench(tmp_path / "bench")
    runs = tmp_path / "runs"
    assert main(["run", "--tasks", "userbench,wordbench", "--task-dir", str(bench), "--task-dir", str(SPEC_DIR),
                 "--quiet", "--output", str(runs), "--no-leaderboard"]) == 0
    out = capsys.readouterr().out
    assert sum(bool(re.search(r"1\.000 \[0\.\d{3}, 1\.000\]", line)) for line in out.splitlines()) == 2  # Wilson
    record = json.loads(next(runs.glob("reference__userbench__*/record.json")).read_text())
    assert record["task"]["provenance"]["files"][0]["path"].endswith("problems.jsonl")
    assert record["task"]["prompt_template"] == "# {ask}\n"

    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in [
        {"task_id": "a", "completion": "def sum_squares(xs):\n    return sum(xs) ** 2\n"},
        {"task_id": "b", "completion": "def reverse(s):\n    return s[::-1]\n"},
    ]))
    assert main(["evaluate", str(samples), "--task", "userbench", "--task-dir", str(bench), "--k", "1",
                 "--output", str(tmp_path / "eval"), "--quiet"]) == 0
    assert [r["status"] for _, r in read_jsonl(tmp_path / "eval" / "results.jsonl")] == ["failed", "passed"]


@pytest.mark.parametrize("change, message", [
    ({"promt": "{ask}"}, "unknown key\\(s\\) promt"),
    ({"hub": {"id": "org/bench"}}, "pinned 'revision'"),
    ({"test_style": "doctest"}, "'test_style' must be one of check, asserts, script"),
    ({"test_field": None}, "missing required key\\(s\\) test_field"),
    ({"stop_sequences": "\n#"}, None),  # a single string is accepted as one stop sequence
])
def test_spec_mistakes_are_one_line_naming_the_file(tmp_path, change, message):
    import yaml

    bench = write_user_bench(tmp_path / "bench")
    spec = yaml.safe_load(USER_SPEC)
    spec.update(change)
    spec = {k: v for k, v in spec.items() if v is not None}
    (bench / "task_userbench.yaml").write_text(yaml.safe_dump(spec))
    if message is None:
        assert TaskRegistry.discover([bench]).get("userbench").stop_sequences == ("\n#",)
        return
    with pytest.raises(EvalsuiteError, match=f"task_userbench.yaml: .*{message}"):
        TaskRegistry.discover([bench])
