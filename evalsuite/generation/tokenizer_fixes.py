"""Between prompt text and token ids: the per-family details that silently change HumanEval numbers.

:func:`prepare_codec` inspects a tokenizer once, applies the registry entry's fixes and returns a
:class:`PromptCodec`, which every backend step then goes through:

* a pad id when the tokenizer has none (we pad by hand, on the left, whatever the tokenizer's default);
* exactly the BOS the policy asks for (never two, and never a trailing EOS a tokenizer may append);
* optional stripping of the prompt's trailing whitespace, with the completion mapped back onto the
  original prompt so that ``prompt + completion`` is still what the model wrote;
* decoding of generated ids after an anchor of prompt ids, so SentencePiece tokenizers (which drop the
  first token's leading space when decoding) keep the continuation's indent; never "cleaning up" spaces;
* the ids past the tokenizer's vocabulary (GPT-J's 50400-row embedding over 50257 tokens) masked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from evalsuite.errors import EvalsuiteError
from evalsuite.registry import ModelSpec

ANCHOR_TOKENS = 8  # prompt ids decoded before the continuation to give it its context
_PROBE = "def f(x):\n    return x\n"


@dataclass
class PromptCodec:
    """Encodes prompts and decodes continuations for one tokenizer under one model's fixes."""

    tokenizer: Any
    pad_id: int
    bos_id: int | None
    add_bos: bool
    eos_ids: frozenset[int]
    strip_prompt_whitespace: bool
    vocab_limit: int  # ids >= this are not tokens of the tokenizer and are never generated
    special_ids: frozenset[int] = frozenset()
    fixes: list[str] = field(default_factory=list)

    # -- prompts -----------------------------------------------------------------------------------
    def model_prompt(self, prompt: str) -> str:
        """The text the model actually sees."""
        return prompt.rstrip() if self.strip_prompt_whitespace else prompt

    def encode(self, prompt: str) -> list[int]:
        ids = list(self.tokenizer(self.model_prompt(prompt), add_special_tokens=False)["input_ids"])
        if self.add_bos and self.bos_id is not None and (not ids or ids[0] != self.bos_id):
            ids.insert(0, self.bos_id)
        if not ids:
            raise EvalsuiteError("empty prompt: the model needs at least one token to continue from")
        return ids

    # -- continuations -----------------------------------------------------------------------------
    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def decode_continuation(self, prompt_ids: Sequence[int], generated: Sequence[int]) -> str:
        """Text of ``generated`` only, decoded after the last prompt ids and cut off behind them.

        The anchor matters for SentencePiece (a lone first piece "▁▁▁▁return" decodes without its first
        space) and for byte-level BPE (a character split across the prompt/continuation boundary).
        """
        anchor = [i for i in prompt_ids[-ANCHOR_TOKENS:] if i not in self.special_ids]
        if anchor:
            head = self.decode(anchor)
            full = self.decode(anchor + list(generated))
            if full.startswith(head):
                return full[len(head):]
        return self.decode(generated)

    def to_completion(self, prompt: str, generated_text: str) -> str:
        """The completion relative to the ORIGINAL prompt (differs only when the prompt was stripped).

        If the model re-wrote the stripped whitespace, that part is dropped; if it wrote something else,
        the completion is its text as is (prompt + completion then differs from what it saw only in the
        prompt's trailing whitespace, which is the point of stripping).
        """
        seen = self.model_prompt(prompt)
        if seen == prompt:
            return generated_text
        written = seen + generated_text
        return written[len(prompt):] if written.startswith(prompt) else generated_text

    def describe(self) -> dict[str, Any]:
        return {"pad_id": self.pad_id, "bos": self.bos_id if self.add_bos else None,
                "eos_ids": sorted(self.eos_ids), "strip_prompt_whitespace": self.strip_prompt_whitespace,
                "vocab_limit": self.vocab_limit, "fixes": list(self.fixes)}


def _token_id(tokenizer: Any, token: str | None) -> int | None:
    if token is None:
        return None
    token_id = tokenizer.convert_tokens_to_ids(token)
    if token_id is None or (token_id == tokenizer.unk_token_id and token != tokenizer.unk_token):
        return None
    return int(token_id)


