"""Tokenizers built to carry the special tokens and BOS/pad behaviour of real families' tokenizer files.

The vocabularies are small BPEs trained on HumanEval (see ``tiny_models.py``); what is faithful is what the
generation fixes depend on, copied from each family's published ``tokenizer_config.json`` /
``tokenizer.json``:

==========  ====================================================================================
mimic       special tokens and behaviour
==========  ====================================================================================
llama2      SentencePiece-style; ``<unk>`` ``<s>`` ``</s>``; ``add_bos_token: true``; no pad
codellama   as llama2, plus the infilling tokens ``▁<PRE>`` ``▁<MID>`` ``▁<SUF>`` ``▁<EOT>``
llama3      byte-level; ``<|begin_of_text|>`` (added as BOS) / ``<|end_of_text|>``; no unk, no pad;
            instruct variant: Llama-3-Instruct's header/``<|eot_id|>`` chat template
starcoder   byte-level; ``<|endoftext|>`` is bos = eos = unk, not added; no pad; ``<fim_*>``, ``<file_sep>``
qwen2       byte-level; no BOS; ``<|endoftext|>`` pad; instruct variant: ChatML template with
            ``<|im_start|>``/``<|im_end|>`` (eos ``<|im_end|>``) and Qwen's default system message
==========  ====================================================================================

Each is saved with ``save_pretrained`` next to a ``config.json`` naming the family's ``model_type``, so it
resolves like a real local checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tiny_models import _sentencepiece_bpe, train_byte_level_bpe

LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
QWEN2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}"
    "{% endif %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

MIMICS = ("llama2", "codellama", "llama3", "llama3-instruct", "starcoder", "qwen2", "qwen2-instruct")
MODEL_TYPES = {"llama2": "llama", "codellama": "llama", "llama3": "llama", "llama3-instruct": "llama",
               "starcoder": "gpt_bigcode", "qwen2": "qwen2", "qwen2-instruct": "qwen2"}


def _fast(tokenizer_object: Any, **special: Any):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tokenizer_object, **special)


def _llama3(instruct: bool):
    from tokenizers import processors

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    raw = train_byte_level_bpe(400, specials)
    bos = raw.token_to_id("<|begin_of_text|>")
    raw.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                       pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                                       special_tokens=[("<|begin_of_text|>", bos)])
    tokenizer = _fast(raw, bos_token="<|begin_of_text|>",
                      eos_token="<|eot_id|>" if instruct else "<|end_of_text|>")
    if instruct:
        tokenizer.chat_template = LLAMA3_TEMPLATE
    return tokenizer


def build(name: str):
    """The tokenizer of mimic ``name`` (see the module docstring)."""
    if name in ("llama2", "codellama"):
        raw = _sentencepiece_bpe(240)
        tokenizer = _fast(raw, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
        if name == "codellama":
            tokenizer.add_special_tokens({"additional_special_tokens": ["▁<PRE>", "▁<MID>", "▁<SUF>", "▁<EOT>"]})
        return tokenizer
    if name in ("llama3", "llama3-instruct"):
        return _llama3(name == "llama3-instruct")
    if name == "starcoder":
        specials = ["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>", "<file_sep>"]
        tokenizer = _fast(train_byte_level_bpe(400, specials), bos_token="<|endoftext|>",
                          eos_token="<|endoftext|>", unk_token="<|endoftext|>")
        tokenizer.add_special_tokens({"additional_special_tokens": specials[1:]})
        return tokenizer
    if name in ("qwen2", "qwen2-instruct"):
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|file_sep|>", "<|fim_pad|>"]
        instruct = name == "qwen2-instruct"
        tokenizer = _fast(train_byte_level_bpe(400, specials), pad_token="<|endoftext|>",
                          eos_token="<|im_end|>" if instruct else "<|endoftext|>")
        tokenizer.add_special_tokens({"additional_special_tokens": specials[1:]})
        if instruct:
            tokenizer.chat_template = QWEN2_TEMPLATE
        return tokenizer
    raise ValueError(f"unknown mimic {name!r}; known: {', '.join(MIMICS)}")


def save_mimic(name: str, directory: Path) -> Path:
    """Save mimic ``name``'s tokenizer and a config.json naming its family's model_type."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build(name)
    tokenizer.save_pretrained(directory)
    config = {"model_type": MODEL_TYPES[name], "vocab_size": len(tokenizer)}
    (directory / "config.json").write_text(json.dumps(config))
    return directory
