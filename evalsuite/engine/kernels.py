"""The two per-layer operations the engine adds on top of the model's own modules, each in two versions.

``rotary_and_store``: rotate the new token's query and key (GPT-J's interleaved partial rotary, Llama's
rotate-half rotary, or none for ALiBi models) and write its key and value into the sample's cache slot.
``decode_attention``: one query token per row against two cache segments: the prompt's keys and values,
stored once and shared by all samples of that prompt, then the row's own generated ones.

The torch versions are the reference (and what CPU runs); the Triton versions are what CUDA runs, one
launch each instead of ~20 small kernels (rotary) and a read of only the valid cache entries instead of
the whole slot (attention). Rounding follows transformers' eager code where it is cheap to do so (bf16
products in the rotary; BLOOM's bf16 ALiBi bias and scores), so greedy tokens match as often as possible.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

try:  # Triton ships with CUDA builds of torch; CPU-only installs run the torch reference.
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - depends on the install
    triton = None
    tl = None

ROTARY_NONE, ROTARY_INTERLEAVED, ROTARY_HALF = 0, 1, 2


@dataclass(frozen=True)
class AttentionSpec:
    """What a family's attention needs beyond q, k, v: head layout, scale, position scheme, rounding."""

    num_heads: int
    num_kv_heads: int
    head_dim: int
    scale: float
    rotary_style: int = ROTARY_NONE
    rotary_dim: int = 0
    alibi: bool = False
    round_scores: bool = False  # BLOOM: scores are produced by a bf16 baddbmm, so they are rounded
    softcap: float = 0.0  # Gemma 2: scores = softcap * tanh(scores / softcap) before the mask

    @property
    def group(self) -> int:
        return self.num_heads // self.num_kv_heads


@dataclass
class PositionTables:
    """Per-position rotary factors already expanded to one value per rotated dim ([max_pos, rotary_dim],
    model dtype, exactly the values transformers multiplies with), and ALiBi slopes ([heads], float32)."""

    cos: torch.Tensor | None = None
    sin: torch.Tensor | None = None
    alibi_slopes: torch.Tensor | None = None


def triton_usable(device: torch.device) -> bool:
    if triton is None or os.environ.get("EVALSUITE_ENGINE_KERNELS", "auto") == "torch":
        return False
    return device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"


# ----------------------------------------------------------------------------------------------- torch
def _rotate(x: torch.Tensor, style: int) -> torch.Tensor:
    if style == ROTARY_INTERLEAVED:  # transformers' rotate_every_two
        return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
    half = x.shape[-1] // 2  # rotate_half
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotary_reference(x: torch.Tensor, pos: torch.Tensor, spec: AttentionSpec, tables: PositionTables) -> torch.Tensor:
    """x: [B, H, D]; the same operations, in the same dtype and order, as transformers' eager code."""
    if spec.rotary_style == ROTARY_NONE:
        return x
    cos = tables.cos[pos.long()].unsqueeze(1)  # [B, 1, rot]
    sin = tables.sin[pos.long()].unsqueeze(1)
    rot = spec.rotary_dim
    x_rot = x[..., :rot]
    out = (x_rot * cos) + (_rotate(x_rot, spec.rotary_style) * sin)
    if rot == x.shape[-1]:
        return out
    return torch.cat([out, x[..., rot:]], dim=-1)


def rotary_and_store_reference(q, k, v, cache_k, cache_v, pos, g_slot, g_write, spec, tables):
    """q: [B, Hq, D], k and v: [B, Hkv, D]; cache_k/v: [slots, Hkv, cap, D]. Returns the rotated q."""
    q = rotary_reference(q, pos, spec, tables)
    k = rotary_reference(k, pos, spec, tables)
    slot, write = g_slot.long(), g_write.long()
    cache_k[slot, :, write] = k.to(cache_k.dtype)
    cache_v[slot, :, write] = v.to(cache_v.dtype)
    return q


