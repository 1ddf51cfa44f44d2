"""The engine on a CUDA GPU (Triton kernels, CUDA-graph decode steps) against transformers generate.

Skipped without a GPU; the benchmark (benchmarks/bench_generate.py) repeats the greedy check on
real-size shapes.
"""

from __future__ import annotations

import pytest
import torch
from transformers import LogitsProcessorList

from evalsuite.generation.sampling import SeededSampler, row_seeds, uniform_noise, _uniform_noise_triton
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
