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


def evalsuite_run(models: list[str], cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "evalsuite", "run", "--models", ",".join(models), "--limit", "2",
                           "--n", "1", "--max-new-tokens", "8", "--device", "cpu", "--json", *extra],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def leaderboard_models(cwd: Path) -> list[str]:
    return [entry["model"] for entry in json.loads((cwd / "leaderboard" / "leaderboard.json").read_text())["entries"]]


NEEDS_SANDBOX = pytest.mark.skipif(__import__("sandbox").detect_isolation() == "none",
                                   reason="needs namespace isolation (bubblewrap) to execute the samples")


def test_the_one_model_of_a_command_failing_still_gives_a_json_document(tiny_model_dir, tmp_path):
    """A command of several models said in its --json document which failed; a command of one printed its error
    line and nothing on stdout, and a CI job reading the document found none."""
    from evalsuite.runs.results import validate_output

    unsandboxed = ["--allow-unsandboxed"] if __import__("sandbox").detect_isolation() == "none" else []  # GPU image
    done = evalsuite_run([str(broken_checkpoint(tiny_model_dir, tmp_path))], tmp_path, *unsandboxed)
    assert done.returncode == 2, done.stderr[-2000:]
    output = json.loads(done.stdout)
    validate_output(output)
    assert output["results"] == [] and output["failures"][0]["model"] == "broken-gpt2"
    assert "cannot load the weights" in output["failures"][0]["error"]
    assert done.stderr.strip().splitlines()[-1].startswith("error: cannot load the weights")


@NEEDS_SANDBOX
@pytest.mark.parametrize("order", ["good first", "broken first"])
def test_a_failing_model_leaves_the_others_their_results_and_fails_the_command(tiny_model_dir, tmp_path, order):
    good, bad = str(tiny_model_dir("gpt2")), str(broken_checkpoint(tiny_model_dir, tmp_path))
    models = [good, bad] if order == "good first" else [bad, good]
    done = evalsuite_run(models, tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]  # a checkpoint evalsuite cannot read: a user's error
    output = json.loads(done.stdout)
    assert [score["model"] for score in output["results"]] == [Path(good).name]
    assert output["failures"][0]["model"] == "broken-gpt2"
    assert "cannot load the weights" in output["failures"][0]["error"]
    assert leaderboard_models(tmp_path) == [Path(good).name]
    [summary] = (tmp_path / "runs").glob(f"{Path(good).name}__humaneval__*/summary.json")
    assert len((summary.parent / "results.jsonl").read_text().splitlines()) == 2  # its results, scored
    assert "broken-gpt2 (FAILED)" in done.stderr and "1 model(s) failed: broken-gpt2" in done.stderr
    assert f"plan: {Path(good).name}: single-device on cpu, float32, " in done.stderr  # before it generated


@NEEDS_SANDBOX
def test_a_missed_gate_is_said_when_a_model_also_failed(tiny_model_dir, tmp_path):
    """With a failed model the exit status is the failure's, and the gate's shortfall was said nowhere but in the
    JSON document."""
    good, bad = str(tiny_model_dir("gpt2")), str(broken_checkpoint(tiny_model_dir, tmp_path))
    done = evalsuite_run([good, bad], tmp_path, "--fail-under", "pass@1=0.5")
    assert done.returncode == 2, done.stderr[-2000:]
    assert json.loads(done.stdout)["fail_under"]["met"] is False
    assert "error: --fail-under not met" in done.stderr and "1 model(s) failed: broken-gpt2" in done.stderr


@NEEDS_SANDBOX
def test_a_failed_model_is_a_shortfall_of_the_gate_whatever_the_others_scored(tiny_model_dir, tmp_path):
    """A gate every scored model meets: the document said met, though one model was never scored (a CI step that
    reads fail_under.met passed)."""
    good, bad = str(tiny_model_dir("gpt2")), str(broken_checkpoint(tiny_model_dir, tmp_path))
    done = evalsuite_run([good, bad], tmp_path, "--fail-under", "pass@1=0")
    assert done.returncode == 2, done.stderr[-2000:]
    gate = json.loads(done.stdout)["fail_under"]
    assert gate["met"] is False and gate["shortfalls"] == ["broken-gpt2: not scored (it failed)"]