def decode_attention_reference(q, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, spec, tables,
                               window: int = 0) -> torch.Tensor:
    """q: [B, Hq, D]; prompt cache kp/vp: [P, Hkv, Pcap, D]; generation cache kg/vg: [S, Hkv, Gcap, D].
    Row b attends to kp[p_slot[b], :, :p_len[b]] followed by kg[g_slot[b], :, :g_len[b]]; with a sliding
    ``window``, only to the keys less than ``window`` positions behind its own (transformers' rule)."""
    pcap, gcap = kp.shape[2], kg.shape[2]
    keys = torch.cat([kp[p_slot.long()], kg[g_slot.long()]], dim=2).float()
    values = torch.cat([vp[p_slot.long()], vg[g_slot.long()]], dim=2).float()
    if spec.group > 1:
        keys = keys.repeat_interleave(spec.group, dim=1)
        values = values.repeat_interleave(spec.group, dim=1)
    scores = torch.einsum("bhd,bhld->bhl", q.float(), keys) * spec.scale
    if spec.softcap:
        scores = torch.tanh(scores / spec.softcap) * spec.softcap
    j = torch.arange(pcap + gcap, device=q.device)
    in_prompt = j[None, :] < p_len.long()[:, None]
    in_gen = (j[None, :] >= pcap) & ((j[None, :] - pcap) < g_len.long()[:, None])
    key_pos = torch.where(j[None, :] < pcap, j[None, :], p_len.long()[:, None] + j[None, :] - pcap)
    visible = in_prompt | in_gen
    if window:
        query_pos = (p_len.long() + g_len.long() - 1)[:, None]
        visible = visible & (key_pos > query_pos - window)
    if spec.alibi:
        bias = tables.alibi_slopes[None, :, None] * key_pos[:, None, :].float()
        if spec.round_scores:
            bias = bias.to(q.dtype).float()
        scores = scores + bias
    if spec.round_scores:
        scores = scores.to(q.dtype).float()
    scores = scores.masked_fill(~visible[:, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bhl,bhld->bhd", probs, values).to(q.dtype)


# ---------------------------------------------------------------------------------------------- triton
if triton is not None:

    @triton.jit
    def _round(x, RDT: tl.constexpr):
        """float32 -> nearest RDT value (ties to even), kept in float32. Written with integer ops for bf16
        because the compiler may drop a float32 -> bf16 -> float32 cast pair, and with it the rounding."""
        if RDT == tl.bfloat16:
            bits = x.to(tl.uint32, bitcast=True)
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            return bits.to(tl.float32, bitcast=True)
        else:
            return x.to(RDT).to(tl.uint16, bitcast=True).to(RDT, bitcast=True).to(tl.float32)

    @triton.jit
    def _rotate_row(x_ptr, offs, d_mask, cos, sin, sign, partner, in_rot,
                    ROTATE: tl.constexpr, ROUND: tl.constexpr, RDT: tl.constexpr):
        x = tl.load(x_ptr + offs, mask=d_mask, other=0.0).to(tl.float32)
        if ROTATE:
            xp = tl.load(x_ptr + partner, mask=d_mask, other=0.0).to(tl.float32)
            a = x * cos
            b = (sign * xp) * sin
            if ROUND:  # transformers rounds each product to the model dtype, then the sum
                a = _round(a, RDT)
                b = _round(b, RDT)
            x = tl.where(in_rot, a + b, x)
        return x

    @triton.jit
    def _rotary_store_kernel(Q, K, V, KG, VG, COS, SIN, POS, G_SLOT, G_WRITE,
                             sq_b, sq_h, sk_b, sk_h, sv_b, sv_h, sg_s, sg_h, sg_l, s_cos,
                             HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr,
                             ROT: tl.constexpr, STYLE: tl.constexpr, ROUND: tl.constexpr, RDT: tl.constexpr):
        b = tl.program_id(0)
        h = tl.program_id(1)
        offs = tl.arange(0, D_PAD)
        d_mask = offs < D
        in_rot = offs < ROT
        if STYLE == 1:  # interleaved pairs (2i, 2i+1): rotated[2i] = -x[2i+1], rotated[2i+1] = x[2i]
            partner = offs ^ 1
            sign = tl.where((offs % 2) == 0, -1.0, 1.0)
        else:  # halves: rotated[i] = -x[i + rot/2] for i < rot/2, x[i - rot/2] after
            half = ROT // 2
            partner = tl.where(offs < half, offs + half, offs - half)
            sign = tl.where(offs < half, -1.0, 1.0)
        partner = tl.where(in_rot, partner, offs)
        cos = tl.zeros([D_PAD], dtype=tl.float32)
        sin = tl.zeros([D_PAD], dtype=tl.float32)
        if ROT > 0:
            pos = tl.load(POS + b).to(tl.int64)
            cos = tl.load(COS + pos * s_cos + offs, mask=in_rot, other=1.0).to(tl.float32)
            sin = tl.load(SIN + pos * s_cos + offs, mask=in_rot, other=0.0).to(tl.float32)
        if h < HQ:
            q_ptr = Q + b.to(tl.int64) * sq_b + h * sq_h
            q = _rotate_row(q_ptr, offs, d_mask, cos, sin, sign, partner, in_rot, ROT > 0, ROUND, RDT)
            tl.store(q_ptr + offs, q.to(Q.dtype.element_ty), mask=d_mask)
        if h < HKV:
            slot = tl.load(G_SLOT + b).to(tl.int64)
            write = tl.load(G_WRITE + b).to(tl.int64)
            dst = slot * sg_s + h * sg_h + write * sg_l + offs
            k = _rotate_row(K + b.to(tl.int64) * sk_b + h * sk_h, offs, d_mask, cos, sin, sign, partner, in_rot,
                            ROT > 0, ROUND, RDT)
            tl.store(KG + dst, k.to(KG.dtype.element_ty), mask=d_mask)
            v = tl.load(V + b.to(tl.int64) * sv_b + h * sv_h + offs, mask=d_mask, other=0.0)
            tl.store(VG + dst, v.to(VG.dtype.element_ty), mask=d_mask)

    @triton.jit
    def _attend_segment(q, k_base, v_base, length, pos0, stride_l, slope, m_i, l_i, acc, scale, offs_d, d_mask,
                        BLOCK_N: tl.constexpr, ALIBI: tl.constexpr, ROUND: tl.constexpr, RDT: tl.constexpr):
        for start in range(0, length, BLOCK_N):
            offs_n = start + tl.arange(0, BLOCK_N)
            n_mask = offs_n < length
            kv_off = offs_n[:, None].to(tl.int64) * stride_l + offs_d[None, :]
            mask2 = n_mask[:, None] & d_mask[None, :]
            k = tl.load(k_base + kv_off, mask=mask2, other=0.0).to(tl.float32)
            s = tl.sum(k * q[None, :], axis=1) * scale
            if ALIBI:
                bias = slope * (pos0 + offs_n).to(tl.float32)
                if ROUND:
                    bias = _round(bias, RDT)
                s = s + bias
            if ROUND:
                s = _round(s, RDT)
            s = tl.where(n_mask, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=0))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new)
            v = tl.load(v_base + kv_off, mask=mask2, other=0.0).to(tl.float32)
            acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
            l_i = l_i * alpha + tl.sum(p, axis=0)
            m_i = m_new
        return m_i, l_i, acc

    @triton.jit
    def _decode_attention_kernel(Q, O, KP, VP, KG, VG, P_SLOT, P_LEN, G_SLOT, G_LEN, SLOPES,
                                 sq_b, sq_h, so_b, so_h, sp_s, sp_h, sp_l, sg_s, sg_h, sg_l, scale,
                                 GROUP: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr, BLOCK_N: tl.constexpr,
                                 ALIBI: tl.constexpr, ROUND: tl.constexpr, RDT: tl.constexpr):
        b = tl.program_id(0)
        h = tl.program_id(1)
        kvh = h // GROUP
        offs_d = tl.arange(0, D_PAD)
        d_mask = offs_d < D
        q = tl.load(Q + b.to(tl.int64) * sq_b + h * sq_h + offs_d, mask=d_mask, other=0.0).to(tl.float32)
        slope = 0.0
        if ALIBI:
            slope = tl.load(SLOPES + h)
        p_slot = tl.load(P_SLOT + b).to(tl.int64)
        p_len = tl.load(P_LEN + b)
        g_slot = tl.load(G_SLOT + b).to(tl.int64)
        g_len = tl.load(G_LEN + b)
        m_i = tl.max(tl.full([BLOCK_N], -1.0e30, tl.float32), axis=0)
        l_i = tl.sum(tl.zeros([BLOCK_N], tl.float32), axis=0)
        acc = tl.zeros([D_PAD], tl.float32)
        m_i, l_i, acc = _attend_segment(q, KP + p_slot * sp_s + kvh * sp_h, VP + p_slot * sp_s + kvh * sp_h,
                                        p_len, 0, sp_l, slope, m_i, l_i, acc, scale, offs_d, d_mask,
                                        BLOCK_N, ALIBI, ROUND, RDT)
        m_i, l_i, acc = _attend_segment(q, KG + g_slot * sg_s + kvh * sg_h, VG + g_slot * sg_s + kvh * sg_h,
                                        g_len, p_len, sg_l, slope, m_i, l_i, acc, scale, offs_d, d_mask,
                                        BLOCK_N, ALIBI, ROUND, RDT)
        out = acc / l_i
        tl.store(O + b.to(tl.int64) * so_b + h * so_h + offs_d, out.to(O.dtype.element_ty), mask=d_mask)


