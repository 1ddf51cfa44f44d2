"""The two per-layer operations the engine adds on top of the model's own modules, each in two versions.

``rotary_and_store``: rotate the new token's query and key (GPT-J's interleaved partial rotary, Llama's
rotate-half rotary, or none for ALiBi models) and write its key and value into the sample's cache slot.
``decode_attention``: one query token per row against two cache segments: the prompt's keys and values,
stored once and shared by all samples of that prompt, then the row's own generated ones.

The torch versions are the reference (and what CPU runs); the Triton versions are what CUDA runs, one
launch each instead of ~20 small kernels (rotary) and a read of only the valid cache entries instead of
the whole slot (attention). Rounding follows transformers' eager code where it is cheap to do so (bf16
products in the rotary; BLOOM's bf16 ALiBi bias and scores), so greedy tokens match as often as possible.

Attention on CUDA is memory-bound: each row reads its keys and values once. At large batches one program
per (row, head) fills the GPU, started longest row first (``longest_rows_first``); at small ones (batch 1:
16 programs for GPT-J) each row's keys are cut into 8 parts read in parallel and merged after
(``attention_split``). Over a prompt with many samples in the batch, its keys and values are read once per
block of rows (``_prefix_attention_kernel``), and at large batches the rows' own keys, long-tailed, are read in
parts where a row holds more than four times the mean (``balanced_work``), so the kernel does not end on them.
"""

from __future__ import annotations

import os
import threading
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


