"""Attention for a packed prefill: each prompt attends to its own earlier tokens only, at the cost of its own
length squared, not the pack's.

Why: the engine runs several prompts through the model's own forward as one sequence (models.py,
``GenericAdapter.prefill``). Given a dense [tokens, tokens] mask, SDPA computes every pair of the pack and
masks most of them away: for HumanEval's 164 prompts in packs of ~4,000 tokens that is ~30 times the needed
work, and in float32 (no flash kernel) it was 268 of 442 ms of the device's prefill time (random SmolLM2-135M,
H200, ``benchmarks/profile_prefill.py``). Here the model's attention modules call :func:`packed_sdpa` instead
(transformers' attention interface, under the name :data:`NAME`, for the one forward): the prompts are gathered
into a few right-padded batches of similar lengths and each batch runs SDPA with ``is_causal``, which needs no
mask (a right-padded row's real queries only see real keys); the outputs are gathered back into pack order.
The rest of the forward (projections, norms, rotary, the cache) is the model's own, as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from evalsuite.engine.host_values import to_device
from evalsuite.errors import EvalsuiteError

NAME = "evalsuite_packed_sdpa"
KWARG = "evalsuite_pack"  # the forward's keyword that carries the :class:`PackedBatches` to each attention call
# prompts whose lengths are within this factor of their batch's longest share one padded batch: at most
# 1.5^2 the attention work of the prompts alone, in a few batches (HumanEval's 30-600 token prompts: <= 8)
LENGTH_RATIO = 1.5


@dataclass(frozen=True)
class PaddedBatch:
    """Prompts of similar lengths as one right-padded batch: row r, position t is packed token
    ``index[r * length + t]`` (a row's padding repeats its last token, whose outputs are dropped)."""

    rows: int
    length: int
    index: torch.Tensor  # [rows * length], into the pack's tokens, on the device


@dataclass(frozen=True)
class PackedBatches:
    """A pack's prompts as padded batches, and where each packed token's output lies in their outputs, laid
    end to end (``gather_back``)."""

    batches: tuple[PaddedBatch, ...]
    gather_back: torch.Tensor  # [tokens], on the device

    @classmethod
    def of(cls, lengths: Sequence[int], device: torch.device, ratio: float = LENGTH_RATIO) -> PackedBatches:
        """Group prompts (token counts ``lengths``, packed one after another) longest first; all indices built
        on the host and sent in one copy."""
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        groups: list[list[int]] = []
        for prompt in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
            if groups and lengths[prompt] * ratio >= lengths[groups[-1][0]]:
                groups[-1].append(prompt)
            else:
                groups.append([prompt])
        gather_back = np.empty(int(sum(lengths)), dtype=np.int64)
        shapes, indices, offset = [], [], 0
        for group in groups:
            length = lengths[group[0]]
            for row, prompt in enumerate(group):
                own = np.arange(lengths[prompt])
                gather_back[starts[prompt] + own] = offset + row * length + own
                indices.append(starts[prompt] + np.minimum(np.arange(length), lengths[prompt] - 1))
            shapes.append((len(group), length))
            offset += len(group) * length
        sent = to_device(np.concatenate([*indices, gather_back]).tolist(), device)
        batches, at = [], 0
        for rows, length in shapes:
            batches.append(PaddedBatch(rows, length, sent[at:at + rows * length]))
            at += rows * length
        return cls(tuple(batches), sent[at:])


def packed_sdpa(module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask, dropout=0.0,
                scaling=None, **kwargs) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: query [1, Hq, tokens, D], key and value [1, Hkv, tokens, D]
    of one packed sequence; returns [1, tokens, Hq, D] as transformers' own functions do."""
    pack: PackedBatches | None = kwargs.get(KWARG)
    if pack is None:  # never silently attend across prompts
        raise EvalsuiteError(f"{NAME} attention called without the pack's layout ({KWARG})")
    if kwargs.get("softcap") is not None or kwargs.get("position_bias") is not None:
        raise EvalsuiteError(f"{NAME} attention does not implement soft-capping or position biases")
    groups = query.shape[1] // key.shape[1]
    outputs = []
    for batch in pack.batches:
        k, v = _rows(key, batch), _rows(value, batch)
        if groups > 1:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = torch.nn.functional.scaled_dot_product_attention(_rows(query, batch), k, v, dropout_p=dropout,
                                                               scale=scaling, is_causal=batch.length > 1)
        outputs.append(out.transpose(1, 2).reshape(-1, out.shape[1], out.shape[3]))  # [rows * length, Hq, D]
    flat = outputs[0] if len(outputs) == 1 else torch.cat(outputs)
    return flat.index_select(0, pack.gather_back)[None], None


def _rows(x: torch.Tensor, batch: PaddedBatch) -> torch.Tensor:
    """[1, H, tokens, D] of the pack -> [rows, H, length, D] of ``batch``."""
    heads, dim = x.shape[1], x.shape[3]
    return x[0].index_select(1, batch.index).view(heads, batch.rows, batch.length, dim).transpose(0, 1)


_registered = False


def _register() -> None:
    global _registered
    if not _registered:
        from transformers import AttentionInterface

        AttentionInterface.register(NAME, packed_sdpa)
        _registered = True


def usable(model) -> bool:
    """Whether ``model``'s forward may run with :func:`packed_sdpa`: it attends through SDPA without soft-capping
    its attention scores (eager models, and Gemma 2, which soft-caps, keep the dense mask) and its attention
    modules look their function up by name (transformers' attention interface)."""
    config = model.config
    if getattr(config, "_attn_implementation", None) != "sdpa" or getattr(config, "attn_logit_softcapping", None):
        return False
    try:
        from transformers import AttentionInterface  # noqa: F401
    except ImportError:  # pragma: no cover - older transformers
        return False
    return True


@contextlib.contextmanager
def in_use(model) -> Iterator[None]:
    """The model's attention modules call :func:`packed_sdpa` inside; the model's own implementation again
    after, also when the forward raises."""
    _register()
    config = model.config
    before = config._attn_implementation
    config._attn_implementation = NAME
    try:
        yield
    finally:
        config._attn_implementation = before
