"""Chains of elementwise operations that transformers runs as several kernels, as one Triton kernel each
with the chain's rounding, so the engine's decode step gets the same values from fewer launches.

GPT-J's ``gelu_new`` (``NewGELUActivation``: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))))
is eight CUDA kernels in eager PyTorch, each rounding its result to the model dtype: 28 layers x 8 launches,
0.9 ms of a 255-row GPT-J step and ~0.3 ms of a batch-1 one (reference GPU). The kernel below computes
each operation in float32 exactly as PyTorch's kernel for it does (``x * x * x`` for ``pow(x, 3)``, one
multiply by a float32 scalar, libdevice's ``tanhf``), with explicitly rounded multiplies and adds (no fused
multiply-add), subnormals kept (libdevice without flush-to-zero, Triton's default) and a round to the
model dtype after each one. tests/test_engine_gpu.py checks it bit for bit
against transformers' module on every bfloat16 value and on random float32 values.

A parallel block's ``attn + mlp + residual`` (GPT-J) is two adds, each rounded: one kernel, same rounding.

A sequential block's residual add and the RMSNorm after it (Llama, Mistral, Qwen2; SmolLM2 and Qwen2.5-Coder) are
eight kernels in eager PyTorch (the add, the cast to float32, pow, mean, +eps, rsqrt, two multiplies): one here,
which also hands on the sum. Each step is rounded as transformers' ``LlamaRMSNorm`` rounds it (the mean is the
float32 sum times float32(1/n), as PyTorch's mean kernel computes it); only the order in which the row's squares
are summed differs, so a float32 output may differ from PyTorch's in its last bits (~16% of them, by at most ~6
units in the last place on an H100: tests/test_engine_gpu.py); a bfloat16 one almost never does. The real
SmolLM2-135M-Instruct's float32 greedy completions stayed 164/164 identical to transformers'. A gated MLP's
``silu(gate) * up`` is two kernels; one here, with PyTorch's ``x / (1 + exp(-x))`` in float32 and both
roundings (bit for bit). SmolLM2-135M's step ran ~950 kernels, ~60% of them these (30 layers).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
except ImportError:  # CPU-only installs: the model's own module runs
    triton = None

if triton is not None:
    from evalsuite.engine.kernels import _round

    @triton.jit
    def _gelu_new_rounded(x, c_cube, c_sqrt, ROUND: tl.constexpr, RDT: tl.constexpr):
        """NewGELUActivation of float32 values holding RDT ones, each operation rounded as torch rounds it."""
        cube = libdevice.mul_rn(x, x)
        if ROUND:
            cube = _round(cube, RDT)
        cube = libdevice.mul_rn(cube, x)
        if ROUND:
            cube = _round(cube, RDT)
        inner = libdevice.mul_rn(cube, c_cube)
        if ROUND:
            inner = _round(inner, RDT)
        inner = libdevice.add_rn(x, inner)
        if ROUND:
            inner = _round(inner, RDT)
        inner = libdevice.mul_rn(inner, c_sqrt)
        if ROUND:
            inner = _round(inner, RDT)
        t = libdevice.tanh(inner)
        if ROUND:
            t = _round(t, RDT)
        t = libdevice.add_rn(t, 1.0)
        if ROUND:
            t = _round(t, RDT)
        half = libdevice.mul_rn(x, 0.5)
        if ROUND:
            half = _round(half, RDT)
        return libdevice.mul_rn(half, t)


    @triton.jit
    def _gelu_new_kernel(X, Y, cols, sx, sy, c_cube, c_sqrt, BLOCK: tl.constexpr, ROUND: tl.constexpr,
                         RDT: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(X + row * sx + offs, mask=mask, other=0.0).to(tl.float32)
        y = _gelu_new_rounded(x, c_cube, c_sqrt, ROUND, RDT)
        tl.store(Y + row * sy + offs, y.to(Y.dtype.element_ty), mask=mask)


    @triton.jit
    def _add3_kernel(A, B, C, Y, n, BLOCK: tl.constexpr, ROUND: tl.constexpr, RDT: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        s = tl.load(A + offs, mask=mask).to(tl.float32) + tl.load(B + offs, mask=mask).to(tl.float32)
        if ROUND:
            s = _round(s, RDT)
        s = s + tl.load(C + offs, mask=mask).to(tl.float32)
        tl.store(Y + offs, s.to(Y.dtype.element_ty), mask=mask)


    @triton.jit
    def _add_rms_norm_kernel(X, A, W, XO, Y, cols, sx, sa, sxo, sy, eps, inv_n, BLOCK: tl.constexpr,
                             HAS_ADD: tl.constexpr, ROUND: tl.constexpr, RDT: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(X + row * sx + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_ADD:
            x = libdevice.add_rn(x, tl.load(A + row * sa + offs, mask=mask, other=0.0).to(tl.float32))
            if ROUND:
                x = _round(x, RDT)
            tl.store(XO + row * sxo + offs, x.to(XO.dtype.element_ty), mask=mask)
        total = tl.sum(libdevice.mul_rn(x, x), axis=0)
        scale = libdevice.rsqrt(libdevice.add_rn(libdevice.mul_rn(total, inv_n), eps))
        y = libdevice.mul_rn(x, scale)
        if ROUND:
            y = _round(y, RDT)
        y = libdevice.mul_rn(tl.load(W + offs, mask=mask, other=0.0).to(tl.float32), y)
        if ROUND:  # rounded here, so the store's cast is exact whatever its rounding mode
            y = _round(y, RDT)
        tl.store(Y + row * sy + offs, y.to(Y.dtype.element_ty), mask=mask)


    @triton.jit
    def _add3_layer_norm_kernel(A, B, X, W, BN, XO, Y, cols, eps, BLOCK: tl.constexpr, HAS_ADD: tl.constexpr,
                                RDT: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(X + row * cols + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_ADD:  # (a + b) + x, each sum rounded, as add3
            s = _round(tl.load(A + row * cols + offs, mask=mask, other=0.0).to(tl.float32)
                       + tl.load(B + row * cols + offs, mask=mask, other=0.0).to(tl.float32), RDT)
            x = _round(s + x, RDT)
            tl.store(XO + row * cols + offs, x.to(XO.dtype.element_ty), mask=mask)
        mean = tl.sum(x, axis=0) / cols
        centred = tl.where(mask, x - mean, 0.0)
        rstd = libdevice.rsqrt(tl.sum(centred * centred, axis=0) / cols + eps)
        y = centred * rstd * tl.load(W + offs, mask=mask, other=0.0).to(tl.float32) \
            + tl.load(BN + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + row * cols + offs, y.to(Y.dtype.element_ty), mask=mask)


    @triton.jit
    def _silu_mul_kernel(G, U, Y, cols, sg, su, sy, BLOCK: tl.constexpr, ROUND: tl.constexpr, RDT: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < cols
        g = tl.load(G + row * sg + offs, mask=mask, other=0.0).to(tl.float32)
        act = libdevice.div_rn(g, libdevice.add_rn(libdevice.exp(-g), 1.0))
        if ROUND:
            act = _round(act, RDT)
        y = libdevice.mul_rn(act, tl.load(U + row * su + offs, mask=mask, other=0.0).to(tl.float32))
        if ROUND:
            y = _round(y, RDT)
        tl.store(Y + row * sy + offs, y.to(Y.dtype.element_ty), mask=mask)


_TL_DTYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}


def add3(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """(a + b) + c with torch's rounding (each sum rounded to the dtype), one launch; torch elsewhere."""
    if (triton is None or not a.is_cuda or a.dtype not in _TL_DTYPES or not (a.shape == b.shape == c.shape)
            or not (a.dtype == b.dtype == c.dtype) or not all(t.is_contiguous() for t in (a, b, c))):
        return a + b + c
    y = torch.empty_like(a)
    block = 1024
    _add3_kernel[(triton.cdiv(a.numel(), block),)](a, b, c, y, a.numel(), BLOCK=block, ROUND=a.dtype != torch.float32,
                                                   RDT=getattr(tl, _TL_DTYPES[a.dtype]), num_warps=4)
    return y


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """NewGELUActivation of a [rows, cols] CUDA tensor (rows may be strided), in one launch."""
    rows, cols = x.shape
    y = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    block = 1024
    rdt = getattr(tl, _TL_DTYPES[x.dtype])
    _gelu_new_kernel[(rows, triton.cdiv(cols, block))](
        x, y, cols, x.stride(0), y.stride(0), 0.044715, math.sqrt(2.0 / math.pi), BLOCK=block,
        ROUND=x.dtype != torch.float32, RDT=rdt, num_warps=4, enable_reflect_ftz=False)  # keep subnormals, as torch
    return y


