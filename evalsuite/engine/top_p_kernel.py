"""Seeded temperature + top-p sampling of a batch of rows in one CUDA kernel (Triton), for
:func:`evalsuite.engine.sampling.choose_tokens`.

Why: the torch version sorts every row (a segmented radix sort of [rows, vocab] floats with int64 indices),
then runs softmax, a scan, a scatter and the Gumbel noise as a dozen passes: 2.0 ms of a 19 ms GPT-J decode
step at 255 rows (reference GPU). Here one program per row finds the nucleus boundary without sorting:
a search over the logits' order-preserving integer keys for the smallest logit whose tokens, with every
larger one, hold at least ``top_p`` of the probability mass; then one pass draws the token. The search is
FAN-way (:data:`FAN_BY_KEY_BITS`): each pass over the row measures the mass above FAN thresholds at once, so
a bfloat16 row takes 4 passes where a binary search took 16 (a float32 row 16, not 32). On one H200, 512 rows
of 50,400 logits (``benchmarks/bench_top_p.py``): bfloat16 599 -> 525 us, float32 1,264 -> 1,235 us (more
ways cost more arithmetic a pass than they save passes there); the same tokens in every case measured.

Same tokens as the torch version: the kept set is the same prefix of the (stable, descending) sort order,
tied logits at the boundary included in index order, and the draw is the same arithmetic, bit for bit
(``logits * (1 / T)`` as torch computes a division by a scalar on CUDA, the same counter-based noise,
``-log(-log(u))`` through the same libdevice ``logf``, the first index of the maximum). The masses are
summed in another order than torch's scan, so a token whose preceding mass lies within float32 rounding
(~1e-6) of ``top_p`` may fall on the other side: the same kind of difference as between torch on CPU and
on CUDA.
"""

from __future__ import annotations

import numpy as np
import torch

from evalsuite.engine.host_values import per_row_steps

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
except ImportError:  # CPU-only installs: choose_tokens uses torch
    triton = None

FAN_BY_KEY_BITS = {16: 16, 32: 4}  # thresholds a search pass measures, by the logits' bits: 4 passes, 16 passes

