"""The engine on a CUDA GPU (Triton kernels, CUDA-graph decode steps) against transformers generate.

Skipped without a GPU; the benchmark (benchmarks/bench_generate.py) repeats the greedy check on
real-size shapes.
"""

from __future__ import annotations

import copy
import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import LogitsProcessorList

from evalsuite.engine.sampling import (SeededSampler, choose_tokens, filter_logits, row_seeds, uniform_noise,
                                          _uniform_noise_triton)
from evalsuite.engine.top_p_kernel import sample_top_p
from evalsuite.records import SamplingParams

from test_engine import FAMILIES, PROMPTS, _engine, _hf_generate, _ids, _run, _tiny

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module", params=FAMILIES)
def tiny_gpu(request):
    return _tiny(request.param).to("cuda")


def test_graph_steps_give_transformers_greedy_tokens(tiny_gpu):
    engine = _engine(tiny_gpu, rows=8)
    assert engine.use_graphs and engine.use_triton
    expected = _hf_generate(tiny_gpu.cpu(), PROMPTS, 20)
    tiny_gpu.to("cuda")
    got = _run(engine, PROMPTS, SamplingParams(max_new_tokens=20))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected


def test_graph_steps_give_seeded_generate_samples(tiny_gpu, request):
    if request.node.callspec.params.get("tiny_gpu") == "gemma2":
        # Seen on the H100 (2026-11-23): one sampled token of gemma2 differs from CPU generate, while greedy decoding
        # is identical on the GPU and every family's seeded sampling matches on the CPU. Not investigated yet.
        request.applymarker(pytest.mark.xfail(reason="gemma2 seeded sampling on CUDA graphs: one token differs",
                                              strict=True))
    params = SamplingParams(n=6, temperature=0.8, top_p=0.95, max_new_tokens=10, seed=5)
    prompt = PROMPTS[0]
    seeds = row_seeds(params.seed, "t/0", list(range(6)))
    expected = _hf_generate(tiny_gpu.cpu(), [prompt] * 6, 10,
                            LogitsProcessorList([SeededSampler(seeds, params, prompt_length=len(prompt))]))
    tiny_gpu.to("cuda")
    got = _run(_engine(tiny_gpu, rows=4), [prompt], params, samples=range(6))
    assert [_ids(got[("t/0", s)].text) for s in range(6)] == expected


def test_triton_noise_is_bit_identical_to_torch():
    seeds = row_seeds(3, "HumanEval/1", list(range(5)))
    steps = torch.tensor([0, 1, 7, 511, 10 ** 6])
    assert torch.equal(_uniform_noise_triton(seeds.cuda(), steps.cuda(), 50400).cpu(),
                       uniform_noise(seeds, steps, 50400))