def fused_activation(module) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The one-kernel version of an activation module, or None (then the module itself runs)."""
    if triton is None:
        return None
    if type(module).__name__ == "NewGELUActivation":
        def run(x: torch.Tensor) -> torch.Tensor:
            if x.is_cuda and x.dim() == 2 and x.stride(-1) == 1 and x.dtype in (torch.bfloat16, torch.float16,
                                                                                 torch.float32):
                return gelu_new(x)
            return module(x)
        return run
    return None


# RMSNorm modules whose forward is exactly LlamaRMSNorm's (tests/test_engine.py checks each against it): weight
# times the float32-normalised input cast back to the input's dtype. Gemma's (1 + weight, in float32) is not one.
PLAIN_RMS_NORMS = frozenset({"LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm"})
SILU_MODULES = frozenset({"SiLUActivation", "SiLU"})


def _fusable(*tensors: torch.Tensor) -> bool:
    first = tensors[0]
    return (triton is not None and first.is_cuda and first.dtype in _TL_DTYPES and first.dim() == 2
            and all(t.dtype == first.dtype and t.dim() == 2 and t.stride(-1) == 1 for t in tensors))


def add_then_norm(x: torch.Tensor, added: torch.Tensor | None, norm) -> tuple[torch.Tensor, torch.Tensor]:
    """(x + added, norm(x + added)) for [rows, hidden] tensors, in one launch where ``norm`` is a plain RMSNorm
    (:data:`PLAIN_RMS_NORMS`) on CUDA; ``added`` None: (x, norm(x)). Elsewhere the add and the module itself."""
    weight = norm.weight
    if not (type(norm).__name__ in PLAIN_RMS_NORMS and _fusable(x, *(t for t in (added,) if t is not None))
            and weight.dtype == x.dtype and weight.is_contiguous() and x.shape[-1] == weight.shape[0]):
        total = x if added is None else x + added
        return total, norm(total)
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    total = torch.empty_like(x) if added is not None else x
    y = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    other = added if added is not None else x
    _add_rms_norm_kernel[(rows,)](x, other, weight, total, y, cols, x.stride(0), other.stride(0), total.stride(0),
                                  y.stride(0), float(norm.variance_epsilon), _float32_reciprocal(cols),
                                  BLOCK=block, HAS_ADD=added is not None, ROUND=x.dtype != torch.float32,
                                  RDT=getattr(tl, _TL_DTYPES[x.dtype]), num_warps=min(16, max(4, block // 1024)),
                                  enable_reflect_ftz=False)
    return total, y


def add3_then_layer_norm(x: torch.Tensor, added: tuple[torch.Tensor, torch.Tensor] | None,
                         norm) -> tuple[torch.Tensor, torch.Tensor]:
    """(total, norm(total)) with total = add3(*added, x) (or x where ``added`` is None), for [rows, hidden]
    tensors: one launch where ``norm`` is a LayerNorm with weight and bias and the tensors are contiguous bfloat16
    or float16 on CUDA (GPT-J's residual sum and the next block's ln_1). The mean and variance are float32 sums in
    the kernel's order, so an output may differ from torch's in its last bit; float32 runs torch's (the float32
    greedy path stays transformers' arithmetic). Elsewhere :func:`add3` and the module."""
    tensors = (x, *(added or ()))
    if not (type(norm) is torch.nn.LayerNorm and _fusable(*tensors) and x.dtype != torch.float32
            and all(t.is_contiguous() and t.shape == x.shape for t in tensors) and norm.weight is not None
            and norm.bias is not None and norm.weight.dtype == x.dtype and norm.bias.dtype == x.dtype
            and norm.normalized_shape == (x.shape[-1],)):
        total = x if added is None else add3(added[0], added[1], x)
        return total, norm(total)
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    total = torch.empty_like(x) if added is not None else x
    y = torch.empty_like(x)
    a, b = added if added is not None else (x, x)
    _add3_layer_norm_kernel[(rows,)](a, b, x, norm.weight, norm.bias, total, y, cols, float(norm.eps), BLOCK=block,
                                     HAS_ADD=added is not None, RDT=getattr(tl, _TL_DTYPES[x.dtype]),
                                     num_warps=min(16, max(4, block // 1024)))
    return total, y


@functools.cache
def _float32_reciprocal(n: int) -> float:
    """float32(1/n) rounded once, as PyTorch's mean kernel scales its float32 sum."""
    return float(torch.tensor(1.0, dtype=torch.float32) / n)


def silu_mul(activation, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """``activation(gate) * up`` in one launch where the activation is SiLU and the tensors are CUDA [rows, cols]
    (views of one product included); elsewhere the module and the multiply."""
    if not (type(activation).__name__ in SILU_MODULES and _fusable(gate, up) and gate.shape == up.shape):
        return activation(gate) * up
    rows, cols = gate.shape
    y = torch.empty((rows, cols), dtype=gate.dtype, device=gate.device)
    block = 1024
    _silu_mul_kernel[(rows, triton.cdiv(cols, block))](
        gate, up, y, cols, gate.stride(0), up.stride(0), y.stride(0), BLOCK=block, ROUND=gate.dtype != torch.float32,
        RDT=getattr(tl, _TL_DTYPES[gate.dtype]), num_warps=4, enable_reflect_ftz=False)
    return y
