"""The engine's KV cache: prompt slots (a prompt's keys and values stored once, shared by all its samples)
and a token arena for what the samples generate, sized from the device's free memory.

Why two pools: HumanEval prompts average ~150 tokens and pass@100 draws 200 samples each; copying the
prompt into every sample's cache would store (and read) it 200 times.

Why an arena and not a slot of ``max_new_tokens`` per sample: sample lengths are long-tailed (the realistic
workload of benchmarks/bench_generate.py: mean 149 tokens, cap 512), so a full slot per row holds mostly
nothing, and on an 80 GB card it stopped GPT-J-6B at 255 rows while its matrix products only fill the GPU
from ~400. A sample's keys stay contiguous (the attention kernels read a row as one run of keys, as before):
it starts in a block of :attr:`CachePlan.block` tokens and moves to a block twice as large when it fills one
(in place when the neighbouring block is free), a buddy allocator. When no block is free, the engine evicts
the youngest sample, which starts again later (engine.py); planned for the workload's typical footprint, that is rare.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from evalsuite.engine.host_values import to_device
from evalsuite.engine.kernels import AttentionSpec

GiB = 1 << 30
# The arena is planned for this many tokens per decode row on average (blocks included): the realistic workload's
# running samples hold ~190 tokens of blocks each at 512 rows (a replay of its schedule); longer ones take
# more while shorter ones take less, and past the arena the youngest sample waits (its restart costs its tokens).
PLANNED_TOKENS_PER_ROW = 192
# a sample's first block, in tokens: half of the realistic workload's samples fit it, and a replay of its schedule
# at 512 rows moves 1,900 samples to larger blocks (4,300 from blocks of 64)
FIRST_BLOCK = 128


@dataclass(frozen=True)
class CachePlan:
    prompt_slots: int
    prompt_capacity: int  # tokens per prompt slot
    rows: int  # decode rows
    gen_capacity: int  # most tokens one sample generates (its largest block is ``top_block``)
    arena_tokens: int  # generated tokens all running samples hold together (a multiple of ``top_block``)
    bytes_per_token: int
    first_block: int = FIRST_BLOCK

    @property
    def block(self) -> int:
        """A sample's first block: ``first_block``, or its whole capacity's power of two when smaller."""
        return min(_power_of_two_at_least(self.first_block), _power_of_two_at_least(self.gen_capacity))

    @property
    def top_block(self) -> int:
        return self.block * _power_of_two_at_least(-(-self.gen_capacity // self.block))

    @property
    def total_bytes(self) -> int:
        # the arena, and after it one top block: idle rows' scratch keys, and the room a view of the last
        # block's full capacity reaches into (KVCache.layer)
        return self.bytes_per_token * (self.prompt_slots * self.prompt_capacity + self.arena_tokens
                                       + self.top_block)


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def kv_bytes_per_token(spec: AttentionSpec, num_layers: int, dtype: torch.dtype) -> int:
    return 2 * num_layers * spec.num_kv_heads * spec.head_dim * torch.tensor([], dtype=dtype).element_size()


def plan_cache(*, budget_bytes: int, bytes_per_token: int, prompt_capacity: int, gen_capacity: int,
               num_prompts: int, samples_per_prompt: int, max_rows: int,
               first_block: int = FIRST_BLOCK, row_limit: int | None = None) -> CachePlan:
    """Most decode rows (up to ``max_rows``) whose arena, at :data:`PLANNED_TOKENS_PER_ROW` a row (or the
    whole capacity, when smaller), fits ``budget_bytes`` next to enough prompt slots to keep them busy; the
    arena then takes the rest of the budget, up to a largest block per row (no sample ever waits for room)
    and ``row_limit`` tokens per row (at least a first block; the total rounded up to a largest block).

    A prompt holds its slot until its last sample ends, and sample lengths are long-tailed (pass@k: a few
    run to the token limit), so while its last samples finish, the next prompts' samples must already be
    running in the freed rows. With only two prompts in reserve, rows stood idle waiting for a prompt slot
    (GPT-J realistic workload, 255 rows, 200 samples a prompt: 200 of 255 rows busy on average; a replay of
    that schedule needs 6 prompt slots for 218, the most the tail allows). So: the prompts that fill the
    rows, and as many again plus two in reserve, as long as the reserve takes at most a sixteenth of the
    budget (at least two)."""
    per_prompt_slot = max(1, prompt_capacity * bytes_per_token)
    shape = CachePlan(1, prompt_capacity, 1, gen_capacity, 0, bytes_per_token, first_block)
    top, per_row = shape.top_block, min(gen_capacity, PLANNED_TOKENS_PER_ROW)
    rows = max_rows
    while True:
        need = -(-rows // max(1, samples_per_prompt))
        reserve = max(2, min(need + 2, budget_bytes // 16 // per_prompt_slot))
        prompts = min(num_prompts, rows + 1, need + reserve)
        room = budget_bytes // max(1, bytes_per_token) - prompts * prompt_capacity - top  # arena tokens that fit
        arena = min(rows * top, room // top * top)
        if row_limit is not None:
            arena = min(arena, -(-rows * max(row_limit, shape.block) // top) * top)
        if rows == 1 or (arena >= top and arena >= rows * per_row):
            return CachePlan(prompts if rows > 1 else 1, prompt_capacity, rows, gen_capacity,
                             max(arena, top), bytes_per_token, first_block)
        rows = rows - max(1, rows // 16)


class KVCache:
    """Keys and values for all layers in two allocations: prompts [layers, 2, slots, kv_heads, capacity,
    head_dim] and the arena [layers, 2, kv_heads, tokens, head_dim]."""

    def __init__(self, plan: CachePlan, spec: AttentionSpec, num_layers: int, dtype: torch.dtype, device):
        self.plan = plan
        shape = (num_layers, 2)
        # zeros, not empty: the torch reference attention reads whole slots (masked), and 0 * NaN is NaN.
        self.prompt = torch.zeros(*shape, plan.prompt_slots, spec.num_kv_heads, plan.prompt_capacity,
                                  spec.head_dim, dtype=dtype, device=device)
        self.gen = torch.zeros(*shape, spec.num_kv_heads, plan.arena_tokens + plan.top_block, spec.head_dim,
                               dtype=dtype, device=device)
        self.scratch_slot = plan.arena_tokens  # where idle rows write and read their one key

    def layer(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Prompt keys and values [slots, kv_heads, capacity, head_dim]; generated ones as the same shape,
        [arena tokens + 1, kv_heads, top block, head_dim], where "slot" s is the run of keys starting at arena
        token s (overlapping views: a sample's block start is its slot), so the attention code is the same for
        both."""
        return (self.prompt[index, 0], self.prompt[index, 1],
                self._runs(self.gen[index, 0]), self._runs(self.gen[index, 1]))

    def _runs(self, arena: torch.Tensor) -> torch.Tensor:
        heads, tokens, dim = arena.shape
        return arena.as_strided((self.plan.arena_tokens + 1, heads, self.plan.top_block, dim),
                                (arena.stride(1), arena.stride(0), arena.stride(1), arena.stride(2)))

    def move(self, source: int, target: int, tokens: int) -> None:
        """Copy a sample's first ``tokens`` keys and values, every layer, from block ``source`` to ``target``
        (queued on the device's stream, so after the steps that wrote them and before the next)."""
        self.gen[:, :, :, target:target + tokens].copy_(self.gen[:, :, :, source:source + tokens])

    def store_prompts(self, slots: list[int], layers: list[tuple[torch.Tensor, torch.Tensor]],
                      owners: torch.Tensor | None, positions: torch.Tensor | None) -> None:
        """Keys and values of the prompts one forward ran (layers: per layer [kv_heads, tokens, head_dim]) into
        their slots. Packed prompts (token i at ``positions[i]`` of prompt ``owners[i]``, on the device) take one
        scatter per layer's keys and one per its values however many prompts the forward had (a copy per
        prompt and layer was 2.4 ms of host time per prompt for SmolLM2's 30 layers, under the profiler); one
        prompt alone (``owners`` None) is copied to the front of its slot."""
        if owners is None:
            length = layers[0][0].shape[1]
            for index, (keys, values) in enumerate(layers):
                self.prompt[index, 0, slots[0], :, :length].copy_(keys)
                self.prompt[index, 1, slots[0], :, :length].copy_(values)
            return
        slot = to_device(slots, self.prompt.device)[owners]
        for index, (keys, values) in enumerate(layers):
            # [slot, :, position] puts the indexed (token) dimension first: [tokens, kv_heads, head_dim]
            self.prompt[index, 0][slot, :, positions] = keys.transpose(0, 1)
            self.prompt[index, 1][slot, :, positions] = values.transpose(0, 1)


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


