"""``evalsuite run`` end to end on CPU with tiny random-weight checkpoints loaded by path.
Random weights score 0: the test checks the records, not the score.

The issue's command is ``evalsuite run --models PATH --n 5 --limit 5``; sampling flags are added because
the runner refuses n > 1 with greedy decoding, and --max-new-tokens 24 keeps the suite fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main as cli_main
from tiny_models import ACCEPTANCE_FAMILIES

RUN_FLAGS = ["--n", "5", "--limit", "5", "--temperature", "0.8", "--max-new-tokens", "24", "--no-leaderboard",
             "--quiet"]


def only_run_dir(output: Path) -> Path:
    [run_dir] = [p for p in output.iterdir() if p.is_dir()]
    return run_dir


def check_run_records(run_dir: Path, backend: str) -> dict:
    completions = [json.loads(line) for line in (run_dir / "completions.jsonl").read_text().splitlines()]
    keys = sorted((c["task_id"], c["completion_id"]) for c in completions)
    assert keys == [(f"HumanEval/{p}", i) for p in range(5) for i in range(5)]
    assert all(c["finish_reason"] in ("stop", "eos", "length") for c in completions)
    results = (run_dir / "results.jsonl").read_text().splitlines()
    assert len(results) == 25
    record = json.loads((run_dir / "record.json").read_text())
    assert record["status"] == "complete" and record["model"]["backend"] == backend
    return record


@pytest.mark.parametrize("family", ACCEPTANCE_FAMILIES)
def test_run_end_to_end_on_a_tiny_checkpoint(family, tiny_model_dir, tmp_path):
    output = tmp_path / "runs"
    argv = ["run", "--models", str(tiny_model_dir(family)), "--device", "cpu", "--output", str(output), *RUN_FLAGS]
    assert cli_main(argv) == 0
    record = check_run_records(only_run_dir(output), "hf")
    assert record["model"]["family"] == family and record["model"]["revision"].startswith("local:")


def test_another_weight_precision_is_another_run_not_a_resume(tiny_model_dir, tmp_path):
    """bf16 and fp32 samples of one checkpoint differ: a rerun in another precision must not resume (and
    silently mix) the first run's completions; the same precision again resumes and generates nothing."""
    output = tmp_path / "runs"
    flags = ["run", "--models", str(tiny_model_dir("gpt2")), "--device", "cpu", "--output", str(output),
             "--n", "2", "--limit", "2", "--temperature", "0.8", "--max-new-tokens", "8", "--no-leaderboard",
             "--quiet"]
    assert cli_main([*flags, "--dtype", "float32"]) == 0
    assert cli_main([*flags, "--dtype", "bfloat16"]) == 0
    records = {json.loads((d / "record.json").read_text())["identity"]["weights"]: d for d in output.iterdir()}
    assert sorted(records) == ["bfloat16", "float32"]
    assert cli_main([*flags, "--dtype", "bfloat16"]) == 0
    again = json.loads((records["bfloat16"] / "record.json").read_text())
    assert len(list(output.iterdir())) == 2 and again["generation_stats"]["completions_generated_now"] == 0
