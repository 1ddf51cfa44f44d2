"""The memory planner's runtime on a CUDA GPU: the --gpu-memory cap as batch sizing and the engine see it,
and the loading strategies whose modules are not plain whole weights decoding through their own runtime.

Skipped without a GPU. The real-size measurements are benchmarks/bench_loading.py and
benchmarks/gpu/planner_runs.sh (docs/benchmarks.md, "Loading strategies").
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch

from evalsuite.generation import GenerationOptions, load_generator

from evalsuite.models.options import LoadingOptions
from evalsuite.devices import allocatable_bytes
from evalsuite.planner.capacity import GiB, enforce_gpu_cap

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture
def uncapped_afterwards():
    yield
    for index in range(torch.cuda.device_count()):
        torch.cuda.set_per_process_memory_fraction(1.0, index)


def test_free_memory_seen_by_batching_and_engine_stays_under_the_cap(uncapped_afterwards):
    cap = enforce_gpu_cap(2 * GiB)
    held = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    assert allocatable_bytes(torch.device("cuda", 0), cap.cap_bytes) <= 2 * GiB - torch.cuda.memory_allocated(0)
    assert torch.cuda.mem_get_info(0)[0] > 2 * GiB  # what the driver alone would have offered
    with pytest.raises(torch.OutOfMemoryError):  # the allocator itself refuses past the cap
        torch.empty(2 * GiB, dtype=torch.uint8, device="cuda")
    del held
    cap.release()


def test_engine_generates_under_a_small_cap(tiny_model_dir, tmp_path):
    """A fresh process, as a user's run is: the cap is the process's allocator fraction, so in the test
    process it would also count whatever earlier tests left on the card (it did: the engine then found no
    room and plain generate ran instead)."""
    model = _fresh_run(tiny_model_dir("gptj"), tmp_path, "--gpu-memory", "1GiB", "--n", "8", "--limit", "4")
    assert model["placement"]["strategy"] == "gpu", model
    assert 0 < model["gpu_peak_reserved_gib"] <= 1.0, model


def _fresh_run(model_dir, tmp_path, *flags: str) -> dict:
    """``evalsuite run`` on ``model_dir`` in a fresh process (sampled, 16 new tokens): its record's model
    description, once the run succeeded with every completion from the engine (no retry, no fallback)."""
    output = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--models", str(model_dir), *flags, "--temperature", "0.8",
         "--max-new-tokens", "16", "--output", str(output), "--no-leaderboard", "--quiet", "--allow-unsandboxed"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [record_path] = output.glob("*/record.json")
    model = json.loads(record_path.read_text())["model"]
    assert isinstance(model["engine"], dict) and model["engine"]["name"] == "evalsuite", model
    assert not model["engine_retries"] and model["engine_fallback"] is None, model
    return model


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="needs DeepSpeed")
def test_zero_inference_run_decodes_through_deepspeed_not_the_engine(tiny_model_dir, tmp_path):
    """ZeRO-3 parameters are empty shells between forwards: the engine must not take the model. A
    subprocess, because ZeRO-Inference initialises torch.distributed and patches module construction."""
    output = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--models", str(tiny_model_dir("gptj")),
         "--strategy", "zero-inference", "--n", "2", "--limit", "2", "--temperature", "0.8",
         "--max-new-tokens", "8", "--output", str(output), "--no-leaderboard", "--quiet", "--allow-unsandboxed"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [record_path] = output.glob("*/record.json")
    record = json.loads(record_path.read_text())
    assert record["model"]["placement"]["strategy"] == "zero-inference"
    assert record["model"]["engine"] == "transformers"
    assert record["generation_stats"]["completions_generated_now"] == 4
    # float32 greedy: the same completions as the model whole on the GPU (they were '' : see test_generation_hf.py)
    greedy = {}
    for strategy in ("gpu", "zero-inference"):
        folder = tmp_path / f"greedy-{strategy}"
        done = subprocess.run(
            [sys.executable, "-m", "evalsuite", "run", "--models", str(tiny_model_dir("gptj")), "--strategy", strategy,
             "--dtype", "float32", "--temperature", "0", "--limit", "3", "--max-new-tokens", "12",
             "--engine", "transformers", "--output", str(folder), "--no-leaderboard", "--quiet",
             "--allow-unsandboxed"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        greedy[strategy] = sorted(json.loads(line)["raw_completion"] for path in folder.glob("*/completions*.jsonl")
                                  for line in path.read_text().splitlines())
    assert len(greedy["gpu"]) == 3 and all(greedy["gpu"]) and greedy["zero-inference"] == greedy["gpu"]
    # the process keeps torch's own linear after a ZeRO-Inference load (see test_planner.py)
    probe = ("import torch, torch.nn.functional as F; from evalsuite.generation import GenerationOptions, load_generator;"
             "from evalsuite.models.options import LoadingOptions; own = F.linear;"
             f"g = load_generator({str(tiny_model_dir('gptj'))!r}, GenerationOptions(loading=LoadingOptions("
             "strategy='zero-inference'))); print('same' if F.linear is own else 'replaced'); g.close()")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip().splitlines()[-1:] == ["same"], proc.stderr[-2000:]


def test_dtype_float32_loads_float32_on_the_gpu(tiny_model_dir):
    """--dtype float32 on a GPU is what runs: the planned path used to load bfloat16 whatever was asked."""
    generator = load_generator(str(tiny_model_dir("llama")), GenerationOptions(loading=LoadingOptions(dtype="float32")))
    try:
        described = generator.describe()
        assert described["dtype"] == "float32"
        assert described["placement"]["plan"]["dtype"] == "float32"
        assert {p.dtype for p in generator.model.parameters()} == {torch.float32}
    finally:
        generator.close()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_device_flag_pins_the_model_and_the_engine_to_that_gpu(tiny_model_dir, tmp_path):
    """--device cuda:1 (what each torchrun rank passes itself): the plan sees GPU 1 alone, the weights sit there
    and the engine decodes there (no fallback). A fresh process, as a user's run is."""
    model = _fresh_run(tiny_model_dir("llama"), tmp_path, "--device", "cuda:1", "--n", "4", "--limit", "2")
    plan = model["placement"]["plan"]
    assert plan["device_map"] == {"": 1} and plan["capacity"]["gpu_ids"] == [1], plan