@NEEDS_SANDBOX
def test_each_models_entry_is_on_the_leaderboard_before_the_next_model_loads_and_generates(tiny_model_dir, tmp_path, monkeypatch):
    """The second model's load sees the first's entry already written (a command stopped during the second
    model keeps the first's result)."""
    import evalsuite.generation as generation
    from evalsuite.cli import main

    monkeypatch.chdir(tmp_path)
    seen: list[list[str]] = []
    real_load = generation.load_generator

    board = tmp_path / "leaderboard" / "leaderboard.json"

    def on_board() -> list[str]:
        return leaderboard_models(tmp_path) if board.exists() else []

    def load(spec, options):
        seen.append(on_board())
        generator = real_load(spec, options)
        generate = generator.generate

        def generating(requests, params):  # the model's first completion: the earlier model's entry is there
            for index, completion in enumerate(generate(requests, params)):
                if index == 0:
                    seen.append(on_board())
                yield completion

        generator.generate = generating
        return generator

    monkeypatch.setattr(generation, "load_generator", load)
    first, second = tiny_model_dir("gpt2"), tiny_model_dir("llama")
    assert main(["run", "--models", f"{first},{second}", "--limit", "1", "--n", "1", "--max-new-tokens", "4",
                 "--device", "cpu", "--quiet"]) == 0
    assert seen == [[], [], [first.name], [first.name]]  # load and generate of each model


def test_closing_a_generator_drops_the_model_the_engine_and_its_fused_weights(tiny_model_dir):
    """Nothing the generator or its engine made stays referenced once it is closed (on a GPU: its memory):
    the model, the engine, its adapter and the fused weight copies, and the run's progress callback."""
    from evalsuite.generation import load_generator
    from evalsuite.generation.base import GenerationOptions
    from evalsuite.generation.options import HFOptions
    from evalsuite.models.options import LoadingOptions
    from evalsuite.records import GenerationRequest, SamplingParams

    generator = load_generator(str(tiny_model_dir("gptj")), GenerationOptions(
        loading=LoadingOptions(device="cpu"), hf=HFOptions(engine="evalsuite")))
    listener = Listener()
    generator.token_listener = listener
    request = GenerationRequest(task_id="t", prompt="def add(a, b):\n", sample_indices=(0, 1), stop_sequences=())
    made = list(generator.generate([request], SamplingParams(n=2, temperature=0.8, max_new_tokens=6)))
    assert len(made) == 2 and isinstance(generator.describe()["engine"], dict) and listener.tokens
    engine = generator.engine_status.bridge.engine
    assert engine.adapter._fused, "GPT-J's projections are fused: the copies this test follows"
    alive = {"model": weakref.ref(generator.model), "engine": weakref.ref(engine),
             "adapter": weakref.ref(engine.adapter), "listener": weakref.ref(listener),
             **{f"fused weight {i}": weakref.ref(fused.weight) for i, fused in enumerate(engine.adapter._fused)}}
    del engine, listener
    generator.close()
    generator.close()  # twice is harmless (a failing run closes in a finally)
    gc.collect()
    assert [name for name, ref in alive.items() if ref() is not None] == []


class Listener:
    """A progress callback that can be followed with a weak reference."""

    def __init__(self) -> None:
        self.tokens = 0

    def __call__(self, count: int) -> None:
        self.tokens += count


class FakeCuda:
    """torch.cuda's allocator-cap calls on two 80 GiB GPUs, for a CPU machine."""

    def __init__(self, monkeypatch):
        import torch

        self.fractions = {0: 1.0, 1: 0.5}  # GPU 1 capped by someone else before: that cap comes back
        for name, value in {"device_count": lambda: 2, "is_initialized": lambda: True,
                            "get_device_properties": lambda i: type("Props", (), {"total_memory": 80 * 2**30}),
                            "get_per_process_memory_fraction": lambda i: self.fractions[i],
                            "set_per_process_memory_fraction": lambda f, i: self.fractions.__setitem__(i, f)}.items():
            monkeypatch.setattr(torch.cuda, name, value)


