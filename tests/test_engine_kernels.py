"""The engine's Triton kernels against its torch reference (which test_engine.py ties to transformers).

Runs on a CUDA GPU, or on CPU under Triton's interpreter (TRITON_INTERPRET=1 with triton installed: 91 tests in
~1 minute; conftest.py applies tests/triton_interpreter.py's fix); skipped otherwise.
"""

from __future__ import annotations

import os

import pytest
import torch

from evalsuite.engine import kernels as K

pytestmark = pytest.mark.skipif(
    K.triton is None or not (torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1"),
    reason="needs Triton on a CUDA GPU, or TRITON_INTERPRET=1")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


CASES = {  # name: (spec, dtype)
    "gptj-like": (K.AttentionSpec(4, 4, 32, 32 ** -0.5, K.ROTARY_INTERLEAVED, 8), torch.bfloat16),
    "llama-gqa": (K.AttentionSpec(8, 2, 32, 32 ** -0.5, K.ROTARY_HALF, 32), torch.bfloat16),
    "bloom-alibi": (K.AttentionSpec(4, 4, 32, 32 ** -0.5, alibi=True, round_scores=True), torch.bfloat16),
    "odd-head-dim-fp32": (K.AttentionSpec(2, 2, 24, 24 ** -0.5, K.ROTARY_HALF, 16), torch.float32),
    "gemma-softcap-gqa": (K.AttentionSpec(4, 2, 32, 24 ** -0.5, K.ROTARY_HALF, 32, softcap=3.0), torch.bfloat16),
    "mqa-fp32": (K.AttentionSpec(4, 1, 16, 16 ** -0.5, K.ROTARY_HALF, 8), torch.float32),
    "gqa-group-3-fp32": (K.AttentionSpec(6, 2, 32, 32 ** -0.5, K.ROTARY_HALF, 32, softcap=2.0), torch.float32),
}
WINDOWS = (0, 4, 20)  # none; inside the generated keys; reaching into the prompt


def _tables(spec, dtype, positions=64):
    g = torch.Generator().manual_seed(0)
    tables = K.PositionTables()
    if spec.rotary_style:
        angles = torch.rand(positions, spec.rotary_dim, generator=g) * 6.28
        tables.cos, tables.sin = angles.cos().to(dtype).to(DEVICE), angles.sin().to(dtype).to(DEVICE)
    if spec.alibi:
        tables.alibi_slopes = (0.5 ** torch.arange(1, spec.num_heads + 1)).float().to(DEVICE)
    return tables


def _inputs(spec, dtype, batch=5, pcap=23, gcap=17, slots=6):
    g = torch.Generator().manual_seed(1)

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(dtype).to(DEVICE)

    d, hkv = spec.head_dim, spec.num_kv_heads
    fused = rnd(batch, spec.num_heads, 3, d)  # a strided q, as BLOOM's fused projection gives it
    q = fused[:, :, 0] if spec.num_heads == hkv else rnd(batch, spec.num_heads, d)
    k, v = rnd(batch, hkv, d), rnd(batch, hkv, d)
    kp, vp = rnd(3, hkv, pcap, d), rnd(3, hkv, pcap, d)
    kg, vg = rnd(slots, hkv, gcap, d), rnd(slots, hkv, gcap, d)
    i32 = dict(dtype=torch.int32, device=DEVICE)
    p_slot = torch.tensor([0, 1, 1, 2, 0], **i32)[:batch]
    p_len = torch.tensor([23, 5, 5, 0, 23], **i32)[:batch]  # per prompt slot; 0: an idle row
    g_slot = torch.tensor([3, 0, 5, 1, 2], **i32)[:batch]
    g_write = torch.tensor([0, 16, 4, 9, 1], **i32)[:batch]
    return q, k, v, kp, vp, kg, vg, p_slot, p_len, g_slot, g_write


@pytest.mark.parametrize("case", sorted(CASES))
def test_rotary_and_store_is_bit_identical_to_the_reference(case):
    spec, dtype = CASES[case]
    tables = _tables(spec, dtype)
    q, k, v, _, _, kg, vg, _, p_len, g_slot, g_write = _inputs(spec, dtype)
    pos = p_len + g_write
    kg2, vg2 = kg.clone(), vg.clone()
    want_q = K.rotary_and_store_reference(q.clone(), k, v, kg, vg, pos, g_slot, g_write, spec, tables)
    got_q = K.rotary_and_store_triton(q.clone(), k, v, kg2, vg2, pos, g_slot, g_write, spec, tables)
    if dtype == torch.float32:  # the kernel may fuse multiply-adds
        torch.testing.assert_close(got_q, want_q, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(kg2, kg, rtol=1e-6, atol=1e-6)
    elif DEVICE == "cpu":  # Triton's interpreter truncates float32 -> bf16 where the GPU rounds to nearest
        torch.testing.assert_close(got_q, want_q, rtol=2 ** -7, atol=2 ** -7)
        torch.testing.assert_close(kg2, kg, rtol=2 ** -7, atol=2 ** -7)
    else:
        assert torch.equal(got_q, want_q)
        assert torch.equal(kg2, kg)
    assert torch.equal(vg2, vg)


@pytest.mark.parametrize("shared_prefix", [0, 3], ids=["per-row", "shared-prefix"])
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_decode_attention_matches_the_reference(case, window, shared_prefix):
    _check_decode_attention(case, window, shared_prefix=shared_prefix)


def _check_decode_attention(case: str, window: int, **options) -> None:
    """The Triton decode attention (with ``options``) against the torch reference on one case."""
    spec, dtype = CASES[case]
    tables = _tables(spec, dtype)
    q, _, _, kp, vp, kg, vg, p_slot, p_len, g_slot, g_write = _inputs(spec, dtype)
    g_len = g_write + 1
    want = K.decode_attention_reference(q, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, spec, tables, window)
    got = K.decode_attention_triton(q, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, spec, tables, window,
                                    **options)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("split", [1, 4, 16])
@pytest.mark.parametrize("shared_prefix", [0, 3], ids=["per-row", "shared-prefix"])
@pytest.mark.parametrize("window", [0, 20])
@pytest.mark.parametrize("case", ["gptj-like", "bloom-alibi", "gqa-group-3-fp32"])
def test_decode_attention_split_over_keys_matches_the_reference(case, window, shared_prefix, split):
    """Each row's keys cut into parts (more programs at small batches), merged by a second kernel."""
    _check_decode_attention(case, window, shared_prefix=shared_prefix, split=split, block_n=16)


@pytest.mark.parametrize("shared_prefix", [0, 3], ids=["per-row", "shared-prefix"])
@pytest.mark.parametrize("case", ["gptj-like", "llama-gqa", "odd-head-dim-fp32"])
def test_decode_attention_gives_every_row_the_same_bits_in_any_launch_order(case, shared_prefix):
    """Programs start longest row first (an order computed per step); each row's result must not depend on it,
    so a sample's tokens do not depend on the lengths of the rows beside it (batch-invariant runs)."""
    spec, dtype = CASES[case]
    tables = _tables(spec, dtype)
    q, _, _, kp, vp, kg, vg, p_slot, p_len, g_slot, g_write = _inputs(spec, dtype)
    g_len = g_write + 1
    outputs = []
    for order in ([0, 1, 2, 3, 4], [4, 2, 0, 3, 1], None):
        row_order = None if order is None else torch.tensor(order, dtype=torch.int32, device=DEVICE)
        outputs.append(K.decode_attention_triton(q, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, spec, tables,
                                                 shared_prefix=shared_prefix, row_order=row_order))
    assert torch.equal(outputs[0], outputs[1]) and torch.equal(outputs[0], outputs[2])


@pytest.mark.parametrize("block", [1, 4])
@pytest.mark.parametrize("shared_prefix", [0, 3], ids=["per-row", "shared-prefix"])
@pytest.mark.parametrize("window", [0, 20])
@pytest.mark.parametrize("case", ["gptj-like", "bloom-alibi", "gqa-group-3-fp32", "gemma-softcap-gqa"])
def test_decode_attention_balanced_over_long_rows_matches_the_reference(case, window, shared_prefix, block):
    """Rows longer than the batch's mean read in several parts (kernels.balanced_work), the rest in one; the
    parts merged by the balanced combine kernel, with the prompt's state where the prompt is shared."""
    spec, dtype = CASES[case]
    _, _, _, _, _, _, _, _, p_len, _, g_write = _inputs(spec, dtype)
    order = K.longest_rows_first(p_len, g_write + 1, bool(shared_prefix))
    work = K.balanced_work(p_len, g_write + 1, bool(shared_prefix), order, block, spread=1)
    assert int(work.parts.max()) > 1  # some row is cut
    _check_decode_attention(case, window, shared_prefix=shared_prefix, work=work, block_n=16)


@pytest.mark.parametrize("shared_prefix", [0, 3], ids=["per-row", "shared-prefix"])
@pytest.mark.parametrize("case", ["gptj-like", "odd-head-dim-fp32"])
def test_decode_attention_follows_any_work_list(case, shared_prefix):
    """A hand-made list: every row in 3 parts (some empty: a row of 1 key), programs in a shuffled row order,
    with unused entries between (-1) and at the end."""
    spec, dtype = CASES[case]
    i32 = dict(dtype=torch.int32, device=DEVICE)
    rows_in_order = [3, 0, 4, 1, 2]
    row, part, first = [], [], [0] * 5
    for r in rows_in_order:
        if r == 4:
            row.append(-1)
            part.append(0)
        first[r] = len(row)
        row += [r] * 3
        part += [0, 1, 2]
    row += [-1, -1]
    part += [0, 0]
    work = K.AttentionWork(row=torch.tensor(row, **i32), part=torch.tensor(part, **i32),
                           parts=torch.full((5,), 3, **i32), first=torch.tensor(first, **i32),
                           merged=torch.tensor([2, -1, 0, 4, 3, 1], **i32))
    _check_decode_attention(case, 0, shared_prefix=shared_prefix, work=work, block_n=16)