def _torch_choose(logits, seeds, steps, params):
    """choose_tokens' torch path on the same device (sort, scan, noise, argmax)."""
    gumbel = -torch.log(-torch.log(uniform_noise(seeds, steps, logits.shape[-1])))
    return torch.argmax(filter_logits(logits, params) + gumbel, dim=-1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("spread,top_p", [(1.0, 0.95), (4.0, 0.95), (8.0, 0.5), (2.0, 1.0)])
def test_top_p_kernel_draws_the_tokens_of_the_torch_path(dtype, spread, top_p):
    """Random logits from nearly flat (a nucleus of most of the vocabulary, bf16 ties at its boundary)
    to peaked; every row's token must be the torch path's."""
    g = torch.Generator().manual_seed(int(spread * 10 + top_p * 100))
    rows, vocab = 96, 50400
    logits = (torch.randn(rows, vocab, generator=g) * spread).to(dtype).cuda()
    logits[3, 7000:] = float("-inf")  # a vocabulary limit
    params = SamplingParams(n=1, temperature=0.8, top_p=top_p, max_new_tokens=1, seed=1)
    seeds = row_seeds(11, "HumanEval/0", list(range(rows))).cuda()
    steps = torch.arange(rows, dtype=torch.int64).cuda() * 7
    got = sample_top_p(logits, seeds, steps, params.temperature, params.top_p)
    want = _torch_choose(logits, seeds, steps, params)
    assert torch.equal(got, want), f"{int((got != want).sum())} of {rows} rows differ"
    assert torch.equal(choose_tokens(logits, seeds, steps, params), got)  # choose_tokens uses the kernel


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_gelu_new_kernel_is_bit_identical_to_transformers(dtype):
    """Every bf16/fp16 value (and 4M random float32 ones, in a strided view as the fused projection gives
    it): the one-kernel gelu_new must round exactly like transformers' chain of eight kernels."""
    from transformers.activations import NewGELUActivation

    from evalsuite.engine.fused_ops import gelu_new

    if dtype == torch.float32:
        x = torch.randn(1 << 22, generator=torch.Generator().manual_seed(0)) * 4
    else:
        x = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)
        x = x[torch.isfinite(x)]
    wide = torch.zeros(64, 2 * (x.numel() // 64), dtype=dtype, device="cuda")
    wide[:, : x.numel() // 64] = x[: 64 * (x.numel() // 64)].to(dtype).reshape(64, -1).cuda()
    view = wide[:, : x.numel() // 64]  # rows strided like a slice of the fused projection's output
    want = NewGELUActivation()(view)
    got = gelu_new(view)
    same = (got.view(torch.int16 if dtype != torch.float32 else torch.int32) ==
            want.view(torch.int16 if dtype != torch.float32 else torch.int32)) | (got.isnan() & want.isnan())
    assert bool(same.all()), f"{int((~same).sum())} of {same.numel()} values differ"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_add3_rounds_like_two_torch_adds(dtype):
    from evalsuite.engine.fused_ops import add3

    g = torch.Generator().manual_seed(3)
    a, b, c = ((torch.randn(255, 4096, generator=g) * 10 ** k).to(dtype).cuda() for k in (0, 1, 2))
    assert torch.equal(add3(a, b, c), a + b + c)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("width", [576, 896, 4096, 8192])  # SmolLM2, Qwen2.5-0.5B, 7B, 70B widths
def test_residual_add_and_rms_norm_in_one_kernel_round_like_transformers(dtype, width):
    """The sum is exact (one rounded add, as torch's). The norm is LlamaRMSNorm's chain of roundings with the
    row's sum of squares taken in another order, which moves the float32 scale's last bits: float32 outputs
    within a few units in the last place (at most ~6 seen, H100), bfloat16 ones the same value almost always
    (one in ~10^5 a unit off before the weight's product, which can make it two of the output)."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from evalsuite.engine.fused_ops import add_then_norm

    g = torch.Generator().manual_seed(width)
    x, added = ((torch.randn(255, width, generator=g) * scale).to(dtype).cuda() for scale in (4.0, 1.0))
    norm = LlamaRMSNorm(width, eps=1e-5).to(dtype).cuda()
    norm.weight.data = (torch.randn(width, generator=g) * 0.3 + 1).to(dtype).cuda()
    total, got = add_then_norm(x, added, norm)
    assert torch.equal(total, x + added)
    want = norm(x + added)
    _, exponent = torch.frexp(want.float())  # want = m * 2**e, 0.5 <= |m| < 1: one unit in its last place is
    ulp = torch.ldexp(torch.full_like(want, torch.finfo(dtype).eps, dtype=torch.float32), exponent - 1)
    units = ((got.float() - want.float()).abs() / ulp).max().item()
    same = (got == want).float().mean().item()
    most, least_same = (8, 0.5) if dtype == torch.float32 else (2, 0.999)
    assert units <= most and same >= least_same, f"{same:.4f} identical; largest error {units:.1f} units"
    alone, normed = add_then_norm(x, None, norm)  # the first block's norm: no pending sum
    assert alone is x and (normed == norm(x)).float().mean().item() > (0.999 if dtype == torch.bfloat16 else 0.5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n,k,bias", [(28672, 4096, True), (4096, 16384, True), (4096, 4096, False),
                                      (50400, 4096, True), (577, 576, False), (1003, 960, True)])
def test_one_row_product_is_as_accurate_as_cublas(dtype, n, k, bias):
    """GPT-J's shapes at batch 1 and odd ones (rows not a multiple of a program's, SmolLM2's width): the kernel's
    output against a float64 product is within what cuBLAS's own is (both round a float32 sum once)."""
    from evalsuite.engine.matvec import applies, one_row_linear

    g = torch.Generator().manual_seed(n + k)
    w = (torch.randn(n, k, generator=g) * 0.05).to(dtype).cuda()
    b = torch.randn(n, generator=g).to(dtype).cuda() if bias else None
    x = torch.randn(1, k, generator=g).to(dtype).cuda()
    assert applies(x, w, b) and not applies(x.float(), w.float(), None) and not applies(torch.cat([x, x]), w, b)
    want = torch.nn.functional.linear(x.double(), w.double(), b.double() if bias else None)
    ours = (one_row_linear(x, w, b).double() - want).abs().max().item()
    cublas = (torch.nn.functional.linear(x, w, b).double() - want).abs().max().item()
    assert ours <= cublas * 1.5 + 1e-6, (ours, cublas)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_one_row_product_with_gelu_new_rounds_like_the_product_then_the_gelu_kernel(dtype):
    """GPT-J's fused product with gelu_new on its fc_in columns, in one launch: bit for bit the same product's
    output with transformers' gelu_new applied to those columns (the q, k, v columns untouched)."""
    from transformers.activations import NewGELUActivation

    from evalsuite.engine.matvec import one_row_linear

    g = torch.Generator().manual_seed(7)
    w = (torch.randn(3 * 512 + 2048, 512, generator=g) * 0.1).to(dtype).cuda()
    b = torch.randn(w.shape[0], generator=g).to(dtype).cuda()
    x = torch.randn(1, 512, generator=g).to(dtype).cuda()
    plain = one_row_linear(x, w, b)
    got = one_row_linear(x, w, b, gelu_from=3 * 512)
    assert torch.equal(got[:, :1536], plain[:, :1536])
    assert torch.equal(got[:, 1536:], NewGELUActivation()(plain[:, 1536:]))


@pytest.mark.parametrize("rows", [1, 255])
def test_gptj_residual_sum_and_layer_norm_in_one_kernel(rows):
    """(attn + mlp) + x rounded as add3 (bit for bit), and the LayerNorm of it as torch's to within one unit in the
    last place (the mean and variance are summed in another order), nearly always the same value; float32 runs
    torch's own LayerNorm."""
    from evalsuite.engine.fused_ops import add3, add3_then_layer_norm

    g = torch.Generator().manual_seed(rows)
    a, b, x = ((torch.randn(rows, 4096, generator=g) * scale).to(torch.bfloat16).cuda() for scale in (1, 3, 10))
    norm = torch.nn.LayerNorm(4096, eps=1e-5).to(torch.bfloat16).cuda()
    norm.weight.data = (torch.randn(4096, generator=g) * 0.3 + 1).to(torch.bfloat16).cuda()
    norm.bias.data = (torch.randn(4096, generator=g) * 0.1).to(torch.bfloat16).cuda()
    total, got = add3_then_layer_norm(x, (a, b), norm)
    assert torch.equal(total, add3(a, b, x))
    want = norm(total)
    # one unit in the last place of the larger of the terms y = centred * rstd * weight + bias (an output near zero
    # comes from cancellation, so its own last place says nothing of the arithmetic's)
    scale = torch.maximum(want.float().abs(), norm.bias.float().abs()) + 2 ** -20
    units = ((got.float() - want.float()).abs() / (scale * 2 ** -7)).max().item()
    same = (got == want).float().mean().item()
    assert same > 0.99 and units <= 1.0, (same, units)
    first, normed = add3_then_layer_norm(x, None, norm)
    assert first is x and (normed == norm(x)).float().mean().item() > 0.99
    total32, got32 = add3_then_layer_norm(x.float(), (a.float(), b.float()), norm.float())
    assert torch.equal(got32, norm(total32))


def test_gptj_at_one_row_in_bfloat16_picks_transformers_best_tokens(monkeypatch):
    """The batch-1 step as it runs for GPT-J in bfloat16 (one-row products, gelu_new inside the fused product,
    residual sums with the LayerNorm): each greedy token the engine picks is within rounding of the best of
    transformers' own logits for the same sequence, and the one-row kernels did run."""
    import evalsuite.engine.models as models
    from evalsuite.engine import matvec

    model = _tiny("gptj").to(device="cuda", dtype=torch.bfloat16)
    calls = {"gelu": 0, "plain": 0}
    real = matvec.one_row_linear

    def counting(x, weight, bias=None, gelu_from=None):
        calls["gelu" if gelu_from is not None else "plain"] += 1
        return real(x, weight, bias, gelu_from)

    monkeypatch.setattr(matvec, "one_row_linear", counting)
    monkeypatch.setattr(models, "one_row_linear", counting)
    prompt = PROMPTS[0]
    got = _run(_engine(model, rows=1), [prompt], SamplingParams(max_new_tokens=16))
    tokens = _ids(got[("t/0", 0)].text)
    assert calls["gelu"] > 0 and calls["plain"] > 0, calls
    with torch.no_grad():
        logits = model(torch.tensor([prompt + tokens], device="cuda")).logits[0, len(prompt) - 1:-1].float()
    best = logits.max(dim=-1).values
    chosen = logits.gather(1, torch.tensor(tokens, device="cuda")[:, None])[:, 0]
    spread = logits.std(dim=-1)
    assert bool(((best - chosen) <= 0.05 * spread + 2 ** -6 * best.abs()).all()), (best - chosen).tolist()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_silu_times_up_in_one_kernel_is_bit_identical_to_transformers(dtype):
    """Gate and up as the fused gate/up product hands them: strided views of one [rows, 2 x width] tensor."""
    from transformers.activations import SiLUActivation

    from evalsuite.engine.fused_ops import silu_mul

    g = torch.Generator().manual_seed(5)
    both = (torch.randn(255, 2 * 1536, generator=g) * 6).to(dtype).cuda()
    gate, up = both.split(1536, dim=-1)
    assert torch.equal(silu_mul(SiLUActivation(), gate, up), SiLUActivation()(gate) * up)


# 12 prompts of 5 to 38 tokens, 24 samples each: the batch-invariant tests' workload
INVARIANT_PROMPTS = [[(7 * i + j) % 4000 + 2 for j in range(5 + 3 * i)] for i in range(12)]
INVARIANT_PARAMS = SamplingParams(n=24, temperature=1.0, top_p=0.95, max_new_tokens=96, seed=3)


def _random_llama_bf16(**shape):
    """A random Llama of ``shape`` in bfloat16 on the GPU, with a wide init (varied tokens)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=4096, max_position_embeddings=1024, initializer_range=0.3, bos_token_id=0,
                         eos_token_id=1, **shape)
    return LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()


def test_batch_invariant_tokens_do_not_depend_on_the_rest_of_the_batch():
    """bfloat16, a shape whose matrix products pick different kernels for different batch sizes: under
    ``batch_invariant`` the prompts run in two engine calls (two data-parallel ranks) give exactly the whole
    run's sampled tokens, and every step is full width."""
    from evalsuite.engine import Engine, EngineOptions
    from evalsuite.records import GenerationRequest

    model = _random_llama_bf16(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                               num_attention_heads=16, num_key_value_heads=16)
    prompts, params = INVARIANT_PROMPTS, INVARIANT_PARAMS

    def run(indices):
        engine = Engine(model, decode_tokens=lambda ids: " ".join(map(str, ids)), eos_token_ids=[],
                        options=EngineOptions(batch_invariant=True, invariant_rows=128))
        requests = [GenerationRequest(task_id=f"t/{i}", prompt="", sample_indices=tuple(range(params.n)))
                    for i in indices]
        lengths = lambda task_id, sample: 8 + (int(task_id[2:]) * 31 + sample * 17) % 89  # noqa: E731
        got = {(c.task_id, c.sample_index): c.text for c in engine.generate(
            requests, params, prompt_ids=[prompts[i] for i in indices], forced_lengths=lengths)}
        assert engine.stats.row_steps == 128 * engine.stats.steps
        return got

    try:
        whole = run(range(12))
        halves = {**run(range(0, 12, 2)), **run(range(1, 12, 2))}
    finally:  # later tests size their engines by what is free (test_planner_gpu's small cap)
        del model
        gc.collect()
        torch.cuda.empty_cache()
    assert len(whole) == 288 and halves == whole


def test_samples_moved_or_evicted_in_the_arena_keep_their_tokens_on_cuda_graphs(monkeypatch):
    """The arena on the GPU (kv_cache.py; the CPU test is in test_engine.py): with room for well under the
    running samples' keys, samples move to larger blocks (their keys copied between graph replays) and the
    youngest are evicted and start again, while the host reads each step's tokens a step late. Batch-invariant
    steps make a sample's tokens independent of who else runs, so every completion must equal a roomy run's."""
    from evalsuite.engine import Engine, EngineOptions, kv_cache
    from evalsuite.engine.kv_cache import kv_bytes_per_token
    from evalsuite.records import GenerationRequest

    model = _random_llama_bf16(hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
                               num_attention_heads=8, num_key_value_heads=4)
    prompts, params = INVARIANT_PROMPTS, INVARIANT_PARAMS
    requests = [GenerationRequest(task_id=f"t/{i}", prompt="", sample_indices=tuple(range(params.n)))
                for i in range(12)]
    lengths = lambda task_id, sample: 8 + (int(task_id[2:]) * 31 + sample * 17) % 89  # noqa: E731

    def run(budget=None):
        engine = Engine(model, decode_tokens=lambda ids: " ".join(map(str, ids)), eos_token_ids=[],
                        options=EngineOptions(batch_invariant=True, invariant_rows=128, first_block=16,
                                              cache_budget_bytes=budget))
        got = {(c.task_id, c.sample_index): c.text for c in engine.generate(
            requests, params, prompt_ids=prompts, forced_lengths=lengths)}
        return got, engine.stats

    try:
        roomy, roomy_stats = run()
        monkeypatch.setattr(kv_cache, "PLANNED_TOKENS_PER_ROW", 16)
        per_token = kv_bytes_per_token(Engine(model, decode_tokens=str).adapter.spec, 2, torch.bfloat16)
        tight, stats = run(per_token * (12 * 38 + 128 * 40 + 128))  # an arena of ~40 tokens a row; they need ~52
    finally:
        del model
        gc.collect()
        torch.cuda.empty_cache()
    assert roomy_stats.evictions == 0 and stats.rows == 128
    assert stats.evictions > 0 and stats.moves > 0, stats
    assert len(tight) == 288 and tight == roomy


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_engine_runs_a_model_on_another_gpu_than_the_current_one():
    """The planner may place a model on another GPU than the process's current one (the freest, or
    --device cuda:N). Seen on four H200s before the engine set its own device: CUDA graphs captured empty ("on
    the wrong device"), Triton refused the pointers, and the engine fell back to plain generate. A model on
    GPU 0 first, as the first model of a two-model command: torch.cuda.graph's default capture stream, made once
    per process, was then GPU 0's, and the second model's graphs on GPU 1 were captured empty again."""
    model = _tiny("llama")
    expected = _hf_generate(model, PROMPTS, 12)
    first = _engine(copy.deepcopy(model).to("cuda:0"), rows=8)
    got = _run(first, PROMPTS, SamplingParams(max_new_tokens=12))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected
    del first, got
    gc.collect()
    torch.cuda.empty_cache()
    assert torch.cuda.current_device() == 0
    held = [torch.cuda.memory_allocated(0), torch.cuda.memory_allocated(1)]  # earlier tests may hold GPU 0 memory
    engine = _engine(model.to("cuda:1"), rows=8)
    got = _run(engine, PROMPTS, SamplingParams(max_new_tokens=12))
    assert [_ids(got[(f"t/{i}", 0)].text) for i in range(len(PROMPTS))] == expected
    assert torch.cuda.current_device() == 0  # the engine's device is its own business, restored after the call
    grown = [torch.cuda.memory_allocated(0) - held[0], torch.cuda.memory_allocated(1) - held[1]]
    assert grown[0] < grown[1] / 10, grown  # the second model's weights and cache went to GPU 1, not GPU 0
    del engine, model
    gc.collect()


def test_loading_a_model_onto_the_gpu_hashes_triton_meanwhile(tiny_model_dir):
    """Triton hashes its own ~400 MB library once per process before its first kernel (0.4 s of the first decode
    step on an H100, issue 31); loading a model onto CUDA starts that hash on a thread. In a fresh process (this
    one has hashed long ago), the hash must be cached once the loader's thread ends, with no kernel run."""
    script = f"""
import threading
from triton.runtime.cache import triton_key
from evalsuite.generation import GenerationOptions, load_generator
from evalsuite.models.options import LoadingOptions
assert triton_key.cache_info().currsize == 0
generator = load_generator({str(tiny_model_dir("llama"))!r}, GenerationOptions(loading=LoadingOptions(device="cuda")))
for thread in threading.enumerate():
    if thread.name == "evalsuite-triton-hash":
        thread.join()
info = triton_key.cache_info()
assert info.currsize == 1 and info.misses == 1, info
print("hashed")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "hashed" in done.stdout, done.stderr[-2000:]


def test_a_fresh_triton_cache_compiles_the_step_kernels_ahead_with_the_same_completions(tmp_path):
    """On an empty Triton cache (a fresh machine), the decode step's kernels compile side by side in a dry pass
    before the warm-up (compile_ahead.py), so none compiles at its own launch while the graphs are set up; the
    next process on that cache takes them from the dry pass's listing instead. Neither changes a completion: the
    dry pass's skipped kernels leave their outputs unwritten, and the row state is put back. A second engine run
    in the same process, with compile-ahead switched off by another hook, gives the same samples."""
    script = f"""
import hashlib, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from triton import knobs
from evalsuite.engine import runner as runner_module
from evalsuite.records import SamplingParams
from test_engine import PROMPTS, _engine, _run, _tiny

phase, late = {{"capture": False}}, []
original = runner_module.DecodeRunner._capture_all
def capture_all(self):
    phase["capture"] = True
    try:
        original(self)
    finally:
        phase["capture"] = False
runner_module.DecodeRunner._capture_all = capture_all
def compiled(*, fn, is_manual_warmup, **_):
    if phase["capture"] and not is_manual_warmup:
        late.append(fn.name)
knobs.runtime.jit_post_compile_hook = compiled

params = SamplingParams(n=3, temperature=0.8, top_p=0.95, max_new_tokens=12, seed=5)
engine = _engine(_tiny("llama").to("cuda"), rows=8)
first = _run(engine, PROMPTS, params, samples=range(3))
ahead = engine.stats.compile_ahead
assert ahead is not None and ahead.kernels >= 3 and ahead.workers >= 1, ahead
assert late == [], late
knobs.runtime.jit_cache_hook = lambda **_: None  # someone else's hook: nothing compiled ahead
second = _run(engine, PROMPTS, params, samples=range(3))
assert engine.stats.compile_ahead is None
texts = sorted((k, c.text) for k, c in first.items())
assert texts == sorted((k, c.text) for k, c in second.items())
print("ahead", ahead.listed, ahead.kernels, hashlib.sha256(repr(texts).encode()).hexdigest())
"""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0 and "ahead" in done.stdout, done.stderr[-3000:]
        runs.append(done.stdout.split("ahead ")[1].split())
    (listed_first, kernels_first, texts_first), (listed_then, kernels_then, texts_then) = runs
    assert (listed_first, listed_then) == ("False", "True")
    assert kernels_first == kernels_then and texts_first == texts_then
    assert len(list((tmp_path / "triton" / "evalsuite-ahead").glob("*.json"))) == 1


def test_compiling_ahead_leaves_a_hook_someone_else_set_and_runs_nothing():
    from triton import knobs

    from evalsuite.engine.compile_ahead import compile_kernels_ahead

    ran: list[int] = []
    knobs.runtime.jit_cache_hook = lambda **_: None
    try:
        assert compile_kernels_ahead(lambda: ran.append(1), "signature") is None
    finally:
        knobs.runtime.jit_cache_hook = None
    assert ran == []
