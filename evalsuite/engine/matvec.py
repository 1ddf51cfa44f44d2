"""Matrix products of one row (a decode step at batch 1, the drain's last sample): ``x @ weight.T + bias`` for a
[1, in] bfloat16 or float16 input, as a Triton kernel that streams the weight once.

At one row a product reads its weight and does almost nothing else, so its time is the weight's bytes over the
read rate. cuBLAS reads GPT-J-6B's at 2.1-2.8 TB/s at one row; this kernel at 2.7-3.1 on the same H100
(``benchmarks/bench_gemv.py``), which is most of what keeps a batch-1 token from the 4.03 ms it takes to read
the 12.1 GB of weights once. Each program takes a few whole rows of the weight and walks along them, so every
load is a long contiguous run and there is no reduction across programs.

After the product it can apply GPT-J's ``gelu_new`` to the columns from ``gelu_from`` on (the fc_in part of the
fused q, k, v + fc_in product), with the rounding of the separate kernel (``fused_ops``): one launch less a layer.

The product sums in float32 in its own order, so its bfloat16 results may differ from cuBLAS's in the last bit;
float32 products never come here (the float32 greedy path stays transformers' own arithmetic).
"""

from __future__ import annotations

import math

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: F.linear
    triton = None

if triton is not None:
    from evalsuite.engine.fused_ops import _gelu_new_rounded
    from evalsuite.engine.kernels import _round

    @triton.jit
    def _one_row_kernel(X, W, B, Y, N, K, sw, gelu_from, c_cube, c_sqrt, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, HAS_BIAS: tl.constexpr, GELU: tl.constexpr, RDT: tl.constexpr):
        rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        rows = rn < N
        rk = tl.arange(0, BLOCK_K)
        w_ptr = W + rn[:, None].to(tl.int64) * sw + rk[None, :]
        x_ptr = X + rk
        acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
        for _ in range(0, K, BLOCK_K):  # K is a multiple of BLOCK_K (one_row_linear checks)
            w = tl.load(w_ptr, mask=rows[:, None], other=0.0, eviction_policy="evict_first")
            acc += w.to(tl.float32) * tl.load(x_ptr).to(tl.float32)[None, :]
            w_ptr += BLOCK_K
            x_ptr += BLOCK_K
        y = tl.sum(acc, axis=1)
        if HAS_BIAS:
            y += tl.load(B + rn, mask=rows, other=0.0).to(tl.float32)
        y = _round(y, RDT)  # the product's own output, as F.linear hands it on
        if GELU:
            y = tl.where(rn >= gelu_from, _gelu_new_rounded(y, c_cube, c_sqrt, True, RDT), y)
        tl.store(Y + rn, y.to(Y.dtype.element_ty), mask=rows)


HALF_TYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}


def tile_for(n: int, k: int) -> tuple[int, int, int, int] | None:
    """(rows a program, columns a load, warps, pipeline stages) for an [n, k] weight, or None where the kernel
    does not apply (k not a multiple of 64). From ``benchmarks/bench_gemv.py``'s sweep over GPT-J's shapes on an
    H100 (2026-11-28), whose best tiles all took four rows a program (many programs in flight) and 2048-column
    loads; three pipeline stages were best for out_proj (taken here for weights that small) and lm_head (not
    taken: its one-stage rate was not recorded apart)."""
    block_k = next((b for b in (2048, 1024, 512, 256, 128, 64) if k % b == 0), None)
    if block_k is None:
        return None
    return 4, block_k, 4, 3 if n * k <= 4096 * 4096 else 1


def applies(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> bool:
    """Whether :func:`one_row_linear` runs the kernel: one contiguous half-precision CUDA row, a weight of the same
    dtype with contiguous rows (views of a fused weight included), a contiguous bias."""
    return (triton is not None and x.is_cuda and x.dim() == 2 and x.shape[0] == 1 and x.dtype in HALF_TYPES
            and x.is_contiguous() and weight.dim() == 2 and weight.dtype == x.dtype and weight.stride(1) == 1
            and weight.shape[1] == x.shape[1] and weight.device == x.device
            and (bias is None or (bias.dtype == x.dtype and bias.is_contiguous()))
            and tile_for(*weight.shape) is not None)


def one_row_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                   gelu_from: int | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` for a [1, in] row where :func:`applies`; ``gelu_from``: also ``gelu_new``
    on the output's columns from there on. Callers check :func:`applies` first (elsewhere: F.linear)."""
    n, k = weight.shape
    block_n, block_k, warps, stages = tile_for(n, k)  # type: ignore[misc]
    y = torch.empty((1, n), dtype=x.dtype, device=x.device)
    _one_row_kernel[(triton.cdiv(n, block_n),)](
        x, weight, bias if bias is not None else weight, y, n, k, weight.stride(0),
        gelu_from if gelu_from is not None else n, 0.044715, math.sqrt(2.0 / math.pi), BLOCK_N=block_n,
        BLOCK_K=block_k, HAS_BIAS=bias is not None, GELU=gelu_from is not None, RDT=getattr(tl, HALF_TYPES[x.dtype]),
        num_warps=warps, num_stages=stages, enable_reflect_ftz=False)  # gelu keeps subnormals, as torch
    return y


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear``, through the one-row kernel where it applies."""
    if applies(x, weight, bias):
        return one_row_linear(x, weight, bias)
    return torch.nn.functional.linear(x, weight, bias)


def module_linear(module, x: torch.Tensor) -> torch.Tensor:
    """``module(x)``, through the one-row kernel where the module is a plain ``nn.Linear`` (a quantized or
    hooked one runs itself)."""
    if (type(module) is torch.nn.Linear and not module._forward_hooks and not module._forward_pre_hooks
            and "forward" not in vars(module)):  # accelerate's offload hooks replace forward on the instance
        return linear(x, module.weight, module.bias)
    return module(x)
