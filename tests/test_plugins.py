"""Extending evalsuite from outside the package: a generation backend and an engine layout, each one module and
one entry point of a package installed beside evalsuite (report views: tests/test_report_pages.py). Nothing in
evalsuite names them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main
from plugin_install import installed_plugin

ECHO_BACKEND = '''
from evalsuite.generation.base import Generator
from evalsuite.records import Completion


class EchoGenerator(Generator):
    """Answers every problem with its canonical solution, except HumanEval/1, which it gets wrong."""

    def generate(self, requests, params):
        for request in requests:
            text = "    return None\\n" if request.task_id == "HumanEval/1" else request.canonical_solution
            for index in request.sample_indices:
                yield Completion(task_id=request.task_id, sample_index=index, text=text, finish_reason="stop")

    def describe(self):
        return {"backend": "echo", "model": "echo"}


def load(model, options):
    return EchoGenerator()
'''


def test_a_backend_from_an_installed_package_runs_a_whole_evaluation(tmp_path: Path, capsys):
    from evalsuite.generation.backends import BACKENDS

    with installed_plugin(tmp_path / "site", {"echo_backend": ECHO_BACKEND},
                          {"evalsuite.backends": {"echo": "echo_backend:load"}}, [BACKENDS]):
        assert main(["run", "--backend", "echo", "--models", "echo", "--limit", "3", "--output",
                     str(tmp_path / "runs"), "--no-leaderboard", "--quiet", "--allow-unsandboxed", "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
    [score] = result["results"]
    assert score["pass_at"]["pass@1"]["value"] == pytest.approx(2 / 3)  # HumanEval/0 and /2 pass, /1 does not
    assert "echo" not in BACKENDS  # uninstalled: gone again
    assert main(["run", "--backend", "echo", "--models", "echo", "--limit", "1", "--output",
                 str(tmp_path / "again")]) == 2
    assert "unknown backend 'echo'; choose one of reference, openai, hf" in capsys.readouterr().err


MY_LLAMA = '''
from transformers import LlamaForCausalLM

from evalsuite.engine.models import Layout


class MyLlamaForCausalLM(LlamaForCausalLM):
    """A family the engine has never heard of, laid out as Llama is."""


LAYOUT = Layout(("MyLlamaForCausalLM",), backbone="model", embed="embed_tokens", layers="layers", final_norm="norm")
'''


def test_an_engine_layout_from_an_installed_package_decodes_its_family(tmp_path: Path):
    """The engine takes a model class it does not know once a plugin lays it out, and decodes it token for token
    as transformers does."""
    import torch
    from transformers import LlamaConfig

    from evalsuite.engine import Engine, EngineOptions
    from evalsuite.engine.models import LAYOUTS, layout_for_architecture
    from evalsuite.records import GenerationRequest, SamplingParams

    assert layout_for_architecture("MyLlamaForCausalLM") is None
    with installed_plugin(tmp_path / "site", {"my_llama": MY_LLAMA},
                          {"evalsuite.layouts": {"my-llama": "my_llama:LAYOUT"}}, [LAYOUTS]):
        import my_llama

        found = layout_for_architecture("MyLlamaForCausalLM")
        assert found is not None and found[0] == "my-llama"
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, initializer_range=0.5,
                             bos_token_id=0, eos_token_id=1)
        model = my_llama.MyLlamaForCausalLM(config).eval()
        assert Engine.unsupported_reason(model) is None
        prompt = [5, 6, 7, 8]
        with torch.no_grad():
            want = model.generate(input_ids=torch.tensor([prompt]), max_new_tokens=12, do_sample=False,
                                  pad_token_id=0, eos_token_id=None)[0, len(prompt):].tolist()
        engine = Engine(model, decode_tokens=lambda ids: " ".join(map(str, ids)), eos_token_ids=[],
                        options=EngineOptions(max_rows=4))
        [completion] = engine.generate([GenerationRequest(task_id="t/0", prompt="", sample_indices=(0,))],
                                       SamplingParams(max_new_tokens=12), prompt_ids=[prompt])
        assert [int(t) for t in completion.text.split()] == want
    assert layout_for_architecture("MyLlamaForCausalLM") is None


HALF_CPU = '''
from dataclasses import dataclass

from evalsuite.planner.capacity import format_bytes
from evalsuite.planner.strategies.base import TransformersStrategy


@dataclass(frozen=True)
class HalfCpu(TransformersStrategy):
    """CPU only, always in bfloat16 (half the RAM of the built-in CPU rung's float32)."""

    def fit(self, sizing):
        weight_bytes = sizing.shape.weight_bytes("bfloat16")
        step = sizing.speed.cpu_step(weight_bytes, sizing.shape.num_params, sizing.shape.num_layers,
                                     sizing.budget.batch_size, sizing.cap.cpu_cores or 1) / 1000
        return sizing.plan(self, "bfloat16", weight_bytes, {"cpu": format_bytes(weight_bytes)}, step,
                           device_map={"": "cpu"})

    def placement(self, plan, request):
        return {"device_map": {"": "cpu"}}


STRATEGY = HalfCpu("half-cpu", "CPU only, weights in bfloat16 (a plugin)", "cpu", needs_gpu=False, ladder_rank=65)
'''


def test_a_loading_strategy_from_an_installed_package_is_planned_and_loads(tmp_path: Path, tiny_model_dir, capsys):
    """A strategy is one module and one entry point: the ladder tries it in its rank's place (here it wins on its
    own estimate), --strategy names it, and it loads the model the run then evaluates."""
    from evalsuite.planner.strategies import STRATEGIES

    folder = str(tiny_model_dir("llama"))
    capsys.readouterr()
    assert main(["plan", "--models", folder, "--strategy", "half-cpu"]) == 2
    assert "--strategy 'half-cpu' is not one of: gpu, multi-gpu, int8, nf4" in capsys.readouterr().out
    with installed_plugin(tmp_path / "site", {"half_cpu": HALF_CPU},
                          {"evalsuite.strategies": {"half-cpu": "half_cpu:STRATEGY"}}, [STRATEGIES]):
        assert main(["plan", "--models", folder, "--gpus", "0"]) == 0
        text = capsys.readouterr().out
        assert "strategy        half-cpu (chosen): CPU only, weights in bfloat16 (a plugin)" in text
        assert "not cpu" in text  # the built-in CPU rung lost to the plugin's estimate
        output = tmp_path / "runs"
        assert main(["run", "--models", folder, "--strategy", "half-cpu", "--limit", "1", "--max-new-tokens", "4",
                     "--output", str(output), "--no-leaderboard", "--quiet", "--allow-unsandboxed"]) == 0
        [record] = [json.loads(path.read_text()) for path in output.glob("*/record.json")]
    plan = record["model"]["placement"]["plan"]
    assert plan["strategy"] == "half-cpu" and plan["dtype"] == "bfloat16" and plan["forced"]
    assert "half-cpu" not in STRATEGIES  # uninstalled: gone again