def hash_triton_in_background() -> threading.Thread | None:
    """Start, on a thread, the hash of Triton's own 400 MB library that it takes once per process before its
    first kernel (compiled or found in its disk cache): 0.4 s of every run's first decode step on the
    reference machine (issue 31), done while the model loads instead. The hash is cached per process
    (``triton_key``, a private Triton function): where it is missing or fails, the first kernel pays as before."""
    try:
        from triton.runtime.cache import triton_key
    except ImportError:  # no Triton, or another version's layout
        return None

    def hash_quietly() -> None:
        try:
            triton_key()
        except Exception:  # noqa: BLE001 - a head start only; the first kernel hashes (and reports) itself
            pass

    thread = threading.Thread(target=hash_quietly, name="evalsuite-triton-hash", daemon=True)
    thread.start()
    return thread


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
    assert tables.cos is not None and tables.sin is not None  # every rotary style builds both tables
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
    def _softcap(s, softcap):
        """softcap * tanh(s / softcap), with tanh written as 1 - 2 / (exp(2x) + 1)."""
        return softcap * (1.0 - 2.0 / (tl.exp(2.0 * s / softcap) + 1.0))

    @triton.jit
    def _attend_segment(q, k_base, v_base, lo, length, pos0, stride_l, slope, m_i, l_i, acc, scale, softcap,
                        offs_d, d_mask, BLOCK_N: tl.constexpr, ALIBI: tl.constexpr, SOFTCAP: tl.constexpr,
                        ROUND: tl.constexpr, RDT: tl.constexpr):
        """Online softmax over keys [lo, length) of one cache segment whose key j sits at position pos0 + j."""
        for start in range(lo, length, BLOCK_N):
            offs_n = start + tl.arange(0, BLOCK_N)
            n_mask = offs_n < length
            kv_off = offs_n[:, None].to(tl.int64) * stride_l + offs_d[None, :]
            mask2 = n_mask[:, None] & d_mask[None, :]
            k = tl.load(k_base + kv_off, mask=mask2, other=0.0).to(tl.float32)
            s = tl.sum(k * q[None, :], axis=1) * scale
            if SOFTCAP:
                s = _softcap(s, softcap)
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

    # ``split`` is a run-time argument (not specialized): one compiled kernel serves every batch bucket,
    # where a constexpr cost a compilation per value during CUDA-graph capture (~1 s each)
    @triton.jit(do_not_specialize=["split"])
    def _decode_attention_kernel(Q, OUT, KP, VP, KG, VG, P_SLOT, P_LEN, G_SLOT, G_LEN, ORDER, SLOPES,
                                 M_IN, L_IN, ACC_IN, M_PART, L_PART, ACC_PART, WORK_ROW, WORK_PART, ROW_PARTS,
                                 ROW_FIRST,
                                 sq_b, sq_h, so_b, so_h, sp_s, sp_h, sp_l, sg_s, sg_h, sg_l, scale, softcap, window,
                                 split, HQ: tl.constexpr, GROUP: tl.constexpr, D: tl.constexpr,
                                 D_PAD: tl.constexpr, BLOCK_N: tl.constexpr, ALIBI: tl.constexpr,
                                 SOFTCAP: tl.constexpr, WINDOW: tl.constexpr, PREFIX_DONE: tl.constexpr,
                                 ROUND: tl.constexpr, RDT: tl.constexpr, BALANCED: tl.constexpr):
        """One (row, query head, part): the row's visible keys, the prompt segment (unless PREFIX_DONE: then
        its softmax state comes from :func:`_prefix_attention_kernel` in M_IN, L_IN, ACC_IN) followed by its
        own generated segment, cut into parts of whole key blocks. A row in one part writes the output; in more,
        each part writes its unnormalized state (max, sum, weighted values) for :func:`_combine_kernel`.
        Without BALANCED every row has ``split`` parts, programs start in ORDER's row order (longest first), a
        row's heads together. With BALANCED program j reads part WORK_PART[j] of row WORK_ROW[j] (-1: none), of
        ROW_PARTS[row] parts whose states sit from ROW_FIRST[row] on (:func:`balanced_work`)."""
        h = tl.program_id(0)
        if BALANCED:
            j = tl.program_id(1)
            b_work = tl.load(WORK_ROW + j)
            live = b_work >= 0
            b = tl.maximum(b_work, 0)
            part = tl.load(WORK_PART + j)
            parts = tl.load(ROW_PARTS + b)
            at = (tl.load(ROW_FIRST + b) + part).to(tl.int64) * HQ + h
        else:
            b = tl.load(ORDER + tl.program_id(1))
            live = b >= 0
            part = tl.program_id(2)
            parts = split
            at = (b.to(tl.int64) * HQ + h) * split + part
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
        lo_p = 0  # first visible key of each segment: keys behind the sliding window are skipped
        lo_g = 0
        if WINDOW:
            first = tl.maximum(p_len + g_len - window, 0)
            lo_p = tl.minimum(first, p_len)
            lo_g = tl.maximum(first - p_len, 0)
        if PREFIX_DONE:
            lo_p = p_len
        n_p = p_len - lo_p
        total = tl.where(live, n_p + g_len - lo_g, 0)
        chunk = tl.cdiv(tl.cdiv(total, parts), BLOCK_N) * BLOCK_N
        start = tl.minimum(part * chunk, total)
        end = tl.minimum(start + chunk, total)
        m_i = tl.max(tl.full([BLOCK_N], -1.0e30, tl.float32), axis=0)
        l_i = tl.sum(tl.zeros([BLOCK_N], tl.float32), axis=0)
        acc = tl.zeros([D_PAD], tl.float32)
        state = b.to(tl.int64) * HQ + h
        if PREFIX_DONE and parts == 1:
            if p_len > 0:
                m_i = tl.load(M_IN + state)
                l_i = tl.load(L_IN + state)
                acc = tl.load(ACC_IN + state * D_PAD + offs_d)
        m_i, l_i, acc = _attend_segment(q, KP + p_slot * sp_s + kvh * sp_h, VP + p_slot * sp_s + kvh * sp_h,
                                        lo_p + tl.minimum(start, n_p), lo_p + tl.minimum(end, n_p), 0, sp_l,
                                        slope, m_i, l_i, acc, scale, softcap, offs_d, d_mask, BLOCK_N, ALIBI,
                                        SOFTCAP, ROUND, RDT)
        m_i, l_i, acc = _attend_segment(q, KG + g_slot * sg_s + kvh * sg_h, VG + g_slot * sg_s + kvh * sg_h,
                                        lo_g + tl.maximum(start - n_p, 0), lo_g + tl.maximum(end - n_p, 0),
                                        p_len, sg_l, slope, m_i, l_i, acc, scale, softcap, offs_d, d_mask, BLOCK_N,
                                        ALIBI, SOFTCAP, ROUND, RDT)
        if parts == 1:
            out = acc / l_i
            tl.store(OUT + b.to(tl.int64) * so_b + h * so_h + offs_d, out.to(OUT.dtype.element_ty),
                     mask=d_mask & live)
        else:
            tl.store(M_PART + at, m_i, mask=live)
            tl.store(L_PART + at, l_i, mask=live)
            tl.store(ACC_PART + at * D_PAD + offs_d, acc, mask=(offs_d < D_PAD) & live)

    @triton.jit(do_not_specialize=["split"])
    def _combine_kernel(OUT, P_LEN, M_IN, L_IN, ACC_IN, M_PART, L_PART, ACC_PART, so_b, so_h, split,
                        HQ: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr, MAX_SPLIT: tl.constexpr,
                        PREFIX_DONE: tl.constexpr):
        """Merge the ``split`` (<= MAX_SPLIT) parts of one (row, query head), and the prompt's state when
        PREFIX_DONE."""
        b = tl.program_id(0)
        h = tl.program_id(1)
        offs_d = tl.arange(0, D_PAD)
        state = b.to(tl.int64) * HQ + h
        parts = tl.arange(0, MAX_SPLIT)
        valid = parts < split
        m_p = tl.load(M_PART + state * split + parts, mask=valid, other=-1.0e30)
        l_p = tl.load(L_PART + state * split + parts, mask=valid, other=0.0)
        acc_p = tl.load(ACC_PART + (state * split + parts)[:, None] * D_PAD + offs_d[None, :],
                        mask=valid[:, None], other=0.0)
        m_i = tl.max(m_p, axis=0)
        if PREFIX_DONE:
            if tl.load(P_LEN + b) > 0:
                m_i = tl.maximum(m_i, tl.load(M_IN + state))
        w = tl.exp(m_p - m_i)
        l_i = tl.sum(l_p * w, axis=0)
        acc = tl.sum(acc_p * w[:, None], axis=0)
        if PREFIX_DONE:
            if tl.load(P_LEN + b) > 0:
                w_in = tl.exp(tl.load(M_IN + state) - m_i)
                l_i += tl.load(L_IN + state) * w_in
                acc += tl.load(ACC_IN + state * D_PAD + offs_d) * w_in
        out = acc / l_i
        tl.store(OUT + b.to(tl.int64) * so_b + h * so_h + offs_d, out.to(OUT.dtype.element_ty), mask=offs_d < D)

    @triton.jit
    def _merge_state(m_i, l_i, acc, m_p, l_p, acc_p):
        """Two unnormalized softmax states (max, sum, weighted values) as one."""
        m_new = tl.maximum(m_i, m_p)
        alpha = tl.exp(m_i - m_new)
        w = tl.exp(m_p - m_new)
        return m_new, l_i * alpha + l_p * w, acc * alpha + acc_p * w

    @triton.jit
    def _combine_balanced_kernel(OUT, P_LEN, M_IN, L_IN, ACC_IN, M_PART, L_PART, ACC_PART, ROW_PARTS, ROW_FIRST,
                                 MERGED, so_b, so_h, HQ: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr,
                                 PREFIX_DONE: tl.constexpr):
        """Merge the parts of one (row MERGED[i], query head) of a BALANCED attention, and the prompt's state when
        PREFIX_DONE; a row in one part was written by the attention kernel itself."""
        b = tl.maximum(tl.load(MERGED + tl.program_id(0)), 0)
        h = tl.program_id(1)
        parts = tl.where(tl.load(MERGED + tl.program_id(0)) >= 0, tl.load(ROW_PARTS + b), 1)
        if parts > 1:
            first = tl.load(ROW_FIRST + b)
            offs_d = tl.arange(0, D_PAD)
            m_i = tl.max(tl.full([2], -1.0e30, tl.float32), axis=0)
            l_i = tl.sum(tl.zeros([2], tl.float32), axis=0)
            acc = tl.zeros([D_PAD], tl.float32)
            for p in range(0, parts):
                at = (first + p).to(tl.int64) * HQ + h
                m_i, l_i, acc = _merge_state(m_i, l_i, acc, tl.load(M_PART + at), tl.load(L_PART + at),
                                             tl.load(ACC_PART + at * D_PAD + offs_d))
            if PREFIX_DONE:
                if tl.load(P_LEN + b) > 0:
                    state = b.to(tl.int64) * HQ + h
                    m_i, l_i, acc = _merge_state(m_i, l_i, acc, tl.load(M_IN + state), tl.load(L_IN + state),
                                                 tl.load(ACC_IN + state * D_PAD + offs_d))
            out = acc / l_i
            tl.store(OUT + b.to(tl.int64) * so_b + h * so_h + offs_d, out.to(OUT.dtype.element_ty),
                     mask=offs_d < D)

    @triton.jit
    def _prefix_attention_kernel(Q, KP, VP, ORDER, STARTS, COUNTS, P_LEN, G_LEN, SLOPES, M_OUT, L_OUT, ACC_OUT,
                                 sq_b, sq_h, sp_s, sp_h, sp_l, scale, softcap, window,
                                 HQ: tl.constexpr, GROUP: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr,
                                 ROWS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                 ALIBI: tl.constexpr, SOFTCAP: tl.constexpr, WINDOW: tl.constexpr,
                                 ROUND: tl.constexpr, RDT: tl.constexpr, IEEE: tl.constexpr):
        # IEEE: float32 products (float32 models, and Triton's interpreter); else tensor-core bf16/fp16 products
        """Attention of every row of one prompt slot over that prompt's keys, for one kv head: the prompt's
        keys and values are read once per ROWS rows (one matrix product per key block) instead of once per
        row. Writes the unnormalized softmax state (max, sum, weighted values) per (row, query head)."""
        slot = tl.program_id(0)
        kvh = tl.program_id(1)
        block = tl.program_id(2)
        count = tl.load(COUNTS + slot)
        first_row = block * ROWS
        if first_row < count:
            i = tl.arange(0, BLOCK_M)  # flattened (row in block, query head in group)
            r = i // GROUP
            h = kvh * GROUP + i % GROUP
            valid = (r < ROWS) & (first_row + r < count)
            row = tl.load(ORDER + tl.load(STARTS + slot) + first_row + r, mask=valid, other=0).to(tl.int64)
            p_len_row = tl.load(P_LEN + row, mask=valid, other=0)
            length = tl.max(p_len_row, axis=0)  # the same for every row of the slot
            q_pos = p_len_row + tl.load(G_LEN + row, mask=valid, other=1) - 1
            offs_d = tl.arange(0, D_PAD)
            d_mask = offs_d < D
            q = tl.load(Q + row[:, None] * sq_b + h[:, None] * sq_h + offs_d[None, :],
                        mask=valid[:, None] & d_mask[None, :], other=0.0)
            slope = tl.zeros([BLOCK_M], tl.float32)
            if ALIBI:
                slope = tl.load(SLOPES + h, mask=valid, other=0.0)
            m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)
            l_i = tl.zeros([BLOCK_M], tl.float32)
            acc = tl.zeros([BLOCK_M, D_PAD], tl.float32)
            lo = 0
            if WINDOW:  # keys behind every row's window are skipped
                lo = tl.maximum(tl.min(tl.where(valid, q_pos, 1 << 30), axis=0) - window + 1, 0)
                lo = (lo // BLOCK_N) * BLOCK_N
            base = KP + slot.to(tl.int64) * sp_s + kvh * sp_h
            vbase = VP + slot.to(tl.int64) * sp_s + kvh * sp_h
            for start in range(lo, length, BLOCK_N):
                offs_n = start + tl.arange(0, BLOCK_N)
                n_mask = offs_n < length
                kv_off = offs_n[None, :].to(tl.int64) * sp_l + offs_d[:, None]
                k_t = tl.load(base + kv_off, mask=n_mask[None, :] & d_mask[:, None], other=0.0)  # [D, N]
                if IEEE:
                    s = tl.dot(q.to(tl.float32), k_t.to(tl.float32), input_precision="ieee") * scale
                else:
                    s = tl.dot(q, k_t) * scale
                if SOFTCAP:
                    s = _softcap(s, softcap)
                if ALIBI:
                    bias = slope[:, None] * offs_n[None, :].to(tl.float32)
                    if ROUND:
                        bias = _round(bias, RDT)
                    s = s + bias
                if ROUND:
                    s = _round(s, RDT)
                visible = n_mask[None, :] & (offs_n[None, :] < p_len_row[:, None])
                if WINDOW:
                    visible = visible & (offs_n[None, :] > q_pos[:, None] - window)
                s = tl.where(visible, s, float("-inf"))
                m_new = tl.maximum(m_i, tl.max(s, axis=1))
                alpha = tl.exp(m_i - m_new)
                p = tl.exp(s - m_new[:, None])
                v = tl.load(vbase + tl.trans(kv_off), mask=n_mask[:, None] & d_mask[None, :], other=0.0)  # [N, D]
                if IEEE:
                    pv = tl.dot(p, v.to(tl.float32), input_precision="ieee")
                else:
                    pv = tl.dot(p.to(v.dtype), v)
                acc = acc * alpha[:, None] + pv
                l_i = l_i * alpha + tl.sum(p, axis=1)
                m_i = m_new
            state = row * HQ + h
            tl.store(M_OUT + state, m_i, mask=valid)
            tl.store(L_OUT + state, l_i, mask=valid)
            tl.store(ACC_OUT + state[:, None] * D_PAD + offs_d[None, :], acc, mask=valid[:, None])


_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"  # its bf16 matrix products are wrong: use float32


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


def prefix_groups(p_slot: torch.Tensor, p_len: torch.Tensor, slots: int):
    """Rows grouped by prompt slot for :func:`_prefix_attention_kernel`: (order, starts, counts), int32.
    Rows with an empty prompt (idle ones) go to an extra group. The same for every layer of a step, so the
    runner computes it once per step (a sort and a scan are ~30 us; per layer they were ~1 ms of a step)."""
    key = torch.where(p_len > 0, p_slot.long(), slots)
    order = torch.argsort(key, stable=True).to(torch.int32)
    counts = torch.zeros(slots + 1, dtype=torch.int32, device=p_slot.device).scatter_add_(
        0, key, torch.ones_like(key, dtype=torch.int32))
    starts = (torch.cumsum(counts, 0) - counts).to(torch.int32)
    return order, starts, counts


def longest_rows_first(p_len: torch.Tensor, g_len: torch.Tensor, shared_prefix: bool) -> torch.Tensor:
    """Rows by the keys their attention program reads, most first (int32): the order programs start in.
    Rows' lengths are long-tailed (a few samples run to the token limit); started in row order, the long
    ones that start last finish alone, the GPU half idle. Longest first balances the tail: at 255 rows of the
    realistic workload on the reference GPU (benchmarks/bench_attention.py), 147 against 161 us a layer on
    GPT-J-6B's shape, 167 against 181 on Mistral-7B's (2 warps); as fast as rows of equal lengths."""
    keys = g_len if shared_prefix else g_len + p_len
    return torch.argsort(keys, descending=True, stable=True).to(torch.int32)


_SM_COUNT: dict = {}


def _multiprocessors(device: torch.device) -> int:
    if device.type != "cuda":
        return 8
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SM_COUNT:
        _SM_COUNT[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SM_COUNT[index]


MAX_SPLIT = 8


def fills_the_gpu(batch: int, heads: int, device: torch.device) -> bool:
    """Whether the (row, head) programs alone fill the GPU 8 times over: then no row needs cutting for the
    GPU to be busy, only the longest rows for the kernel not to end on them (:func:`balanced_work`)."""
    return batch * heads >= 8 * _multiprocessors(device)


def attention_split(batch: int, heads: int, max_keys: int, block_n: int, device: torch.device) -> int:
    """Parts each row's keys are cut into: 1 where the (row, head) programs alone fill the GPU 8 times over,
    else 8. Measured on the reference GPU (benchmarks/bench_attention.py), GPT-J shape: batch 1 3.6x
    faster with 8 parts, batches 16-64 1.4-1.8x (4 parts within 3% of 8), 128 and 255 within 3% of 1 part;
    Mistral's shape alike."""
    if fills_the_gpu(batch, heads, device):
        return 1
    return max(1, min(MAX_SPLIT, triton.cdiv(max_keys, block_n)))


def attention_block_n(head_dim: int, balanced: bool = False) -> int:
    """Keys a decode-attention program reads per loop: 8,192 values (a 16 KiB bf16 tile) between 16 and 64; with
    long rows in parts (:func:`balanced_work`, at batches that fill the GPU), 2,048 values, read by one warp.
    Measured on the H200 at 512 rows over shared prompts (benchmarks/bench_attention.py --balanced, us a layer):
    GPT-J's shape 204 against 222-235 for whole rows at 32 keys and 2 warps."""
    return max(16, min(64, (2048 if balanced else 8192) // triton.next_power_of_2(head_dim)))


BALANCED_WARPS = 1
# rows longer than 4 times the batch's mean keys are cut: the same time as 2x (GPT-J's shape, 204.4 and 205.3 us)
# with fewer programs left idle
BALANCED_SPREAD = 4


@dataclass
class AttentionWork:
    """The programs of a balanced decode attention (:func:`balanced_work`): program j reads part ``part[j]``
    of row ``row[j]`` (-1: no work: the list has room for every row and the extra parts); row r is cut into
    ``parts[r]`` parts, whose states the combine kernel finds at programs ``first[r]`` on; ``merged``: the rows
    the combine kernel visits (those in several parts among them; -1: none). All int32, on the device."""

    row: torch.Tensor
    part: torch.Tensor
    parts: torch.Tensor
    first: torch.Tensor
    merged: torch.Tensor


def balanced_work(p_len: torch.Tensor, g_len: torch.Tensor, shared_prefix: bool, order: torch.Tensor,
                  block_n: int, spread: int = BALANCED_SPREAD) -> AttentionWork:
    """Rows longer than ``spread`` times the batch's mean keys cut into parts of about that many (whole key
    blocks), so that no program reads much more than the mean. Why: rows' lengths are long-tailed; at 512 rows
    of the realistic GPT-J workload one program per (row, head) ends on its longest rows, each read at a
    program's share of its multiprocessor (12% slower than rows of equal lengths on the H200,
    docs/benchmarks.md). Programs in ``order`` (the rows by keys, most first, :func:`longest_rows_first`), a
    row's parts together. The chunk is at least ``spread`` times the mean, so at most a ``spread``-th of the
    rows is cut, the first ones in ``order``, into at most a ``spread``-th of the rows' number of extra parts:
    fixed-size lists, computed on the device without a host sync (CUDA graphs), once per step for every layer."""
    batch = p_len.shape[0]
    keys = (g_len if shared_prefix else g_len + p_len).long()
    chunk = (keys.sum() * spread + batch - 1) // batch
    chunk = torch.clamp((chunk + block_n - 1) // block_n * block_n, min=block_n)
    parts = torch.clamp((keys + chunk - 1) // chunk, min=1)
    ordered = parts[order.long()]
    ends = torch.cumsum(ordered, 0)
    cut = -(-batch // spread)  # rows cut at most: each holds more than spread times the mean
    program = torch.arange(batch + cut, device=p_len.device)
    at = torch.searchsorted(ends, program, right=True)
    live = at < batch
    at = torch.clamp(at, max=batch - 1)
    starts = ends - ordered
    first = torch.empty_like(parts).scatter_(0, order.long(), starts)
    return AttentionWork(row=torch.where(live, order.long()[at], -1).to(torch.int32),
                         part=(program - starts[at]).to(torch.int32), parts=parts.to(torch.int32),
                         first=first.to(torch.int32), merged=order[:cut].to(torch.int32))


def decode_attention_triton(q, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, spec, tables, window: int = 0,
                            shared_prefix: int = 0, groups=None, row_order=None, split: int | None = None,
                            work: AttentionWork | None = None, block_n: int | None = None,
                            num_warps: int | None = None, num_stages: int = 2) -> torch.Tensor:
    """Same contract as :func:`decode_attention_reference`. ``shared_prefix``: the most rows one prompt has
    in the batch; when set, attention over the prompts is computed per prompt slot (its keys and values read
    once per block of rows, by matrix products) and merged into each row's own part; 0: per row.
    ``groups``: :func:`prefix_groups` of this batch, ``row_order``: :func:`longest_rows_first` (each computed
    here when not given; the runner computes them once per step for all layers). ``split``: parts per row
    (default :func:`attention_split`); ``work``: instead, each row in its own number of parts
    (:func:`balanced_work`); ``block_n``, ``num_warps``, ``num_stages``: tuning (benchmarks)."""
    batch = q.shape[0]
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    d_pad = triton.next_power_of_2(spec.head_dim)
    block_n = block_n or attention_block_n(spec.head_dim, balanced=work is not None)
    # 2 warps: 1.5x the bandwidth of 4 on GPT-J's and Mistral's shapes (reference GPU, bench_attention.py). At
    # 255 rows, 1 warp with 32-key blocks read Mistral's 1.4x faster; not the default: untried with the default
    # 64-key blocks of 128 dims and fewer, where a warp's registers would hold twice the keys (float32: spills).
    # Long rows in parts: half the keys a block, one warp (attention_block_n)
    num_warps = num_warps or (BALANCED_WARPS if work is not None else 2)
    slopes = tables.alibi_slopes if spec.alibi else p_len
    common = dict(GROUP=spec.group, D=spec.head_dim, D_PAD=d_pad, ALIBI=spec.alibi, SOFTCAP=spec.softcap > 0,
                  WINDOW=window > 0, ROUND=spec.round_scores and q.dtype != torch.float32, RDT=_tl_dtype(q.dtype))
    m_in = l_in = acc_in = p_len
    if shared_prefix:
        slots = kp.shape[0]
        m_in = torch.empty(batch * spec.num_heads, dtype=torch.float32, device=q.device)
        l_in = torch.empty_like(m_in)
        acc_in = torch.empty(batch * spec.num_heads * d_pad, dtype=torch.float32, device=q.device)
        order, starts, counts = groups if groups is not None else prefix_groups(p_slot, p_len, slots)
        block_m = max(16, triton.next_power_of_2(spec.group))
        rows = block_m // spec.group
        blocks = triton.cdiv(min(shared_prefix, batch), rows)
        _prefix_attention_kernel[(slots, spec.num_kv_heads, blocks)](
            q, kp, vp, order, starts, counts, p_len, g_len, slopes, m_in, l_in, acc_in,
            q.stride(0), q.stride(1), kp.stride(0), kp.stride(1), kp.stride(2), spec.scale, spec.softcap, window,
            HQ=spec.num_heads, ROWS=rows, BLOCK_M=block_m, BLOCK_N=32 if d_pad <= 128 else 16,
            IEEE=q.dtype == torch.float32 or _INTERPRETED, num_warps=4, **common)
    if split is None:
        max_keys = kg.shape[2] + (0 if shared_prefix else kp.shape[2])
        split = attention_split(batch, spec.num_heads, max_keys, block_n, q.device)
    if work is not None:
        split = 1
    programs = batch * split if work is None else work.row.shape[0]
    m_part = l_part = acc_part = p_len
    if programs > batch:
        m_part = torch.empty(programs * spec.num_heads, dtype=torch.float32, device=q.device)
        l_part = torch.empty_like(m_part)
        acc_part = torch.empty(programs * spec.num_heads * d_pad, dtype=torch.float32, device=q.device)
    if row_order is None:
        row_order = longest_rows_first(p_len, g_len, bool(shared_prefix))
    listed = (work.row, work.part, work.parts, work.first) if work is not None else (p_len,) * 4
    grid = (spec.num_heads, batch, split) if work is None else (spec.num_heads, programs, 1)
    _decode_attention_kernel[grid](
        q, out, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, row_order, slopes, m_in, l_in, acc_in,
        m_part, l_part, acc_part, *listed,
        q.stride(0), q.stride(1), out.stride(0), out.stride(1),
        kp.stride(0), kp.stride(1), kp.stride(2), kg.stride(0), kg.stride(1), kg.stride(2), spec.scale,
        spec.softcap, window, split, HQ=spec.num_heads, BLOCK_N=block_n, PREFIX_DONE=bool(shared_prefix),
        BALANCED=work is not None, num_warps=num_warps, num_stages=num_stages, **common)
    if work is not None:
        _combine_balanced_kernel[(work.merged.shape[0], spec.num_heads)](
            out, p_len, m_in, l_in, acc_in, m_part, l_part, acc_part, work.parts, work.first, work.merged,
            out.stride(0), out.stride(1), HQ=spec.num_heads, D=spec.head_dim, D_PAD=d_pad,
            PREFIX_DONE=bool(shared_prefix), num_warps=4)
    elif split > 1:
        _combine_kernel[(batch, spec.num_heads)](
            out, p_len, m_in, l_in, acc_in, m_part, l_part, acc_part, out.stride(0), out.stride(1), split,
            HQ=spec.num_heads, D=spec.head_dim, D_PAD=d_pad, PREFIX_DONE=bool(shared_prefix),
            MAX_SPLIT=triton.next_power_of_2(max(split, MAX_SPLIT)), num_warps=4)
    return out