def test_a_gpu_cap_is_a_handle_released_with_its_model(monkeypatch):
    """--gpu-memory caps PyTorch's allocator (process-wide) only while the model it was set for is loaded:
    releasing the handle restores each GPU's fraction as it was, and the cap's size is read from the handle."""
    from evalsuite.planner.capacity import GiB, enforce_gpu_cap

    cuda = FakeCuda(monkeypatch)
    assert enforce_gpu_cap(None) is None
    cap = enforce_gpu_cap(16 * GiB)
    assert cap.cap_bytes == 16 * GiB and cuda.fractions == {0: 0.2, 1: 0.2} and len(cap.notes) == 2
    cap.release()
    assert cuda.fractions == {0: 1.0, 1: 0.5}
    pinned = enforce_gpu_cap(16 * GiB, [1])  # a process pinned to GPU 1 (--device cuda:1) caps that GPU alone
    assert cuda.fractions == {0: 1.0, 1: 0.2} and len(pinned.notes) == 1
    pinned.release()
    assert cuda.fractions == {0: 1.0, 1: 0.5}


@pytest.mark.parametrize("failure", ["bad checkpoint", "out of memory at every rung"])
def test_a_load_that_fails_lifts_its_gpu_cap(monkeypatch, tiny_model_dir, failure):
    """A model whose load fails never reaches close(): the load itself lifts the cap it set, or the next model
    of the command would plan and load under this one's cap."""
    import torch

    from evalsuite.errors import EvalsuiteError
    from evalsuite.models.options import LoadingOptions
    from evalsuite.planner import loaders
    from evalsuite.planner.capacity import Capacity, GiB

    cuda = FakeCuda(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)

    def load(*args, **kwargs):
        if failure == "bad checkpoint":
            raise ValueError("header too small")
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.12 GiB")

    monkeypatch.setattr(loaders, "_load", load)
    capacity = Capacity(gpus=(16 * GiB, 16 * GiB), cpu=64 * GiB, gpu_cap=16 * GiB)
    forced = None if failure == "bad checkpoint" else "gpu"  # forced: out of memory stops instead of stepping down
    with pytest.raises(ValueError if forced is None else EvalsuiteError):
        loaders.load_planned(str(tiny_model_dir("gptj")), None, LoadingOptions(gpu_memory="16GiB", strategy=forced),
                             capacity=capacity)
    assert cuda.fractions == {0: 1.0, 1: 0.5}


