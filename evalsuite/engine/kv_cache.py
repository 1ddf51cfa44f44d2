"""The engine's KV cache: prompt slots (a prompt's keys and values stored once, shared by all its samples)
and generation slots (one per running sample), sized from the device's free memory.

Why two pools: HumanEval prompts average ~150 tokens and pass@100 draws 200 samples each; copying the
prompt into every sample's cache would store (and read) it 200 times. Why fixed-size slots and not pages:
a generation slot holds at most ``max_new_tokens`` entries, and at the batch sizes where decoding is still
memory-bound a slot per sample already fits (measured in benchmarks/bench_generate.py); slots need no
block tables and no preemption.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from evalsuite.engine.kernels import AttentionSpec

GiB = 1 << 30


@dataclass(frozen=True)
class CachePlan:
    prompt_slots: int
    prompt_capacity: int  # tokens per prompt slot
    gen_slots: int  # usable generation slots; one more is allocated as scratch for idle rows
    gen_capacity: int  # tokens per generation slot
    bytes_per_token: int

    @property
    def total_bytes(self) -> int:
        return self.bytes_per_token * (self.prompt_slots * self.prompt_capacity
                                       + (self.gen_slots + 1) * self.gen_capacity)


def kv_bytes_per_token(spec: AttentionSpec, num_layers: int, dtype: torch.dtype) -> int:
    return 2 * num_layers * spec.num_kv_heads * spec.head_dim * torch.tensor([], dtype=dtype).element_size()


def plan_cache(*, budget_bytes: int, bytes_per_token: int, prompt_capacity: int, gen_capacity: int,
               num_prompts: int, samples_per_prompt: int, max_rows: int) -> CachePlan:
    """Largest number of generation slots (up to ``max_rows``) that fits ``budget_bytes`` next to enough
    prompt slots to keep them busy.

    A prompt holds its slot until its last sample ends, and sample lengths are long-tailed (pass@k: a few
    run to the token limit), so while its last samples finish, the next prompts' samples must already be
    running in the freed rows. With only two prompts in reserve, rows stood idle waiting for a prompt slot
    (GPT-J realistic workload, 255 rows, 200 samples a prompt: 200 of 255 rows busy on average; a replay of
    that schedule needs 6 prompt slots for 218, the most the tail allows). So: the prompts that fill the
    rows, and as many again plus two in reserve, as long as the reserve takes at most a sixteenth of the
    budget (at least two)."""
    per_prompt_slot = max(1, prompt_capacity * bytes_per_token)
    rows = max_rows
    while rows > 1:
        need = -(-rows // max(1, samples_per_prompt))
        reserve = max(2, min(need + 2, budget_bytes // 16 // per_prompt_slot))
        prompts = min(num_prompts, rows + 1, need + reserve)
        plan = CachePlan(prompts, prompt_capacity, rows, gen_capacity, bytes_per_token)
        if plan.total_bytes <= budget_bytes:
            return plan
        rows = rows - max(1, rows // 16)
    return CachePlan(1, prompt_capacity, 1, gen_capacity, bytes_per_token)


class KVCache:
    """Keys and values for all layers in two allocations: [layers, 2, slots, kv_heads, capacity, head_dim]."""

    def __init__(self, plan: CachePlan, spec: AttentionSpec, num_layers: int, dtype: torch.dtype, device):
        self.plan = plan
        shape = (num_layers, 2)
        # zeros, not empty: the torch reference attention reads whole slots (masked), and 0 * NaN is NaN.
        self.prompt = torch.zeros(*shape, plan.prompt_slots, spec.num_kv_heads, plan.prompt_capacity,
                                  spec.head_dim, dtype=dtype, device=device)
        self.gen = torch.zeros(*shape, plan.gen_slots + 1, spec.num_kv_heads, plan.gen_capacity, spec.head_dim,
                               dtype=dtype, device=device)
        self.scratch_slot = plan.gen_slots

    def layer(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.prompt[index, 0], self.prompt[index, 1], self.gen[index, 0], self.gen[index, 1]

    def store_prompt(self, slot: int, layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """layers: per layer (keys, values) as [kv_heads, L, head_dim]."""
        length = layers[0][0].shape[1]
        for index, (keys, values) in enumerate(layers):
            self.prompt[index, 0, slot, :, :length].copy_(keys)
            self.prompt[index, 1, slot, :, :length].copy_(values)


class SlotPool:
    """Free-list of slot indices."""

    def __init__(self, size: int):
        self._free = list(range(size - 1, -1, -1))

    def __len__(self) -> int:
        return len(self._free)

    def take(self) -> int:
        return self._free.pop()

    def give(self, slot: int) -> None:
        self._free.append(slot)
