"""Can a batch-1 decode step read its weights faster than cuBLAS does? GPT-J-6B's matrix-vector products at
batch 1 (the fused q, k, v + fc_in product, out_proj, fc_out, out_proj and fc_out as one product over
[attention | gelu], lm_head), each timed as 28 calls on 28 different weights in one CUDA graph (a layer's worth
of weights never sits in the 50 MB L2), by cuBLAS (``F.linear``, ``torch.mv``) and by a Triton kernel in a
sweep of tile shapes, and the engine's own choice (``matvec.linear``). Reports the read rate in TB/s:
the batch-1 target (4.5 ms a token against a 4.03 ms weight floor) needs the products near 3.1 TB/s; cuBLAS
reads 2.4-2.9 in the engine's step.

    python benchmarks/bench_gemv.py --out runs/gemv        # GPU, ~1-2 minutes
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuda_graphs import graph_of  # noqa: E402

from evalsuite.engine import matvec as M  # noqa: E402


def gemv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, y: torch.Tensor, block_n: int, block_k: int,
         warps: int, stages: int) -> torch.Tensor:
    """The engine's one-row kernel (evalsuite.engine.matvec) with a tile shape of the sweep's choosing."""
    n, k = w.shape
    M._one_row_kernel[(triton.cdiv(n, block_n),)](
        x, w, b if b is not None else w, y, n, k, w.stride(0), n, 0.0, 0.0, BLOCK_N=block_n, BLOCK_K=block_k,
        HAS_BIAS=b is not None, GELU=False, RDT=tl.bfloat16, num_warps=warps, num_stages=stages)
    return y


SHAPES = {  # name: (N, K, bias)
    "qkv+fc_in": (3 * 4096 + 16384, 4096, True),
    "out_proj": (4096, 4096, False),
    "fc_out": (4096, 16384, True),
    "out_proj|fc_out": (4096, 20480, True),
    "lm_head": (50400 - 50400 % 32, 4096, True),
}


def timed_graph(calls, replays: int = 20, repeats: int = 5) -> float:
    """Median seconds of one replay of a graph holding ``calls`` (after two eager warm-up runs)."""
    graph = graph_of(calls)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / replays)
    return statistics.median(times)


def one_shape(name: str, n: int, k: int, has_bias: bool, layers: int, configs) -> dict:
    """Every way of doing one shape's products: cuBLAS, the engine's own choice, the sweep's best tile."""
    dev, bf16 = "cuda", torch.bfloat16
    ws = [torch.randn(n, k, device=dev, dtype=bf16) * 0.02 for _ in range(layers)]
    bs = [torch.randn(n, device=dev, dtype=bf16) if has_bias else None for _ in range(layers)]
    x = torch.randn(1, k, device=dev, dtype=bf16)
    y = torch.empty(1, n, device=dev, dtype=bf16)
    gbytes = layers * n * k * 2 / 1e9
    reference = torch.nn.functional.linear(x.float(), ws[0].float(), bs[0].float() if has_bias else None)
    pairs = list(zip(ws, bs))

    def rate(calls) -> float:
        return round(gbytes / timed_graph(calls) / 1e3, 3)

    row = {"shape": name, "n": n, "k": k,
           "cublas_linear_tbs": rate(lambda: [torch.nn.functional.linear(x, w, b) for w, b in pairs]),
           "cublas_mv_tbs": rate(lambda: [torch.mv(w, x[0]) for w, _ in pairs]),
           "engine_tbs": rate(lambda: [M.linear(x, w, b) for w, b in pairs]), "engine_tile": M.tile_for(n, k)}
    best: tuple[float, tuple, float] | None = None
    for config in configs:
        block_n, block_k, warps, stages = config
        if k % block_k:
            continue
        try:
            got = gemv(x[0], ws[0], bs[0], y[0], *config)
            err = (got.float() - reference[0]).abs().max().item()
            tbs = rate(lambda: [gemv(x[0], w, b, y[0], *config) for w, b in pairs])  # noqa: B023 (called at once)
        except Exception as exc:  # a tile shape the compiler refuses (registers): skip it
            print(f"  {name} {block_n}x{block_k} w{warps} s{stages}: {type(exc).__name__}", flush=True)
            continue
        if best is None or tbs > best[0]:
            best = (tbs, config, err)
    if best is not None:
        row.update(triton_best_tbs=best[0], triton_best_tile=best[1], triton_max_err=round(best[2], 4))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--quick", action="store_true", help="a few tile shapes only")
    ap.add_argument("--out", default=os.environ.get("OUT", "runs/gemv"))
    args = ap.parse_args(argv)
    configs = list(itertools.product((1, 2, 4, 8, 16), (512, 1024, 2048), (4, 8), (1, 3)))
    if args.quick:
        configs = [(4, 1024, 4, 1), (4, 1024, 8, 1), (16, 1024, 8, 3)]
    rows = []
    for name, (n, k, has_bias) in SHAPES.items():
        rows.append(one_shape(name, n, k, has_bias, args.layers, configs))
        print(json.dumps(rows[-1]), flush=True)
        torch.cuda.empty_cache()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_gemv.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                                     "triton": triton.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
