"""Real accelerate CPU + disk offload of a tiny random model gives the same greedy tokens as no offload."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from evalsuite.models.options import LoadingOptions  # noqa: E402
from evalsuite.planner.capacity import Capacity  # noqa: E402
from evalsuite.planner.loaders import load_planned  # noqa: E402
from evalsuite.planner.memory import checkpoint_summary  # noqa: E402


@pytest.fixture(scope="module")
def tiny_gptj(tmp_path_factory):
    torch.manual_seed(0)
    config = transformers.GPTJConfig(n_embd=64, n_layer=6, n_head=4, rotary_dim=8, vocab_size=512, n_positions=128,
                                     bos_token_id=0, eos_token_id=1)
    directory = tmp_path_factory.mktemp("tiny-gptj")
    transformers.GPTJForCausalLM(config).save_pretrained(directory)
    return directory


def greedy(model, prompt, new_tokens=12):
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    return out[:, prompt.shape[1]:]


def prompt():
    return torch.randint(2, 512, (3, 10), generator=torch.Generator().manual_seed(1))


def test_safetensors_header_gives_dtype_and_size(tiny_gptj):
    dtype, size, numel = checkpoint_summary(tiny_gptj)
    assert dtype == "float32" and size == numel * 4 and numel > 100_000


def test_accelerate_cpu_and_disk_offload_matches_unoffloaded(tiny_gptj, tmp_path):
    reference = transformers.AutoModelForCausalLM.from_pretrained(tiny_gptj, dtype=torch.float32)
    device_map = {"transformer.wte": "cpu", "transformer.h.0": "cpu", "transformer.h.1": "cpu",
                  "transformer.h.2": "cpu", "transformer.h.3": "disk", "transformer.h.4": "disk",
                  "transformer.h.5": "disk", "transformer.ln_f": "disk", "lm_head": "disk"}
    offloaded = transformers.AutoModelForCausalLM.from_pretrained(
        tiny_gptj, dtype=torch.float32, device_map=device_map, offload_folder=str(tmp_path))
    # disk-offloaded blocks hold no weights in RAM (meta tensors); accelerate's hooks load them per forward
    assert offloaded.transformer.h[4].attn.q_proj.weight.device.type == "meta"
    assert offloaded.transformer.h[0].attn.q_proj.weight.device.type == "cpu"
    assert torch.equal(greedy(offloaded, prompt()), greedy(reference, prompt()))


def test_planner_spills_to_disk_when_ram_is_short_and_keeps_greedy_tokens(tiny_gptj, tmp_path):
    """A CPU RAM cap of ~0.6 MB (half the bf16 weights) makes the plan put later blocks on disk."""
    capacity = Capacity(cpu=700_000, disk=10**10, offload_dir=str(tmp_path / "offload"))
    model, plan = load_planned(str(tiny_gptj), None, LoadingOptions(device="cpu"), batch_size=3, seq_len=32,
                               prompt_len=10, capacity=capacity)
    assert plan.strategy == "cpu" and plan.offload_to == "disk" and plan.dtype == "bfloat16"
    placed = set(model.hf_device_map.values())
    assert placed == {"cpu", "disk"}, model.hf_device_map
    assert any(p.device.type == "meta" for p in model.parameters())  # really not in RAM
    reference = transformers.AutoModelForCausalLM.from_pretrained(tiny_gptj, dtype=torch.bfloat16)
    assert torch.equal(greedy(model, prompt()), greedy(reference, prompt()))


def test_planner_keeps_fp32_on_cpu_when_it_fits(tiny_gptj):
    model, plan = load_planned(str(tiny_gptj), None, LoadingOptions(device="cpu"), batch_size=3, seq_len=32,
                               prompt_len=10, capacity=Capacity(cpu=2**30))
    assert plan.strategy == "cpu" and plan.dtype == "float32" and plan.offload_to is None
    assert next(model.parameters()).dtype == torch.float32
    reference = transformers.AutoModelForCausalLM.from_pretrained(tiny_gptj, dtype=torch.float32)
    assert torch.equal(greedy(model, prompt()), greedy(reference, prompt()))


def test_the_runs_max_new_tokens_sizes_the_planned_kv_cache(tiny_gptj):
    """`run --max-new-tokens 32` plans a KV cache for prompt + 32 tokens, not the default 512 new ones (on
    two capped H200s a GPT-J run was planned as nf4 for want of KV room it never needed)."""
    _model, plan = load_planned(str(tiny_gptj), None, LoadingOptions(device="cpu"), max_new_tokens=32,
                                prompt_len=50, capacity=Capacity(cpu=2**30))
    assert plan.budget.seq_len == 50 + 32
    _model, plan = load_planned(str(tiny_gptj), None, LoadingOptions(device="cpu"), prompt_len=50,
                                capacity=Capacity(cpu=2**30))
    assert plan.budget.seq_len == 128  # 50 + 512, cut to the model's 128 positions