class TokenArena:
    """Buddy allocator of the arena's tokens: blocks of ``block * 2**k`` tokens up to ``top``, each aligned to
    its size, so a block's buddy (the other half of the block twice its size) is ``start ^ size``. Lowest
    free start first, so running samples stay packed and larger blocks stay whole."""

    def __init__(self, tokens: int, block: int, top: int):
        if tokens % top or top % block:
            raise ValueError(f"arena of {tokens} tokens, blocks of {block} to {top}: not multiples")
        self.block = block
        self.orders = (top // block).bit_length()  # order k: a block of block << k tokens, k < orders
        self.free: list[set[int]] = [set() for _ in range(self.orders)]
        self.free[-1].update(range(0, tokens, top))
        self.order_of: dict[int, int] = {}  # taken block start -> its order
        self.free_tokens = tokens

    def size(self, start: int) -> int:
        return self.block << self.order_of[start]

    def take(self, order: int = 0) -> int | None:
        """A free block of ``block << order`` tokens (its start), or None when none is left."""
        found = next((k for k in range(order, self.orders) if self.free[k]), None)
        if found is None:
            return None
        start = min(self.free[found])
        self.free[found].discard(start)
        while found > order:  # split: keep the lower half, free the upper
            found -= 1
            self.free[found].add(start + (self.block << found))
        self.order_of[start] = order
        self.free_tokens -= self.block << order
        return start

    def give(self, start: int) -> None:
        order = self.order_of.pop(start)
        self.free_tokens += self.block << order
        while order < self.orders - 1 and (start ^ (self.block << order)) in self.free[order]:
            buddy = start ^ (self.block << order)
            self.free[order].discard(buddy)
            start, order = min(start, buddy), order + 1
        self.free[order].add(start)

    def grow(self, start: int) -> tuple[int, bool] | None:
        """Double the block at ``start``: in place when its upper buddy is free (returns (start, False)),
        else into a new block (returns (new start, True): the caller copies the keys before reusing the old
        block, which is already given back). None: no room (or already the largest block)."""
        order = self.order_of[start]
        if order == self.orders - 1:
            return None
        size = self.block << order
        if start % (2 * size) == 0 and start + size in self.free[order]:
            self.free[order].discard(start + size)
            self.order_of[start] = order + 1
            self.free_tokens -= size
            return start, False
        target = self.take(order + 1)
        if target is None:
            return None
        self.give(start)
        return target, True
