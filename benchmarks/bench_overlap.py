"""Can a GPT-J block's MLP tail run beside its attention? One decode layer's work at a large batch, timed with
the MLP's activation and output projection in line after the attention, or on a second stream beside it
(GPT-J's attention and MLP read the same normed input, so they are independent until the residual add), with
and without capping the matrix product's multiprocessors (``torch._C._set_sm_carveout_experimental``).

The attention reads memory (~0.9 GB a layer at 512 rows), the projection is arithmetic (~70 GFLOP): run side
by side they could share the step. Rows and lengths as bench_attention.py's realistic workload.

``--nano`` also times the whole layer (the fused q, k, v, fc_in product included) two ways: in line at all
rows, and as two nano-batches of half the rows whose products run on a second stream beside the other half's
attention (the steady state of a pipeline across layers: A's products beside B's attention, then B's products
beside A's attention). Each half's products read all the weights again: the question is whether the overlap
wins more than that costs.

    python benchmarks/bench_overlap.py [--rows 512] [--nano] --out runs/overlap        # GPU, ~1-2 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_attention as BA  # noqa: E402

from evalsuite.engine import kernels as K  # noqa: E402
from evalsuite.engine.fused_ops import add3, gelu_new  # noqa: E402

HIDDEN, INNER = 4096, 16384


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--nano", action="store_true", help="also the whole layer in line against two nano-batches")
    ap.add_argument("--out", default=os.environ.get("OUT", "runs/overlap"))
    args = ap.parse_args(argv)
    batch, dev, bf16 = args.rows, "cuda", torch.bfloat16
    p_slot, p_len, g_len = BA.workload(batch)
    i32 = dict(dtype=torch.int32, device=dev)
    p_slot_t, p_len_t, g_len_t = (torch.tensor(v, **i32) for v in (p_slot, p_len, g_len))
    slots_g = batch + 8
    g_slot_t = torch.randperm(slots_g, device=dev)[:batch].to(torch.int32)
    caches = BA.make_layers(args.layers, 3, 400, slots_g, 512)
    tables = K.PositionTables()
    groups = K.prefix_groups(p_slot_t, p_len_t, 3)
    order = K.longest_rows_first(p_len_t, g_len_t, True)
    fused = torch.randn(batch, 3 * HIDDEN + INNER, device=dev, dtype=bf16)
    x = torch.randn(batch, HIDDEN, device=dev, dtype=bf16)
    weights = [(torch.randn(HIDDEN, INNER, device=dev, dtype=bf16) * 0.01, torch.randn(HIDDEN, device=dev, dtype=bf16),
                torch.randn(HIDDEN, HIDDEN, device=dev, dtype=bf16) * 0.01) for _ in range(args.layers)]
    side = torch.cuda.Stream()

    def attention(index):
        kp, vp, kg, vg = caches[index]
        q = fused[:, :HIDDEN].reshape(batch, BA.HEADS, BA.D)
        out = K.decode_attention_triton(q, kp, vp, kg, vg, p_slot_t, p_len_t, g_slot_t, g_len_t, BA.SPEC, tables,
                                        shared_prefix=200, groups=groups, row_order=order)
        return torch.nn.functional.linear(out.reshape(batch, -1), weights[index][2])

    def mlp(index):
        w, b, _ = weights[index]
        return torch.nn.functional.linear(gelu_new(fused[:, 3 * HIDDEN:]), w, b)

    def in_line(index):
        return add3(attention(index), mlp(index), x)

    def beside(index):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            m = mlp(index)
        a = attention(index)
        torch.cuda.current_stream().wait_stream(side)
        return add3(a, m, x)

    def per_layer(fn):
        def run(*_cache):
            run.index = (getattr(run, "index", -1) + 1) % args.layers
            return fn(run.index)
        return run

    def timed(name, fn, carveout=0):
        torch._C._set_sm_carveout_experimental(carveout or None)
        try:
            us = BA.time_graph(per_layer(fn), caches, reps=30)
        finally:
            torch._C._set_sm_carveout_experimental(None)
        row = {"variant": name, "carveout_sms": carveout, "us_per_layer": round(us, 1)}
        print(json.dumps(row), flush=True)
        return row

    warm_until = time.perf_counter() + 2.0  # clocks up (bench_attention.py: 0.24 s of replays was not enough)
    while time.perf_counter() < warm_until:
        BA.time_graph(per_layer(in_line), caches, reps=30)
    rows = [timed("attention alone", attention), timed("mlp tail alone", mlp),
            timed("in line", in_line), timed("beside", beside)]
    for carve in (16, 32, 48, 64):
        rows.append(timed("mlp tail alone", mlp, carve))
        rows.append(timed("beside", beside, carve))
    if args.nano:
        rows += nano_batches(args.layers, batch, x, weights, caches, timed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"rows": batch, "device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": rows}
    (out / "overlap.json").write_text(json.dumps(result, indent=1))
    return 0


def nano_batches(layers: int, batch: int, x, weights, caches, timed) -> list[dict]:
    """The whole layer in line against two half-batches whose products run beside each other's attention."""
    dev, bf16 = "cuda", torch.bfloat16
    w_in = [torch.randn(3 * HIDDEN + INNER, HIDDEN, device=dev, dtype=bf16) * 0.01 for _ in range(layers)]
    fused = torch.randn(batch, 3 * HIDDEN + INNER, device=dev, dtype=bf16)
    mlp_out = torch.randn(batch, HIDDEN, device=dev, dtype=bf16)
    halves = [slice(0, batch // 2), slice(batch // 2, batch)]
    p_slot, p_len, g_len = BA.workload(batch)
    i32 = dict(dtype=torch.int32, device=dev)
    g_slot = torch.randperm(batch + 8, device=dev)[:batch].to(torch.int32)
    meta = []  # per row range: the attention's row arguments
    for rows in [slice(0, batch), *halves]:
        ps, pl, gl = (torch.tensor(v[rows], **i32) for v in (p_slot, p_len, g_len))
        meta.append((rows, ps, pl, g_slot[rows].contiguous(), gl, K.prefix_groups(ps, pl, 3),
                     K.longest_rows_first(pl, gl, True)))
    tables = K.PositionTables()
    side = torch.cuda.Stream()

    def products(index, rows):
        """q, k, v and fc_in in one product, gelu, fc_out: the arithmetic of ``rows``."""
        torch.mm(x[rows], w_in[index].t(), out=fused[rows])
        w, b, _ = weights[index]
        mlp_out[rows] = torch.nn.functional.linear(gelu_new(fused[rows, 3 * HIDDEN:]), w, b)

    def attention(index, part):
        rows, ps, pl, gs, gl, groups, order = meta[part]
        kp, vp, kg, vg = caches[index]
        q = fused[rows, :HIDDEN].reshape(-1, BA.HEADS, BA.D)
        out = K.decode_attention_triton(q, kp, vp, kg, vg, ps, pl, gs, gl, BA.SPEC, tables, shared_prefix=200,
                                        groups=groups, row_order=order)
        return torch.nn.functional.linear(out.reshape(q.shape[0], -1), weights[index][2])

    def whole_in_line(index):
        products(index, slice(0, batch))
        return add3(attention(index, 0), mlp_out, x)

    def nano(index):
        done = []
        for part, other in ((2, halves[0]), (1, halves[1])):  # B's attention beside A's products, then A's beside B's
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                products(index, other)
            done.append(attention(index, part))
            torch.cuda.current_stream().wait_stream(side)
        return add3(torch.cat(done[::-1]), mlp_out, x)

    out = [timed("whole layer in line", whole_in_line)]
    for carve in (0, 16, 32, 48, 66):
        out.append(timed("whole layer, nano-batches beside", nano, carve))
    return out


if __name__ == "__main__":
    sys.exit(main())
