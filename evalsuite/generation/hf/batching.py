"""Which rows go into which batch, and how many rows fit.

A *row* is one sequence the model decodes: a prompt and the sample indices it produces. Greedy decoding
gives every sample of a prompt the same text, so a greedy prompt is one row whatever ``n`` is; sampling
gives each sample its own row (its own seed). Rows are sorted by prompt length, longest first, so each
batch pads little and an out-of-memory error, if any, comes at once rather than after hours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalsuite.devices import allocatable_bytes
from evalsuite.models.shape import config_shape
from evalsuite.records import GenerationRequest, SamplingParams

CPU_BATCH_SIZE = 16  # CPU throughput is flat past small batches; memory is not the limit there
MAX_BATCH_SIZE = 256
MEMORY_HEADROOM = 0.8  # fraction of free accelerator memory the batch may take


@dataclass(frozen=True)
class Row:
    request: GenerationRequest
    sample_indices: tuple[int, ...]
    prompt_ids: tuple[int, ...]


def make_rows(requests: Sequence[GenerationRequest], params: SamplingParams,
              encode: Callable[[GenerationRequest], list[int]]) -> list[Row]:
    """One row per greedy prompt or per sampled (prompt, sample index), longest prompt first."""
    rows = []
    for request in requests:
        if not request.sample_indices:
            continue
        ids = tuple(encode(request))
        if params.greedy:
            rows.append(Row(request, tuple(request.sample_indices), ids))
        else:
            rows.extend(Row(request, (index,), ids) for index in request.sample_indices)
    rows.sort(key=lambda row: -len(row.prompt_ids))  # stable: equal lengths keep request order
    return rows


def kv_bytes_per_token(config: Any, dtype_bytes: int) -> int:
    """Bytes of key/value cache one token takes over all layers."""
    return config_shape(config).kv_bytes_per_token(dtype_bytes)


def bytes_per_row(config: Any, dtype_bytes: int, sequence_length: int) -> int:
    """A generous estimate of one row's memory: KV cache, eager attention scores at prefill, fp32 logits."""
    shape = config_shape(config)
    kv = shape.kv_bytes_per_token(dtype_bytes) * sequence_length
    prefill = sequence_length * (shape.num_attention_heads * sequence_length * 4
                                 + (shape.intermediate_size + 4 * shape.hidden_size) * dtype_bytes)
    logits = shape.vocab_size * 4 * 3  # logits, processed scores and the sampler's noise, in float32
    return kv + prefill + logits


def auto_batch_size(config: Any, device: Any, dtype_bytes: int, longest_prompt: int, max_new_tokens: int,
                    free_bytes: int | None = None, cap_bytes: int | None = None) -> int:
    """The largest batch whose estimated memory fits the device's free memory (CPU: a fixed size)."""
    if getattr(device, "type", "cpu") != "cuda" and free_bytes is None:
        return CPU_BATCH_SIZE
    if free_bytes is None:
        free_bytes = allocatable_bytes(device, cap_bytes)  # within the model's --gpu-memory cap
    per_row = bytes_per_row(config, dtype_bytes, longest_prompt + max_new_tokens)
    return max(1, min(MAX_BATCH_SIZE, int(free_bytes * MEMORY_HEADROOM) // max(per_row, 1)))
