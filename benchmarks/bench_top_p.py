"""The fused top-p sampling kernel alone: microseconds per call by search fan-out, rows, vocabulary and dtype.

Each call samples every row of a [rows, vocab] logits tensor (temperature 0.8, top-p 0.95) as one decode step
does; logits are random, scaled as a language model's (a few tokens far above the rest), different per row.
Times one CUDA graph of the call (median of replays). ``--before FILE``: also a copy of an earlier version of
top_p_kernel.py (its ``sample_top_p``), and whether it draws the same tokens.

    python benchmarks/bench_top_p.py [--rows 512,64,1] [--fans 2,4,8,16] [--before old_top_p.py]   # GPU
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cuda_graphs import graph_of, replay_times_ms  # noqa: E402

from evalsuite.engine.sampling import row_seeds  # noqa: E402
from evalsuite.engine.top_p_kernel import sample_top_p  # noqa: E402


def logits_like_a_model(rows: int, vocab: int, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(rows * 7 + vocab)
    base = torch.randn(rows, vocab, device="cuda", generator=g) * 2.5
    peaks = torch.randint(0, vocab, (rows, 8), device="cuda", generator=g)
    base.scatter_add_(1, peaks, torch.rand(rows, 8, device="cuda", generator=g) * 12)
    return base.to(dtype)


def time_us(fn, reps: int = 50) -> float:
    graph = graph_of(fn)
    times = sorted(replay_times_ms(graph, reps))
    return round(1000 * times[len(times) // 2], 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default="512,64,1")
    ap.add_argument("--fans", default="2,4,8,16")
    ap.add_argument("--vocabs", default="50400,49152")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--before", default="", help="an earlier top_p_kernel.py to time beside")
    ap.add_argument("--out", default=os.environ.get("OUT", "runs/top_p"))
    args = ap.parse_args(argv)
    before = None
    if args.before:
        spec = importlib.util.spec_from_file_location("top_p_before", args.before)
        before = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before)
    results = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for vocab in (int(v) for v in args.vocabs.split(",")):
            for rows in (int(r) for r in args.rows.split(",")):
                logits = logits_like_a_model(rows, vocab, dtype)
                seeds = row_seeds(3, "HumanEval/0", list(range(rows))).cuda()
                steps = torch.arange(rows, device="cuda", dtype=torch.int64) * 5
                entry = {"dtype": dtype_name, "vocab": vocab, "rows": rows, "us": {}}
                tokens = {}
                for fan in (int(f) for f in args.fans.split(",")):
                    tokens[fan] = sample_top_p(logits, seeds, steps, 0.8, 0.95, fan=fan)
                    entry["us"][f"fan {fan}"] = time_us(lambda: sample_top_p(logits, seeds, steps, 0.8, 0.95, fan=fan))
                if before is not None:
                    old = before.sample_top_p(logits, seeds, steps, 0.8, 0.95)
                    entry["us"]["before"] = time_us(lambda: before.sample_top_p(logits, seeds, steps, 0.8, 0.95))
                    entry["same_tokens_as_before"] = {f"fan {f}": bool(torch.equal(t, old)) for f, t in tokens.items()}
                results.append(entry)
                print(json.dumps(entry), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "top_p.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
