"""Between prompt text and token ids: the per-family details that silently change HumanEval numbers.

:func:`prepare_codec` inspects a tokenizer once, applies the registry entry's fixes and returns a
:class:`PromptCodec`, which every backend step then goes through:

* a pad id when the tokenizer has none (we pad by hand, on the left, whatever the tokenizer's default);
  a registry preference the tokenizer lacks (``unk`` on a Llama-3 tokenizer) falls back to the next
  special token it has, and padding is masked anyway;
* the BOS the tokenizer itself adds (``add_bos_token`` and its post-processor, as lm-evaluation-harness and
  vLLM do), unless a registry alias overrides it with a cited reason; never two, and never a trailing EOS
  a tokenizer may append;
* instruct prompts rendered through the tokenizer's chat template (:mod:`evalsuite.protocol.prompting`),
  whose text carries its own special tokens, and the template's end-of-turn token as an extra EOS;
* decoding of generated ids after an anchor of prompt ids, so SentencePiece tokenizers (which drop the
  first token's leading space when decoding) keep the continuation's indent; never "cleaning up" spaces;
* the ids past the tokenizer's vocabulary (GPT-J's 50400-row embedding over 50257 tokens) masked.

Stripping a prompt's trailing whitespace is not a model fix but a protocol setting (``--strip-prompt``),
applied by the runner the same way for every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.registry import ModelSpec
from evalsuite.protocol.prompting import chat_prompt, end_of_turn_ids, template_sha256
from evalsuite.records import GenerationRequest

ANCHOR_TOKENS = 8  # prompt ids decoded before the continuation to give it its context
_PROBE = "def f(x):\n    return x\n"


@dataclass
class PromptCodec:
    """Encodes prompts and decodes continuations for one tokenizer under one model's fixes."""

    tokenizer: Any
    pad_id: int
    bos_id: int | None
    add_bos: bool
    eos_ids: frozenset[int]  # the tokenizer's EOS, the checkpoint's generation_config EOS, the template's end of turn
    vocab_limit: int  # ids >= this are not tokens of the tokenizer and are never generated
    special_ids: frozenset[int] = frozenset()
    fixes: list[str] = field(default_factory=list)
    bos_source: str = "tokenizer"  # "tokenizer" (its own add_special_tokens) or "registry: <reason>"

    # -- prompts -----------------------------------------------------------------------------------
    def encode(self, prompt: str) -> list[int]:
        """A base-style prompt: its tokens, with exactly the BOS the policy asks for."""
        ids = list(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        if self.add_bos and self.bos_id is not None and (not ids or ids[0] != self.bos_id):
            ids.insert(0, self.bos_id)
        if not ids:
            raise EvalsuiteError("empty prompt: the model needs at least one token to continue from")
        return ids

    def encode_request(self, request: GenerationRequest) -> list[int]:
        """What the model sees for ``request``: base style as :meth:`encode`; instruct style the chat
        template's text, which holds every special token the template wants (its BOS included), so none is
        added (as ``apply_chat_template(tokenize=True)`` does)."""
        if request.prompt_style != "instruct":
            return self.encode(request.prompt)
        return list(self.tokenizer(chat_prompt(self.tokenizer, request.prompt),
                                   add_special_tokens=False)["input_ids"])

    @property
    def chat_template(self) -> str | None:
        return getattr(self.tokenizer, "chat_template", None) or None

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

    def describe(self) -> dict[str, Any]:
        return {**self.policy(), "fixes": list(self.fixes)}

    def policy(self) -> dict[str, Any]:
        """Everything of the codec that changes which ids the model sees or when it stops: part of the
        run identity, so completions made under two policies never mix in one run."""
        return {"pad_id": self.pad_id, "bos": self.bos_id if self.add_bos else None, "bos_source": self.bos_source,
                "eos_ids": sorted(self.eos_ids), "vocab_limit": self.vocab_limit,
                "chat_template_sha256": template_sha256(self.chat_template)}


def _token_id(tokenizer: Any, token: str | None) -> int | None:
    if token is None:
        return None
    token_id = tokenizer.convert_tokens_to_ids(token)
    if token_id is None or (token_id == tokenizer.unk_token_id and token != tokenizer.unk_token):
        return None
    return int(token_id)


def _resolve_pad(tokenizer: Any, spec: ModelSpec, fixes: list[str]) -> int:
    """The tokenizer's pad token; else the registry's preference; else the first special token it has.

    The pad value never reaches the model (padding is masked), so a preference the tokenizer lacks (the
    llama family's ``unk`` on a Llama-3 tokenizer, which has no unk) falls back instead of failing.
    """
    if tokenizer.pad_token_id is not None:
        return int(tokenizer.pad_token_id)
    named = {"eos": tokenizer.eos_token, "unk": tokenizer.unk_token, "bos": tokenizer.bos_token}
    candidates = ["eos", "unk", "bos"]
    if spec.pad_token is not None:
        candidates = [spec.pad_token] + [c for c in candidates if c != spec.pad_token]
    for choice in candidates:
        token = named.get(choice, choice)
        token_id = _token_id(tokenizer, token)
        if token_id is not None:
            tokenizer.pad_token = token
            fallback = (f"; the registry's {spec.pad_token!r} is not a token of this tokenizer"
                        if spec.pad_token is not None and choice != spec.pad_token else "")
            fixes.append(f"pad_token={token!r} (id {token_id}; the tokenizer had none{fallback})")
            return token_id
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
    bos_source = "tokenizer"
    if spec.bos == "add":
        add_bos = bos_id is not None
        bos_source = f"registry: {spec.reason}"
        if add_bos and not adds_bos:
            fixes.append(f"BOS {tokenizer.bos_token!r} added (the tokenizer does not add it; {spec.reason})")
        if bos_id is None:
            fixes.append("no BOS: the registry asks for one but the tokenizer defines none")
    elif spec.bos == "none":
        add_bos = False
        bos_source = f"registry: {spec.reason}"
        if adds_bos:
            fixes.append(f"BOS {tokenizer.bos_token!r} not added (the tokenizer would add it; {spec.reason})")
    else:
        add_bos = adds_bos
    if adds_eos:
        fixes.append(f"EOS {tokenizer.eos_token!r} not appended to prompts (the tokenizer would)")

    vocab_limit = len(tokenizer)
    if embedding_rows is not None and embedding_rows > vocab_limit:
        fixes.append(f"ids {vocab_limit}..{embedding_rows - 1} masked (embedding has {embedding_rows} rows, "
                     f"the tokenizer {vocab_limit} tokens)")
    elif embedding_rows is not None:
        vocab_limit = embedding_rows
    eos_ids = eos_ids_of(tokenizer, generation_config, vocab_limit)
    turn_ends = {i for i in end_of_turn_ids(tokenizer) if 0 <= i < vocab_limit} - set(eos_ids)
    if turn_ends:
        names = ", ".join(repr(tokenizer.convert_ids_to_tokens(i)) for i in sorted(turn_ends))
        fixes.append(f"end-of-turn {names} of the chat template also ends a completion")
    special_ids = frozenset(int(i) for i in getattr(tokenizer, "all_special_ids", []) or [])
    return PromptCodec(tokenizer=tokenizer, pad_id=pad_id, bos_id=bos_id, add_bos=add_bos,
                       eos_ids=frozenset(eos_ids | turn_ends), vocab_limit=vocab_limit,
                       special_ids=special_ids, fixes=fixes, bos_source=bos_source)
