"""The engine never breaks a run (acceptance 2), through `evalsuite run` on the engine's CPU path.

A failure injected at set-up, one mid-run after some completions are out, and an out-of-memory error
mid-run: every run completes, keeps what the engine had made, records why in ``engine_fallback`` /
``engine_retries``, and in float32 its completions equal a clean run's (plain transformers generate's, which
the clean engine run equals too).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main as cli_main
from test_generation_e2e import only_run_dir

FLAGS = ["--n", "3", "--limit", "4", "--temperature", "0.8", "--max-new-tokens", "12", "--dtype", "float32",
         "--device", "cpu", "--no-leaderboard", "--quiet", "--seed", "7"]


def run(model: Path, output: Path, engine: str, monkeypatch, fault: str | None = None) -> tuple[dict, dict]:
    if fault is None:
        monkeypatch.delenv("EVALSUITE_ENGINE_FAULT", raising=False)
    else:
        monkeypatch.setenv("EVALSUITE_ENGINE_FAULT", fault)
    assert cli_main(["run", "--models", str(model), "--output", str(output), "--engine", engine, *FLAGS]) == 0
    run_dir = only_run_dir(output)
    rows = [json.loads(line) for line in (run_dir / "completions.jsonl").read_text().splitlines()]
    texts = {(r["task_id"], r["completion_id"]): r["raw_completion"] for r in rows}
    assert len(texts) == len(rows) == 12  # every sample once: nothing lost, nothing made twice
    return texts, json.loads((run_dir / "record.json").read_text())


@pytest.fixture(scope="module")
def clean(tiny_model_dir, tmp_path_factory):
    """Plain transformers generate's completions for the tiny GPT-J (fused q/k/v/fc_in on the engine)."""
    model = tiny_model_dir("gptj")
    monkeypatch = pytest.MonkeyPatch()
    try:
        texts, record = run(model, tmp_path_factory.mktemp("clean"), "transformers", monkeypatch)
    finally:
        monkeypatch.undo()
    assert record["model"]["engine"] == "transformers"
    return model, texts


def test_the_clean_engine_run_equals_plain_generate(clean, tmp_path, monkeypatch):
    model, expected = clean
    texts, record = run(model, tmp_path, "evalsuite", monkeypatch)
    assert record["model"]["engine"]["name"] == "evalsuite" and record["model"]["engine_fallback"] is None
    assert record["model"]["engine"]["fused_projections"] is True
    assert texts == expected


def test_a_failure_at_set_up_runs_plain_generate(clean, tmp_path, monkeypatch, capsys):
    model, expected = clean
    texts, record = run(model, tmp_path, "evalsuite", monkeypatch, fault="setup")
    assert record["status"] == "complete" and record["model"]["engine"] == "transformers"
    assert record["model"]["engine_fallback"].startswith("engine set-up failed (RuntimeError: injected")
    assert "engine set-up failed" in capsys.readouterr().err
    assert texts == expected


def test_a_failure_mid_run_keeps_the_engines_completions_and_plain_generate_makes_the_rest(
        clean, tmp_path, monkeypatch, capsys):
    model, expected = clean
    texts, record = run(model, tmp_path, "evalsuite", monkeypatch, fault="after:5")
    fallback = record["model"]["engine_fallback"]
    assert fallback.startswith("engine failed mid-run after ")
    made_by_engine = int(fallback.split("after ")[1].split()[0])
    assert 5 <= made_by_engine < 12  # some by the engine, kept; the rest by plain generate
    assert "plain transformers generate made the rest" in capsys.readouterr().err
    assert texts == expected


def test_out_of_memory_mid_run_retries_with_fewer_rows(clean, tmp_path, monkeypatch):
    model, expected = clean
    texts, record = run(model, tmp_path, "evalsuite", monkeypatch, fault="oom:3")
    assert record["model"]["engine_fallback"] is None and record["model"]["engine"]["name"] == "evalsuite"
    [retry] = record["model"]["engine_retries"]
    assert retry.startswith("engine out of memory with 12 rows after 0 completions (")
    assert "injected out of memory at decode step 3" in retry  # the allocator's own words, to find the edge
    assert retry.endswith("retrying the rest with 6 rows")
    assert record["model"]["engine"]["rows"] == 6
    assert texts == expected


def test_a_bad_fault_value_is_refused(clean, tmp_path, monkeypatch, capsys):
    model, _ = clean
    monkeypatch.setenv("EVALSUITE_ENGINE_FAULT", "sometimes")
    argv = ["run", "--models", str(model), "--output", str(tmp_path), "--engine", "evalsuite", *FLAGS]
    assert cli_main(argv) != 0
    assert "EVALSUITE_ENGINE_FAULT='sometimes'" in capsys.readouterr().err
