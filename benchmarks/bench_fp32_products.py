"""Float32 matrix products at a small model's decode widths: cuBLAS against two Triton kernels (GPU).

Why: the real SmolLM2-135M's float32 greedy step is ~2-3.5 ms of kernels against a ~0.7 ms floor, and the
profile (``profile_decode.py --model smollm2-135m --dtype float32 --greedy``) puts about half of it in 120
cuBLAS products of ~10 us each, whatever the width: latency, not bytes or arithmetic. This measures whether a
Triton kernel would do better, per SmolLM2 product (q/k/v fused, o, gate/up fused, down) and width, each the
best of a sweep of tiles:

- ``dot``: a tiled ``tl.dot`` in IEEE float32 (no TF32: float32 greedy must stay token-identical to
  transformers);
- ``rows``: each program takes a few whole rows of the weight against every row of the input, partial sums
  per K lane and one reduction at the end (the one-row kernel of ``evalsuite/engine/matvec.py``, widened).

Products of 30 different weights run in one CUDA graph, so no weight is read from L2; times are per product.

    python benchmarks/bench_fp32_products.py --out runs/fp32    # GPU, ~1-2 minutes a kernel
    TRITON_INTERPRET=1 python benchmarks/bench_fp32_products.py --check   # CPU: both kernels against float64
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPES = {"qkv": (576, 960), "o": (576, 576), "gate_up": (576, 3072), "down": (1536, 576)}  # (in, out)
LAYERS = 30
WIDTHS = (4, 16, 32, 64, 160)


@triton.jit
def _dot_kernel(X, W, Y, M, N, sx, sw, sy, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr):
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptr = X + rm[:, None] * sx + rk[None, :]
    w_ptr = W + rn[None, :].to(tl.int64) * sw + rk[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptr, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        w = tl.load(w_ptr, mask=(rn[None, :] < N) & (rk[:, None] + k < K), other=0.0)
        acc = tl.dot(x, w, acc, input_precision="ieee")
        x_ptr += BLOCK_K
        w_ptr += BLOCK_K
    tl.store(Y + rm[:, None] * sy + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _rows_kernel(X, W, Y, M, N, sx, sw, sy, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    w_ptr = W + rn[:, None].to(tl.int64) * sw + rk[None, :]
    x_ptr = X + rm[:, None] * sx + rk[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        w = tl.load(w_ptr, mask=(rn[:, None] < N) & (rk[None, :] + k < K), other=0.0)
        x = tl.load(x_ptr, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        acc += x[:, None, :] * w[None, :, :]
        w_ptr += BLOCK_K
        x_ptr += BLOCK_K
    tl.store(Y + rm[:, None] * sy + rn[None, :], tl.sum(acc, axis=2), mask=(rm[:, None] < M) & (rn[None, :] < N))


KERNELS = {"dot": _dot_kernel, "rows": _rows_kernel}


def product(kind: str, x: torch.Tensor, w: torch.Tensor, tile: tuple[int, int, int, int]) -> torch.Tensor:
    """``x @ w.T`` in float32 by the ``kind`` kernel, tile = (rows of x, rows of w, K chunk, warps) a program."""
    (m, k), n = x.shape, w.shape[0]
    bm, bn, bk, warps = tile
    y = torch.empty(m, n, device=x.device, dtype=torch.float32)
    KERNELS[kind][(triton.cdiv(n, bn), triton.cdiv(m, bm))](x, w, y, m, n, x.stride(0), w.stride(0), y.stride(0),
                                                            K=k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                                            num_warps=warps, num_stages=2)
    return y


def tiles(kind: str, m: int) -> list[tuple[int, int, int, int]]:
    if kind == "dot":
        return [(bm, bn, bk, wp) for bm in (16, 32, 64) for bn in (16, 32, 64) for bk in (32, 64) for wp in (2, 4)
                if bm == 16 or bm < 2 * m]
    bm = min(64, triton.next_power_of_2(m))  # every row of x in one program up to 64 (registers)
    return [(bm, bn, bk, wp) for bn in (4, 8) for bk in (32, 64) for wp in (1, 2, 4)
            if bm * bn * bk // (32 * wp) <= 256]


def check() -> None:
    """Both kernels against a float64 product (Triton's interpreter runs this on the CPU)."""
    torch.manual_seed(0)
    for m in (1, 5, 54):
        for name, (k, n) in SHAPES.items():
            x, w = torch.randn(m, k), torch.randn(n, k) * 0.02
            exact = x.double() @ w.double().T
            for kind in KERNELS:
                error = (product(kind, x, w, tiles(kind, m)[0]).double() - exact).abs().max().item()
                assert error < 1e-5, (kind, m, name, error)
            print(f"m={m} {name}: both kernels within 1e-5 of float64")


def bench(kinds: list[str]) -> dict:
    from cuda_graphs import graph_of, replay_times_ms

    torch.manual_seed(0)
    weights = {name: [torch.randn(n, k, device="cuda") * 0.02 for _ in range(LAYERS)]
               for name, (k, n) in SHAPES.items()}

    def per_product_us(fn, reps: int) -> float:
        return statistics.median(replay_times_ms(graph_of(fn), reps)) * 1000 / LAYERS

    rows = {}
    for m in WIDTHS:
        for name, (k, _) in SHAPES.items():
            x, ws = torch.randn(m, k, device="cuda"), weights[name]
            row = {"cublas_us": round(per_product_us(lambda x=x, ws=ws: [torch.nn.functional.linear(x, w) for w in ws],
                                                     20), 2)}
            for kind in kinds:
                timed = []
                for tile in tiles(kind, m):
                    try:
                        def run(kind=kind, x=x, ws=ws, tile=tile):
                            return [product(kind, x, w, tile) for w in ws]

                        timed.append((per_product_us(run, 10), tile))
                    except Exception:  # a tile out of the GPU's resources
                        continue
                us, tile = min(timed)
                row[f"{kind}_us"], row[f"{kind}_tile"] = round(us, 2), tile
            rows[f"m={m} {name}"] = row
            print(f"m={m:4d} {name:8s} " + "  ".join(f"{key} {value}" for key, value in row.items()), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="runs/fp32-products")
    ap.add_argument("--kernels", default="dot,rows")
    ap.add_argument("--check", action="store_true", help="correctness only (CPU with TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    if args.check:
        check()
        return 0
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "products": bench(args.kernels.split(","))}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "fp32_products.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
