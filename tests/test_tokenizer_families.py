"""Every family rule, on real tokenizer files: the two real GGUF tokenizers (SmolLM2-135M-Instruct,
gemma-3-270m) and tokenizers built with the special tokens of Llama-2, Llama-3, CodeLlama, StarCoder and
Qwen2 (tests/tokenizer_mimics.py). The codec is built exactly as a run builds it (resolve by path, family
defaults from config.json, prepare_codec)."""

from __future__ import annotations

import pytest

from evalsuite.protocol.prompting import decide_style
from evalsuite.generation.hf.tokenizer_fixes import prepare_codec
from evalsuite.records import GenerationRequest
from evalsuite.models.registry import resolve_model, with_family
from tokenizer_mimics import save_mimic

CODE = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def mimic(tmp_path_factory):
    root = tmp_path_factory.mktemp("mimics")
    cache: dict[str, tuple] = {}

    def get(name: str):
        if name not in cache:
            from transformers import AutoTokenizer

            directory = save_mimic(name, root / name)
            cache[name] = (resolve_model(str(directory)), AutoTokenizer.from_pretrained(directory))
        spec, tokenizer = cache[name]
        return spec, prepare_codec(tokenizer, spec)

    return get


def test_llama2_adds_its_bos_once_and_pads_with_unk(mimic):
    spec, codec = mimic("llama2")
    assert spec.family == "llama" and spec.bos == "auto"
    ids = codec.encode(CODE)
    assert ids[0] == codec.bos_id == codec.tokenizer.convert_tokens_to_ids("<s>") and ids.count(codec.bos_id) == 1
    assert codec.encode("<s>" + CODE).count(codec.bos_id) == 1
    assert codec.pad_id == codec.tokenizer.convert_tokens_to_ids("<unk>")
    assert codec.bos_source == "tokenizer" and codec.eos_ids == {codec.tokenizer.convert_tokens_to_ids("</s>")}


def test_codellama_keeps_the_llama_rules_and_its_infilling_tokens_are_special(mimic):
    spec, codec = mimic("codellama")
    assert codec.encode(CODE)[0] == codec.bos_id and codec.pad_id == codec.tokenizer.convert_tokens_to_ids("<unk>")
    assert {codec.tokenizer.convert_tokens_to_ids(t) for t in ("▁<PRE>", "▁<MID>", "▁<SUF>")} <= codec.special_ids


def test_llama3_without_unk_falls_back_to_eos_for_padding(mimic):
    """The llama rule `pad_token: unk` used to fail here: Llama-3 tokenizers have no unk token."""
    spec, codec = mimic("llama3")
    tokenizer = codec.tokenizer
    assert spec.pad_token == "unk" and tokenizer.unk_token is None
    assert codec.pad_id == tokenizer.convert_tokens_to_ids("<|end_of_text|>")
    assert any("'unk' is not a token of this tokenizer" in fix for fix in codec.fixes)
    ids = codec.encode(CODE)
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|begin_of_text|>") and ids.count(ids[0]) == 1


def test_llama3_instruct_stops_at_eot_and_its_template_carries_the_bos(mimic):
    spec, codec = mimic("llama3-instruct")
    tokenizer = codec.tokenizer
    assert tokenizer.convert_tokens_to_ids("<|eot_id|>") in codec.eos_ids
    ids = codec.encode_request(GenerationRequest("t/0", CODE, (0,), prompt_style="instruct"))
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|begin_of_text|>") and ids.count(ids[0]) == 1
    assert decide_style("auto", codec.chat_template).style == "instruct"


def test_starcoder_no_bos_pads_with_eos_and_stops_at_file_markers(mimic):
    spec, codec = mimic("starcoder")
    assert spec.family == "gpt_bigcode" and "<file_sep>" in spec.extra_stop_sequences
    assert codec.encode(CODE) == codec.tokenizer(CODE, add_special_tokens=False)["input_ids"]
    assert not codec.add_bos and codec.pad_id == codec.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert decide_style("auto", codec.chat_template).style == "base"


def test_qwen2_has_no_bos_and_keeps_its_pad(mimic):
    spec, codec = mimic("qwen2")
    assert codec.bos_id is None and not codec.add_bos and not any(fix.startswith("pad") for fix in codec.fixes)
    assert codec.pad_id == codec.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert "<|file_sep|>" in spec.extra_stop_sequences


def test_qwen2_instruct_ends_at_im_end_and_is_asked_through_its_template(mimic):
    spec, codec = mimic("qwen2-instruct")
    tokenizer = codec.tokenizer
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in codec.eos_ids
    text = tokenizer.decode(codec.encode_request(GenerationRequest("t/0", CODE, (0,), prompt_style="instruct")))
    assert text.startswith("<|im_start|>system\nYou are Qwen") and text.endswith("```python\n")


# -- the real GGUF tokenizers ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def smollm2_codec(smollm2_path):
    from evalsuite.generation.hf.loading import load_config_and_tokenizer

    config, tokenizer, spec = load_config_and_tokenizer(resolve_model(str(smollm2_path)), trust=False)
    return spec, prepare_codec(tokenizer, spec, config.vocab_size)


def test_smollm2_gets_no_bos_because_its_tokenizer_says_add_bos_token_false(smollm2_codec):
    """A bug once: the llama family rule added <|im_start|> (its BOS) before every raw prompt."""
    spec, codec = smollm2_codec
    tokenizer = codec.tokenizer
    assert spec.family == "llama" and tokenizer.bos_token == "<|im_start|>" and not tokenizer.add_bos_token
    ids = codec.encode(CODE)
    assert codec.bos_id not in ids and not codec.add_bos
    assert codec.pad_id == tokenizer.pad_token_id == 2  # its own pad (<|im_end|>), not the family's unk
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in codec.eos_ids
    assert decide_style("auto", codec.chat_template).style == "instruct"
    instruct = codec.encode_request(GenerationRequest("t/0", CODE, (0,), prompt_style="instruct"))
    assert tokenizer.decode(instruct).startswith("<|im_start|>system\n")  # the template's own turn marker


@pytest.mark.slow
def test_gemma_base_adds_its_bos_and_has_no_template(gemma_path):
    from evalsuite.generation.hf.loading import load_config_and_tokenizer

    config, tokenizer, spec = load_config_and_tokenizer(resolve_model(str(gemma_path)), trust=False)
    spec = with_family(spec, config.model_type)
    codec = prepare_codec(tokenizer, spec, config.vocab_size)
    assert codec.encode(CODE)[0] == tokenizer.convert_tokens_to_ids("<bos>") and codec.add_bos
    assert codec.encode(CODE) == tokenizer(CODE)["input_ids"]  # exactly the tokenizer's own special tokens
    assert codec.pad_id == tokenizer.convert_tokens_to_ids("<pad>") and not any(f.startswith("pad") for f in codec.fixes)
    assert decide_style("auto", codec.chat_template).style == "base"