def _tl_dtype(dtype: torch.dtype):
    return {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}[dtype]


def rotary_and_store_triton(q, k, v, cache_k, cache_v, pos, g_slot, g_write, spec, tables):
    """Same contract as :func:`rotary_and_store_reference`; rotates q in place (q must be writable)."""
    batch = q.shape[0]
    d_pad = triton.next_power_of_2(spec.head_dim)
    rot = spec.rotary_dim if spec.rotary_style != ROTARY_NONE else 0
    cos = tables.cos if rot else q
    sin = tables.sin if rot else q
    grid = (batch, max(spec.num_heads, spec.num_kv_heads))
    _rotary_store_kernel[grid](
        q, k, v, cache_k, cache_v, cos, sin, pos, g_slot, g_write,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        cache_k.stride(0), cache_k.stride(1), cache_k.stride(2), cos.stride(0) if rot else 0,
        HQ=spec.num_heads, HKV=spec.num_kv_heads, D=spec.head_dim, D_PAD=d_pad, ROT=rot,
        STYLE=spec.rotary_style, ROUND=q.dtype != torch.float32, RDT=_tl_dtype(q.dtype),
        num_warps=1 if d_pad <= 128 else 2)
    return q


def decode_attention_triton(q, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, spec, tables) -> torch.Tensor:
    batch = q.shape[0]
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    d_pad = triton.next_power_of_2(spec.head_dim)
    block_n = max(16, min(64, 8192 // d_pad))
    slopes = tables.alibi_slopes if spec.alibi else p_len
    _decode_attention_kernel[(batch, spec.num_heads)](
        q, out, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, slopes,
        q.stride(0), q.stride(1), out.stride(0), out.stride(1),
        kp.stride(0), kp.stride(1), kp.stride(2), kg.stride(0), kg.stride(1), kg.stride(2), spec.scale,
        GROUP=spec.group, D=spec.head_dim, D_PAD=d_pad, BLOCK_N=block_n, ALIBI=spec.alibi,
        ROUND=spec.round_scores and q.dtype != torch.float32, RDT=_tl_dtype(q.dtype),
        num_warps=4, num_stages=2)
    return out
