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
"""

from __future__ import annotations

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
    def _gelu_new_kernel(X, Y, cols, sx, sy, c_cube, c_sqrt, BLOCK: tl.constexpr, ROUND: tl.constexpr,
                         RDT: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(X + row * sx + offs, mask=mask, other=0.0).to(tl.float32)
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
        y = libdevice.mul_rn(half, t)
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