if triton is not None:
    from evalsuite.engine.splitmix_kernel import splitmix64_tl as _splitmix64_tl

    @triton.jit
    def _key(raw, BITS: tl.constexpr):
        """Order-preserving int32 key of a float's bits (larger float, larger key): 0..65535 for 16-bit floats,
        signed for float32 (the sign bit set: the other bits inverted)."""
        if BITS == 16:
            u = raw.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
            key = tl.where((u >> 15) == 1, (~u) & 0xFFFF, u | 0x8000)
        else:
            u = raw.to(tl.int32, bitcast=True)
            key = tl.where(u < 0, u ^ 0x7FFFFFFF, u)
        return key

    @triton.jit
    def _value_of_key(key, RAW: tl.constexpr, BITS: tl.constexpr):
        """The float32 value of the logit whose key is ``key`` (the inverse of :func:`_key`)."""
        if BITS == 16:
            u = tl.where(key >= 0x8000, key - 0x8000, (~key) & 0xFFFF)
            return u.to(tl.int16).to(RAW, bitcast=True).to(tl.float32)
        u = tl.where(key < 0, key ^ 0x7FFFFFFF, key)
        return u.to(tl.float32, bitcast=True)

    @triton.jit
    def _masses_at_or_above(row, vocab, thresholds, lmax, scale2, BITS: tl.constexpr, FAN: tl.constexpr,
                            BLOCK: tl.constexpr):
        """Unnormalized probability mass of the tokens whose key >= each of ``thresholds`` ([FAN], float32),
        in one pass. Each threshold's sum is accumulated the same way (per lane, then across lanes), so the
        mass is one function of the threshold, non-increasing, whichever pass computes it."""
        acc = tl.zeros([FAN, BLOCK], tl.float32)
        for start in range(0, vocab, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            raw = tl.load(row + offs, mask=offs < vocab, other=float("-inf"))  # exp2(-inf) = 0: adds nothing
            e = tl.exp2((raw.to(tl.float32) - lmax) * scale2)
            acc += tl.where(_key(raw, BITS)[None, :] >= thresholds[:, None], e[None, :], 0.0)
        return tl.sum(acc, axis=1)

    @triton.jit
    def _top_p_sample_kernel(LOGITS, SEEDS, STEPS, OUT, vocab, stride_row, inv_t, scale2, top_p,
                             BITS: tl.constexpr, TOP_P: tl.constexpr, BLOCK: tl.constexpr, FAN: tl.constexpr,
                             PASSES: tl.constexpr, MASS_BLOCK: tl.constexpr):
        row_id = tl.program_id(0)
        row = LOGITS + row_id.to(tl.int64) * stride_row
        # pass 1: the largest logit (the mass is measured relative to it)
        best = tl.full([BLOCK], float("-inf"), tl.float32)
        for start in range(0, vocab, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            best = tl.maximum(best, tl.load(row + offs, mask=offs < vocab, other=float("-inf")).to(tl.float32))
        lmax = tl.max(best, axis=0)
        kstar = tl.zeros([], tl.int32)  # boundary key: every token with a larger key is kept
        keep_ties = tl.zeros([], tl.int64) + vocab  # tokens at the boundary key kept, in index order
        if TOP_P:
            # the largest key k whose mass(key >= k) reaches the goal, by a FAN-way search over the key space:
            # each pass measures FAN thresholds spread over [lo, hi] and keeps the last one that reaches it
            # (mass(lo) always does); mass(hi + 1), below the goal, is kept for the boundary's ties
            j = tl.arange(0, FAN)
            lo = tl.zeros([], tl.int64) + (0 if BITS == 16 else -(1 << 31))
            hi = tl.zeros([], tl.int64) + ((1 << 16) - 1 if BITS == 16 else (1 << 31) - 1)
            above = tl.zeros([], tl.float32)  # mass(hi + 1): no key is larger than the largest
            goal = tl.zeros([], tl.float32)
            for p in tl.static_range(PASSES):
                stride = (hi - lo + FAN) // FAN
                at = lo + j * stride
                inside = at <= hi
                masses = _masses_at_or_above(row, vocab, tl.where(inside, at, hi).to(tl.int32), lmax, scale2,
                                             BITS, FAN, MASS_BLOCK)
                if p == 0:  # the first threshold is the smallest key: the whole mass
                    goal = top_p * tl.sum(tl.where(j == 0, masses, 0.0), axis=0)
                last = tl.max(tl.where(inside & (masses >= goal), j, 0), axis=0)
                next_inside = (last + 1 < FAN) & (lo + (last + 1) * stride <= hi)
                above = tl.where(next_inside, tl.sum(tl.where(j == last + 1, masses, 0.0), axis=0), above)
                hi = tl.where(next_inside, lo + (last + 1) * stride - 1, hi)
                lo = lo + last * stride
            kstar = lo.to(tl.int32)
            # the boundary's tied tokens: the j-th (index order) is kept while the mass before it,
            # above + j * q, is below the goal; the first always is
            q = tl.exp2((_value_of_key(kstar, LOGITS.dtype.element_ty, BITS) - lmax) * scale2)
            keep_ties = tl.maximum(tl.ceil((goal - above) / q), 1.0).to(tl.int64)
        # last pass: x = logit * (1/T), Gumbel noise, first index of the maximum over kept tokens
        seed = tl.load(SEEDS + row_id).to(tl.uint64, bitcast=True)
        step = tl.load(STEPS + row_id).to(tl.uint64, bitcast=True)
        mixed = _splitmix64_tl(seed ^ _splitmix64_tl(step))
        best_val = tl.full([], float("-inf"), tl.float32)
        best_idx = tl.zeros([], tl.int32)
        ties_before = tl.zeros([], tl.int64)
        for start in range(0, vocab, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < vocab
            raw = tl.load(row + offs, mask=mask, other=float("-inf"))
            key = _key(raw, BITS)
            keep = mask
            if TOP_P:
                tie = mask & (key == kstar)
                tie_i = tie.to(tl.int64)
                rank = ties_before + tl.cumsum(tie_i, axis=0) - tie_i
                ties_before += tl.sum(tie_i, axis=0)
                keep = mask & ((key > kstar) | (tie & (rank < keep_ties)))
            x = libdevice.mul_rn(raw.to(tl.float32), inv_t)
            bits = _splitmix64_tl(mixed + offs.to(tl.uint64) * 0x9E3779B97F4A7C15)
            u = ((bits >> 40).to(tl.float32) + 0.5) * (1.0 / 16777216.0)
            gumbel = -libdevice.log(-libdevice.log(u))
            score = tl.where(keep, libdevice.add_rn(x, gumbel), float("-inf"))
            block_best = tl.max(score, axis=0)
            block_idx = tl.argmax(score, axis=0, tie_break_left=True).to(tl.int32) + start
            better = block_best > best_val
            best_idx = tl.where(better, block_idx, best_idx)
            best_val = tl.where(better, block_best, best_val)
        tl.store(OUT + row_id, best_idx.to(tl.int64))


def fused_top_p_usable(logits: torch.Tensor, top_k: int) -> bool:
    """The kernel covers temperature and top-p (not top-k) on CUDA, for float32/bf16/fp16 logits."""
    return (triton is not None and logits.is_cuda and logits.dim() == 2 and not top_k
            and logits.dtype in (torch.float32, torch.bfloat16, torch.float16) and logits.stride(1) == 1)


def sample_top_p(logits: torch.Tensor, seeds: torch.Tensor, step, temperature: float, top_p: float,
                 fan: int | None = None) -> torch.Tensor:
    """Token per row: what ``choose_tokens`` draws for temperature ``temperature`` and nucleus ``top_p``
    (top-k off), in one kernel launch. ``step``: scalar or one per row. ``fan``: thresholds a search pass
    measures, a power of two (default :data:`FAN_BY_KEY_BITS`; benchmarks try others)."""
    rows, vocab = logits.shape
    steps = per_row_steps(step, rows, logits.device)
    out = torch.empty(rows, dtype=torch.int64, device=logits.device)
    inv_t = float(np.float32(1.0) / np.float32(temperature))  # torch's CUDA x / scalar is x * (1 / scalar)
    bits = 16 if logits.element_size() == 2 else 32
    fan = fan or FAN_BY_KEY_BITS[bits]
    passes = -(-bits // (fan.bit_length() - 1))  # FAN-way search steps over 2**bits keys
    _top_p_sample_kernel[(rows,)](logits, seeds.reshape(-1).contiguous(), steps, out, vocab, logits.stride(0),
                                  inv_t, 1.4426950408889634 / temperature, float(top_p), BITS=bits,
                                  TOP_P=top_p < 1.0, BLOCK=2048, FAN=fan, PASSES=passes, MASS_BLOCK=4096 // fan,
                                  num_warps=8,
                                  enable_reflect_ftz=False)  # libdevice keeps subnormals, as torch does
    return out