def test_a_process_pinned_to_one_gpu_caps_that_gpu_alone(monkeypatch, tiny_model_dir):
    """--device cuda:1 --gpu-memory 16GiB (a torchrun rank's own GPU under a cap): capping a GPU starts a CUDA
    context on it, so only the pinned GPU is capped while the model loads, and released after."""
    import torch

    from evalsuite.models.options import LoadingOptions
    from evalsuite.planner import loaders
    from evalsuite.planner.capacity import Capacity, GiB

    cuda = FakeCuda(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    seen: list[dict[int, float]] = []

    def load(*args, **kwargs):
        seen.append(dict(cuda.fractions))
        raise ValueError("header too small")

    monkeypatch.setattr(loaders, "_load", load)
    capacity = Capacity(gpus=(16 * GiB,), gpu_ids=(1,), cpu=64 * GiB, gpu_cap=16 * GiB)
    with pytest.raises(ValueError):
        loaders.load_planned(str(tiny_model_dir("gptj")), None, LoadingOptions(gpu_memory="16GiB", device="cuda:1"),
                             capacity=capacity)
    assert seen == [{0: 1.0, 1: 0.2}] and cuda.fractions == {0: 1.0, 1: 0.5}


def test_a_loaded_model_carries_its_cap_and_release_lifts_it(monkeypatch, tiny_model_dir):
    import torch

    from evalsuite.generation.hf.loading import LoadedModel
    from evalsuite.models.options import LoadingOptions
    from evalsuite.planner import loaders
    from evalsuite.planner.capacity import Capacity, GiB

    cuda = FakeCuda(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    model = torch.nn.Linear(2, 2)
    monkeypatch.setattr(loaders, "_load", lambda *args, **kwargs: model)
    capacity = Capacity(gpus=(16 * GiB, 16 * GiB), cpu=64 * GiB, gpu_cap=16 * GiB)
    loaded_model, plan = loaders.load_planned(str(tiny_model_dir("gptj")), None, LoadingOptions(gpu_memory="16GiB"),
                                              capacity=capacity)
    assert plan.gpu_cap.cap_bytes == 16 * GiB and cuda.fractions[0] == 0.2
    assert "gpu_cap" not in plan.to_json()  # the record keeps the cap's notes, not the handle
    loaded = LoadedModel(model=loaded_model, tokenizer=None, spec=None, device=torch.device("cpu"), dtype="bfloat16",
                         revision=None, gpu_cap=plan.gpu_cap)
    assert loaded.gpu_cap_bytes == 16 * GiB
    loaded.release()
    assert loaded.model is None and loaded.gpu_cap is None and cuda.fractions == {0: 1.0, 1: 0.5}


def test_the_plan_line_estimates_the_time_and_a_slow_plan_names_the_flags_that_avoid_it():
    """GPT-J-6B asked in float32 under a 16 GiB cap without bitsandbytes falls off the GPU: the warning names
    --dtype bfloat16, a --gpu-memory that would hold it whole, and the quantized rungs with their install."""
    import dataclasses

    from evalsuite.planner.capacity import Capacity, GiB
    from evalsuite.planner.ladder import choose_plan
    from evalsuite.planner.planning import build_request
    from evalsuite.planner.source import resolve_source
    from evalsuite.runs.plan_line import Workload, plan_line, slow_plan_warning

    request = build_request(resolve_source("gpt-j-6b"), Capacity(), batch_size=8, seq_len=640, prompt_len=512)

    def described(gib: int, dtype: str) -> dict:
        plan = choose_plan(dataclasses.replace(request, capacity=Capacity(gpus=(gib * GiB,), cpu=64 * GiB,
                                                                          gpu_cap=gib * GiB),
                                               installed={}, gpu_dtype=dtype))
        return {"placement": {"strategy": plan.strategy, "plan": plan.to_json()}, "dtype": plan.dtype,
                "device": "cuda:0"}

    work = Workload(samples=80, max_new_tokens=128)
    whole = described(16, "bfloat16")
    line = plan_line("gpt-j", whole, work)
    assert line.startswith("plan: gpt-j: gpu, bfloat16, 1x of whole-GPU") and "80 sample(s) x 128 new tokens" in line
    assert slow_plan_warning("gpt-j", whole) is None
    slow = described(16, "float32")
    assert " min for 80 sample(s)" in plan_line("gpt-j", slow, work)
    warning = slow_plan_warning("gpt-j", slow)
    assert warning.startswith(f"WARNING: gpt-j is planned as {slow['placement']['strategy']}, ")
    for flag in ("--dtype bfloat16", "--gpu-memory 29GiB", "pip install 'evalsuite[quant]'", "--strategy nf4"):
        assert flag in warning, (flag, warning)


def test_a_cpu_model_line_says_what_is_known(tiny_model_dir):
    from evalsuite.runs.plan_line import Workload, plan_line

    description = {"placement": {"strategy": "single-device", "device": "cpu"}, "dtype": "float32", "device": "cpu"}
    line = plan_line("tiny", description, Workload(4, 8), cpu_tokens_per_s=2.0)
    assert line == ("plan: tiny: single-device on cpu, float32, not placed by the memory planner (no whole-GPU "
                    "comparison); ~16 s for 4 sample(s) x 8 new tokens at ~2.0 tokens/s")
    assert "no time estimate" in plan_line("tiny", description, Workload(4, 8))
    assert plan_line("reference", {"placement": {}}, Workload(4, 8)) is None


def test_the_cpu_estimate_counts_the_rows_decoded_together(tiny_model_dir):
    """A CPU step makes a token of every row of the batch: the plan line's rate for 16 samples is the batch's,
    not one row's (it was 8x low for a tiny model, 5x for SmolLM2-135M at batch 16); the floor the slow-run
    warning uses stays one row's."""
    from evalsuite.generation import load_generator
    from evalsuite.generation.options import GenerationOptions, HFOptions
    from evalsuite.models.options import LoadingOptions
    from evalsuite.models.registry import resolve_model

    options = GenerationOptions(loading=LoadingOptions(device="cpu"), hf=HFOptions(batch_size=8))
    generator = load_generator(resolve_model(str(tiny_model_dir("gpt2"))), options)
    try:
        one, eight, many = (generator.expected_tokens_per_s(rows=rows) for rows in (1, 8, 500))
        assert one == generator.expected_tokens_per_s()
        assert eight > 4 * one and many == eight  # rows past the batch size wait for the next batch
    finally:
        generator.close()


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_closing_a_generator_gives_its_gpu_memory_and_its_cap_back(tiny_model_dir):
    """Through the engine (fused weights, KV cache, CUDA graphs): after close() the allocator holds what it held
    before the load, and the --gpu-memory cap set for the model is lifted."""
    import torch

    from evalsuite.devices import allocatable_bytes, release_device_memory
    from evalsuite.generation import load_generator
    from evalsuite.generation.base import GenerationOptions
    from evalsuite.generation.options import HFOptions
    from evalsuite.models.options import LoadingOptions
    from evalsuite.records import GenerationRequest, SamplingParams

    def cycle() -> int:
        """Load, generate through the engine, close; what the next model's plan would see free."""
        generator = load_generator(str(tiny_model_dir("gptj")), GenerationOptions(
            loading=LoadingOptions(device="cuda", gpu_memory="4GiB"), hf=HFOptions(engine="evalsuite")))
        assert torch.cuda.get_per_process_memory_fraction(0) < fraction
        requests = [GenerationRequest(task_id=f"t{i}", prompt=f"def f{i}(a, b):\n", sample_indices=tuple(range(8)),
                                      stop_sequences=()) for i in range(4)]
        made = list(generator.generate(requests, SamplingParams(n=8, temperature=0.8, max_new_tokens=16)))
        assert len(made) == 32 and isinstance(generator.describe()["engine"], dict)
        assert torch.cuda.memory_allocated() > before[0]
        generator.close()
        assert torch.cuda.memory_allocated() == before[0]
        assert torch.cuda.memory_reserved() <= before[1] + (2 << 20)
        assert torch.cuda.get_per_process_memory_fraction(0) == fraction
        return allocatable_bytes(0)

    release_device_memory()  # what earlier tests left cached is not this model's
    before = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    fraction = torch.cuda.get_per_process_memory_fraction(0)
    # The first use of the engine's kernels loads their code into the CUDA context (outside the allocator, for
    # the life of the process): measured after one model, a second one must find exactly as much free.
    first = cycle()
    assert cycle() >= first - (64 << 20)  # what the next model's plan and engine will see


def test_a_slow_plan_made_on_a_gpu_another_process_holds_names_that_process(monkeypatch):
    """Two runs started on one GPU: the second plans with what the first left free and lands on a slow rung.
    Its warning says that other processes hold the GPU, with how much, beside the flags."""
    import dataclasses

    from evalsuite.planner import capacity as capacity_module
    from evalsuite.planner.capacity import GiB, detect_capacity
    from evalsuite.planner.ladder import choose_plan
    from evalsuite.planner.planning import build_request
    from evalsuite.planner.source import resolve_source
    from evalsuite.runs.plan_line import slow_plan_warning

    monkeypatch.setattr(capacity_module, "_detect_gpus",
                        lambda only=None: ([6 * GiB, 79 * GiB], [80 * GiB, 80 * GiB], ["H100", "H100"]))
    seen = detect_capacity()
    assert seen.gpus_held == (74 * GiB, 0) and "GPU 0: 74.0 GiB of its 80.0 GiB held by other processes" in seen.notes
    request = build_request(resolve_source("gpt-j-6b"), seen, batch_size=8, seq_len=640, prompt_len=512)
    plan = choose_plan(dataclasses.replace(request, capacity=dataclasses.replace(seen, gpus=(6 * GiB,), gpu_ids=(0,),
                                                                                 gpus_held=(74 * GiB,)),
                                           installed={}, gpu_dtype="bfloat16"))
    warning = slow_plan_warning("gpt-j", {"placement": {"strategy": plan.strategy, "plan": plan.to_json()}})
    assert warning is not None and "74.0 GiB other processes hold on GPU 0" in warning, warning
    monkeypatch.setattr(capacity_module, "_detect_gpus", lambda only=None: ([int(79.4 * GiB)], [80 * GiB], ["H100"]))
    assert detect_capacity().gpus_held == ()  # a CUDA context's worth: nobody else
