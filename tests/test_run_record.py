"""The typed run record (:mod:`evalsuite.runs.record`) and the finishing path ``run`` and ``evaluate`` share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.runs.invocations import earlier_invocations
from evalsuite.runs.record import RUN_RECORD_SCHEMA, RunRecord
from evalsuite.runs.resume import finished_record
from sandbox import detect_isolation

needs_sandbox = pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap")


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    """A finished 3-problem run of the reference model, with its leaderboard."""
    if detect_isolation() == "none":
        pytest.skip("needs bubblewrap")
    root = tmp_path_factory.mktemp("record")
    assert main(["run", "--models", "reference", "--tasks", "humaneval", "--limit", "3", "--k", "1",
                 "--output", str(root / "runs"), "--leaderboard-dir", str(root / "lb"), "--quiet"]) == 0
    return root


def _record_path(root: Path) -> Path:
    [path] = (root / "runs").glob("*/record.json")
    return path


@needs_sandbox
def test_a_written_record_reads_back_key_for_key(reference_run):
    text = _record_path(reference_run).read_text(encoding="utf-8")
    record = RunRecord.read(_record_path(reference_run))
    assert record.schema == RUN_RECORD_SCHEMA and record.status == "complete"
    assert record.task.problem_set.n_problems == 3 and record.badges() == ("partial 3/164",)
    # the same keys, values and order as written: to_json is what the pipeline wrote
    assert json.dumps(record.to_json(), indent=2, ensure_ascii=False) + "\n" == text
    assert list(record.to_json())[:3] == ["schema", "run_id", "request_key"]
    assert record.model.id == json.loads(text)["model"]["id"] and record.model.details["backend"]


def test_an_older_record_reads_and_is_not_resumed_without_its_model(tmp_path):
    """Records written before ``asking``, ``request_key`` and ``invocations`` existed still read; resume skips them
    (it cannot know how they asked) and rebuilds their one invocation from the old fields."""
    folder = tmp_path / "runs" / "m__humaneval__abc"
    folder.mkdir(parents=True)
    old = {"schema": RUN_RECORD_SCHEMA, "run_id": "m__humaneval__abc", "invocation_id": "i1", "status": "complete",
           "started_at": "2025-01-01T00:00:00+00:00", "finished_at": "2025-01-01T00:01:00+00:00",
           "identity": {"model": "m"}, "model": {"requested": "m", "id": "m", "backend": "hf"},
           "task": {"name": "humaneval", "n_problems": 1}, "prompt": {"style": "base"},
           "sampling": {"n": 1}, "generation_stats": {"completions_generated_now": 1, "tokens_generated_now": 7},
           "timings_s": {"generate": 2.5, "load": 1.0}, "someday": "kept"}
    (folder / "record.json").write_text(json.dumps(old))
    (folder / "completions.jsonl").write_text(json.dumps({"task_id": "HumanEval/0", "completion_id": 0}) + "\n")
    record = RunRecord.read(folder / "record.json")
    assert record.opened_fence is None and record.request_key is None and record.model.display_name is None
    assert record.extra == {"someday": "kept"} and record.to_json()["someday"] == "kept"
    assert "asking" not in record.to_json()
    assert finished_record(tmp_path / "runs", "m", "humaneval", "any-key", 1, {"HumanEval/0"}) is None
    [rebuilt] = earlier_invocations(record, lambda: [])
    assert rebuilt["status"] == "complete" and rebuilt["tokens_generated"] == 7 and rebuilt["generate_s"] == 2.5


@needs_sandbox
def test_run_and_evaluate_finish_alike(reference_run, tmp_path):
    """``evaluate`` of a run's own completions labels the same problem subset the same way, and its leaderboard
    entry carries the same problem-set hash and score as the run's."""
    run_folder = _record_path(reference_run).parent
    assert main(["evaluate", str(run_folder / "completions.jsonl"), "--task", "humaneval", "--k", "1",
                 "--output", str(tmp_path / "ev"), "--leaderboard-dir", str(tmp_path / "lb"), "--quiet"]) == 0
    [ran] = json.loads((reference_run / "lb" / "leaderboard.json").read_text())["entries"]
    [scored] = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())["entries"]
    assert ran["settings"]["problem_set"] == scored["settings"]["problem_set"] is not None
    assert ran["metrics"] == scored["metrics"] and ran["n_problems"] == scored["n_problems"] == 3
    for folder in (run_folder, tmp_path / "ev"):  # each page links back to its leaderboard and says partial
        page = (folder / "report.html").read_text(encoding="utf-8")
        assert "partial 3/164" in page and "index.html" in page