def _resolve_pad(tokenizer: Any, spec: ModelSpec, fixes: list[str]) -> int:
    if tokenizer.pad_token_id is not None:
        return int(tokenizer.pad_token_id)
    named = {"eos": tokenizer.eos_token, "unk": tokenizer.unk_token, "bos": tokenizer.bos_token}
    if spec.pad_token is not None:
        candidates = [spec.pad_token]
    else:  # unknown model: the first special token it has (the pad value never reaches the model: masked)
        candidates = ["eos", "unk", "bos"]
    for choice in candidates:
        token = named.get(choice, choice)
        token_id = _token_id(tokenizer, token)
        if token_id is not None:
            tokenizer.pad_token = token
            fixes.append(f"pad_token={token!r} (id {token_id}; the tokenizer had none)")
            return token_id
    if spec.pad_token is not None:
        raise EvalsuiteError(f"model {spec.name!r}: pad_token {spec.pad_token!r} from the registry is not a "
                             "token of its tokenizer")
    fixes.append("pad id 0 (the tokenizer has no pad, eos, unk or bos token; padding is masked anyway)")
    return 0


def _tokenizer_adds(tokenizer: Any) -> tuple[bool, bool]:
    """Whether ``add_special_tokens=True`` puts a BOS in front / an EOS behind a text."""
    plain = list(tokenizer(_PROBE, add_special_tokens=False)["input_ids"])
    special = list(tokenizer(_PROBE, add_special_tokens=True)["input_ids"])
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    adds_bos = bos is not None and len(special) > len(plain) and special[0] == bos and plain[:1] != [bos]
    adds_eos = eos is not None and len(special) > len(plain) and special[-1] == eos and plain[-1:] != [eos]
    return adds_bos, adds_eos


def eos_ids_of(tokenizer: Any, generation_config: Any | None, vocab_limit: int) -> frozenset[int]:
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    configured = getattr(generation_config, "eos_token_id", None) if generation_config is not None else None
    if isinstance(configured, int):
        ids.add(configured)
    elif isinstance(configured, (list, tuple)):
        ids.update(int(i) for i in configured)
    return frozenset(i for i in ids if 0 <= i < vocab_limit)


def prepare_codec(tokenizer: Any, spec: ModelSpec, embedding_rows: int | None = None,
                  generation_config: Any | None = None) -> PromptCodec:
    """Inspect ``tokenizer``, apply ``spec``'s fixes and describe each one applied (for the run record)."""
    fixes: list[str] = []
    pad_id = _resolve_pad(tokenizer, spec, fixes)
    if getattr(tokenizer, "padding_side", "left") != "left":
        fixes.append(f"left padding (the tokenizer's default is {tokenizer.padding_side})")
        tokenizer.padding_side = "left"

    adds_bos, adds_eos = _tokenizer_adds(tokenizer)
    bos_id = tokenizer.bos_token_id
    if spec.bos == "add":
        add_bos = bos_id is not None
        if add_bos and not adds_bos:
            fixes.append(f"BOS {tokenizer.bos_token!r} added (the tokenizer does not add it)")
        if bos_id is None:
            fixes.append("no BOS: the registry asks for one but the tokenizer defines none")
    elif spec.bos == "none":
        add_bos = False
        if adds_bos:
            fixes.append(f"BOS {tokenizer.bos_token!r} not added (the tokenizer would add it)")
    else:
        add_bos = adds_bos
    if adds_eos:
        fixes.append(f"EOS {tokenizer.eos_token!r} not appended to prompts (the tokenizer would)")
    if spec.strip_prompt_whitespace:
        fixes.append("prompt trailing whitespace stripped; completion mapped back onto the original prompt")

    vocab_limit = len(tokenizer)
    if embedding_rows is not None and embedding_rows > vocab_limit:
        fixes.append(f"ids {vocab_limit}..{embedding_rows - 1} masked (embedding has {embedding_rows} rows, "
                     f"the tokenizer {vocab_limit} tokens)")
    elif embedding_rows is not None:
        vocab_limit = embedding_rows
    special_ids = frozenset(int(i) for i in getattr(tokenizer, "all_special_ids", []) or [])
    return PromptCodec(tokenizer=tokenizer, pad_id=pad_id, bos_id=bos_id, add_bos=add_bos,
                       eos_ids=eos_ids_of(tokenizer, generation_config, vocab_limit),
                       strip_prompt_whitespace=spec.strip_prompt_whitespace, vocab_limit=vocab_limit,
                       special_ids=special_ids, fixes=fixes)
