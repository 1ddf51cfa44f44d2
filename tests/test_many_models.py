"""Several models in one command, each as if alone: a failing model does not stop the others, each model's
leaderboard entry is written as soon as it is scored, and closing a generator releases what it holds."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def broken_checkpoint(tiny_model_dir, tmp_path: Path) -> Path:
    """A checkpoint that passes every check before loading and fails to load: its weights are garbage."""
    good = tiny_model_dir("gpt2")
    bad = tmp_path / "broken-gpt2"
    bad.mkdir()
    for item in good.iterdir():
        (bad / item.name).write_bytes(b"not a safetensors file" if item.suffix == ".safetensors" else item.read_bytes())
    return bad


def evalsuite_run(models: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "evalsuite", "run", "--models", ",".join(models), "--limit", "2",
                           "--n", "1", "--max-new-tokens", "8", "--device", "cpu", "--json"],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def leaderboard_models(cwd: Path) -> list[str]:
    return [entry["model"] for entry in json.loads((cwd / "leaderboard" / "leaderboard.json").read_text())["entries"]]


@pytest.mark.parametrize("order", ["good first", "broken first"])
def test_a_failing_model_leaves_the_others_their_results_and_fails_the_command(tiny_model_dir, tmp_path, order):
    good, bad = str(tiny_model_dir("gpt2")), str(broken_checkpoint(tiny_model_dir, tmp_path))
    models = [good, bad] if order == "good first" else [bad, good]
    done = evalsuite_run(models, tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    output = json.loads(done.stdout)
    assert [score["model"] for score in output["results"]] == [Path(good).name]
    assert output["failures"][0]["model"] == "broken-gpt2" and "Error" in output["failures"][0]["error"]
    assert leaderboard_models(tmp_path) == [Path(good).name]
    assert "broken-gpt2 (FAILED)" in done.stderr and "1 model(s) failed: broken-gpt2" in done.stderr


def test_each_models_entry_is_on_the_leaderboard_before_the_next_model_loads(tiny_model_dir, tmp_path, monkeypatch):
    """The second model's load sees the first's entry already written (a command stopped during the second
    model keeps the first's result)."""
    import evalsuite.generation as generation
    from evalsuite.cli import main

    monkeypatch.chdir(tmp_path)
    seen: list[list[str]] = []
    real_load = generation.load_generator

    def load(spec, options):
        board = tmp_path / "leaderboard" / "leaderboard.json"
        seen.append(leaderboard_models(tmp_path) if board.exists() else [])
        return real_load(spec, options)

    monkeypatch.setattr(generation, "load_generator", load)
    first, second = tiny_model_dir("gpt2"), tiny_model_dir("llama")
    assert main(["run", "--models", f"{first},{second}", "--limit", "1", "--n", "1", "--max-new-tokens", "4",
                 "--device", "cpu", "--quiet"]) == 0
    assert seen == [[], [first.name]]


def test_closing_a_generator_drops_the_model_and_the_engine(tiny_model_dir):
    """Nothing the generator or its engine made stays referenced once it is closed (on a GPU: its memory)."""
    from evalsuite.generation import load_generator
    from evalsuite.generation.base import GenerationOptions
    from evalsuite.generation.options import HFOptions
    from evalsuite.models.options import LoadingOptions
    from evalsuite.records import GenerationRequest, SamplingParams

    generator = load_generator(str(tiny_model_dir("llama")), GenerationOptions(
        loading=LoadingOptions(device="cpu"), hf=HFOptions(engine="evalsuite")))
    request = GenerationRequest(task_id="t", prompt="def add(a, b):\n", sample_indices=(0, 1), stop_sequences=())
    made = list(generator.generate([request], SamplingParams(n=2, temperature=0.8, max_new_tokens=6)))
    assert len(made) == 2 and generator.describe()["engine"] not in (None, "transformers")
    model = weakref.ref(generator.model)
    adapter = weakref.ref(generator._engine_bridge.engine.adapter)
    generator.close()
    gc.collect()
    assert model() is None and adapter() is None


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_closing_a_generator_gives_its_gpu_memory_back(tiny_model_dir):
    import torch

    from evalsuite.generation import load_generator
    from evalsuite.generation.base import GenerationOptions
    from evalsuite.models.options import LoadingOptions
    from evalsuite.records import GenerationRequest, SamplingParams

    def cycle() -> int:
        generator = load_generator(str(tiny_model_dir("llama")), GenerationOptions(
            loading=LoadingOptions(device="cuda", gpu_memory="4GiB")))
        request = GenerationRequest(task_id="t", prompt="def add(a, b):\n", sample_indices=tuple(range(8)),
                                    stop_sequences=())
        list(generator.generate([request], SamplingParams(n=8, temperature=0.8, max_new_tokens=16)))
        assert torch.cuda.memory_allocated() > before
        generator.close()
        return torch.cuda.memory_allocated()

    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    first, second = cycle(), cycle()
    # What stays is torch's own: a cuBLAS workspace per stream the engine used (32 MiB on Hopper), made once.
    assert first - before <= 64 << 20, (before, first)
    assert second == first, "a second model of the command found the first one's memory still held"
