"""The engine's token arena (evalsuite/engine/kv_cache.py): blocks that never overlap, grow in place or move,
and a plan that runs more rows than a full slot per sample would allow."""

from __future__ import annotations

import random

import pytest

from evalsuite.engine.kv_cache import CachePlan, TokenArena, plan_cache


def _check(arena: TokenArena, taken: dict[int, int], total: int) -> None:
    spans = sorted((start, start + size) for start, size in taken.items())
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end <= start, f"blocks overlap: {spans}"
    for start, size in taken.items():
        assert start % size == 0 and 0 <= start and start + size <= total
        assert arena.size(start) == size
    assert arena.free_tokens == total - sum(taken.values())


def test_blocks_never_overlap_and_every_token_comes_back():
    total, block, top = 1024, 16, 128
    arena = TokenArena(total, block, top)
    taken: dict[int, int] = {}
    rng = random.Random(0)
    for _ in range(3000):
        action = rng.random()
        if action < 0.4:
            start = arena.take(rng.randrange(arena.orders))
            if start is not None:
                taken[start] = arena.size(start)
        elif action < 0.75 and taken:
            start = rng.choice(sorted(taken))
            grown = arena.grow(start)
            if grown is not None:
                new, moved = grown
                assert moved == (new != start)
                old = taken.pop(start)
                taken[new] = arena.size(new)
                assert taken[new] == 2 * old
        elif taken:
            start = rng.choice(sorted(taken))
            arena.give(start)
            del taken[start]
        _check(arena, taken, total)
    for start in list(taken):
        arena.give(start)
    assert arena.free_tokens == total
    assert sorted(arena.free[-1]) == list(range(0, total, top))  # every block merged back whole
    assert not any(arena.free[:-1])


def test_a_block_grows_in_place_when_its_buddy_is_free_else_it_moves():
    arena = TokenArena(64, 8, 32)
    a = arena.take()
    assert a == 0
    assert arena.grow(a) == (0, False)  # [8, 16) was free: the block is now [0, 16)
    b = arena.take()  # lowest free block: [16, 24)
    assert b == 16
    c = arena.take()
    assert c == 24
    assert arena.grow(b) == (32, True)  # its buddy [24, 32) is taken: it moves to [32, 48)
    assert arena.take() == 16  # and its old block is free again
    assert arena.grow(a) is None  # [16, 32) is taken and no block of 32 is free: no room
    assert arena.size(a) == 16
    assert arena.free_tokens == 64 - sum(arena.size(s) for s in arena.order_of)


def test_no_room_is_none_and_the_largest_block_does_not_grow():
    arena = TokenArena(32, 8, 32)
    whole = arena.take(2)
    assert whole == 0 and arena.take() is None
    assert arena.grow(whole) is None
    with pytest.raises(ValueError):
        TokenArena(40, 8, 32)


GPTJ_BYTES_PER_TOKEN = 2 * 28 * 16 * 256 * 2  # keys and values, 28 layers, 16 heads of 256, bfloat16


def test_gptj_on_an_80gb_card_plans_512_rows_where_full_slots_gave_255():
    """The realistic workload's shape (16 prompts x 200 samples, 512 new tokens at most, prompts up to 200
    tokens) in ~58 GB of KV budget: a full slot per sample fit 255 rows; the arena plans 512 (the engine's most),
    at 192 tokens a row, and spends the whole budget."""
    budget = 58 * 10**9
    plan = plan_cache(budget_bytes=budget, bytes_per_token=GPTJ_BYTES_PER_TOKEN, prompt_capacity=200,
                      gen_capacity=512, num_prompts=16, samples_per_prompt=200, max_rows=512)
    assert plan.rows == 512 and plan.top_block == 512 and plan.block == 128
    assert plan.total_bytes <= budget < plan.total_bytes + plan.top_block * GPTJ_BYTES_PER_TOKEN
    assert 192 * plan.rows <= plan.arena_tokens < 512 * plan.rows  # tight: samples may wait for room
    full_slots = budget // GPTJ_BYTES_PER_TOKEN // 512
    assert full_slots < 256


def test_with_memory_to_spare_every_row_can_reach_its_capacity():
    plan = plan_cache(budget_bytes=1 << 62, bytes_per_token=1024, prompt_capacity=9, gen_capacity=300,
                      num_prompts=4, samples_per_prompt=8, max_rows=16)
    assert plan.rows == 16 and plan.arena_tokens == 16 * plan.top_block and plan.top_block == 512


def test_capacity_below_the_first_block_is_one_block():
    plan = CachePlan(1, 9, 4, 24, 4 * 32, 1024)
    assert plan.block == plan.top_block == 32
    assert CachePlan(1, 9, 4, 100, 512, 1024, first_block=4).top_block == 128


def test_an_arena_limit_holds_it_to_a_full_capacity_per_row():
    """On the CPU (memory not measured) the arena takes what a slot of the full capacity per row took: 768 new
    tokens make 1024-token largest blocks, and a largest block per row would be a third more."""
    plan = plan_cache(budget_bytes=1 << 62, bytes_per_token=1024, prompt_capacity=9, gen_capacity=768,
                      num_prompts=4, samples_per_prompt=64, max_rows=64, row_limit=768)
    assert plan.rows == 64 and plan.top_block == 1024 and plan.arena_tokens == 64 * 768
    small = plan_cache(budget_bytes=1 << 62, bytes_per_token=1024, prompt_capacity=9, gen_capacity=24,
                       num_prompts=4, samples_per_prompt=8, max_rows=8, row_limit=24)
    assert small.rows == 8 and small.top_block == 32 and small.arena_tokens == 8 * 32  # a block a row at least


def test_prompts_of_one_forward_land_in_their_own_slots_and_nowhere_else():
    """store_prompts scatters a packed forward's keys and values (prompts one after another, each token's prompt
    and position given) into slots in any order; a lone prompt is copied. Every other position of the cache stays as it was."""
    import torch

    from evalsuite.engine.kernels import AttentionSpec
    from evalsuite.engine.kv_cache import KVCache

    spec = AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=8, scale=8 ** -0.5)
    plan = plan_cache(budget_bytes=1 << 30, bytes_per_token=2 * 2 * 2 * 8 * 4, prompt_capacity=6, gen_capacity=16,
                      num_prompts=5, samples_per_prompt=1, max_rows=5)
    cache = KVCache(plan, spec, 2, torch.float32, torch.device("cpu"))
    expected = torch.zeros_like(cache.prompt)
    generator = torch.Generator().manual_seed(0)
    for slots, lengths in (([3, 0, 2], [2, 6, 1]), ([1], [5])):
        tokens = sum(lengths)
        layers = [(torch.randn(2, tokens, 8, generator=generator), torch.randn(2, tokens, 8, generator=generator))
                  for _ in range(2)]
        starts = [sum(lengths[:i]) for i in range(len(lengths))]
        packed = len(slots) > 1
        owners = torch.tensor([i for i, n in enumerate(lengths) for _ in range(n)]) if packed else None
        positions = torch.tensor([p for n in lengths for p in range(n)]) if packed else None
        cache.store_prompts(slots, layers, owners, positions)
        for slot, start, length in zip(slots, starts, lengths):
            for layer, (keys, values) in enumerate(layers):
                expected[layer, 0, slot, :, :length] = keys[:, start:start + length]
                expected[layer, 1, slot, :, :length] = values[:, start:start + length]
    assert torch.equal(cache.prompt, expected)
    assert expected[:, :, [0, 1, 2, 3]].abs().sum(dim=(0, 1, 3, 4, 5)).ne(0).all()
