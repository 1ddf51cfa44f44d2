"""Can a GPT-J block's MLP tail run beside its attention? One decode layer's work at a large batch, timed with
the MLP's activation and output projection in line after the attention, or on a second stream beside it
(GPT-J's attention and MLP read the same normed input, so they are independent until the residual add), with
and without capping the matrix product's multiprocessors (``torch._C._set_sm_carveout_experimental``).

The attention reads memory (~0.9 GB a layer at 512 rows), the projection is arithmetic (~70 GFLOP): run side
by side they could share the step. Rows and lengths as bench_attention.py's realistic workload.

    python benchmarks/bench_overlap.py [--rows 512] --out runs/overlap        # GPU, ~1 minute
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
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"rows": batch, "device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": rows}
    (out / "overlap.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
