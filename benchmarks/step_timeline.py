"""How a realistic run's decode time splits by batch width: the full phase against the ramp and the drain.

Runs bench_generate.py's realistic workload (GPT-J-6B shape by default) after its untimed warm-up, with every
decode step's host time and width recorded (the loop reads tokens a step late, so the host's time between two
step launches follows the device's step time; a step's width is its graph bucket, the busy rows rounded up).
Prints steps, seconds and ms/step per range of widths, and the same as JSON under --out.

    python benchmarks/step_timeline.py [--model gptj-6b] [--max-rows 512[,768,...]]   # GPU, ~1 minute a run
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_generate import (SHAPES, build_model, engine_warm_up, load_prompt_tokens,  # noqa: E402
                            one_shape_arguments, prompt_subset, realistic_samples, timed_realistic_run)
from evalsuite.engine import Engine, EngineOptions  # noqa: E402
from evalsuite.engine.runner import DecodeRunner  # noqa: E402
from evalsuite.records import SamplingParams  # noqa: E402


@dataclass
class StepRange:
    low: int
    high: int
    steps: int = 0
    seconds: float = 0.0
    row_steps: int = 0


def ranges_of(widths: list[int], gaps: list[float], edges: list[int]) -> list[StepRange]:
    out = [StepRange(lo, hi) for lo, hi in zip(edges, edges[1:])]
    for rows, gap in zip(widths, gaps):
        bucket = next(r for r in out if r.low <= rows < r.high)
        bucket.steps += 1
        bucket.seconds += gap
        bucket.row_steps += rows
    return out


def main(argv=None) -> int:
    ap = one_shape_arguments(__doc__.split("\n")[0], "runs/step_timeline")
    ap.add_argument("--max-rows", default="0", help="the engine's largest decode batch; comma-separated: one run "
                                                    "each, one model (0: the engine's default)")
    ap.add_argument("--balance", default="on", help="long rows' attention in parts (EngineOptions."
                                                     "balance_attention): on, off, or both (one run each)")
    args = ap.parse_args(argv)
    prompt_tokens, eos, _ = load_prompt_tokens(SHAPES[args.model][1]["vocab_size"], False)
    tasks = prompt_subset(prompt_tokens, args.prompts)
    model = build_model(args.model, eos, "cuda", torch.bfloat16, False)
    params = SamplingParams(n=args.n, temperature=0.8, top_p=0.95, max_new_tokens=512, seed=0)
    requests, lengths = realistic_samples(tasks, args.n)
    prompts = [prompt_tokens[t] for t in tasks]
    results = []
    balances = {"on": [True], "off": [False], "both": [True, False]}[args.balance]
    for max_rows in (int(v) for v in args.max_rows.split(",")):
        for balance in balances:
            print(f"max_rows {max_rows or 'default'}, balance_attention {balance}", flush=True)
            options = EngineOptions(balance_attention=balance, **({"max_rows": max_rows} if max_rows else {}))
            engine = Engine(model, decode_tokens=json.dumps, eos_token_ids=[eos], options=options)
            results.append(timeline(engine, requests, prompts, params, lengths)
                           | {"model": args.model, "max_rows": options.max_rows, "balance_attention": balance})
            engine.close()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"step_timeline_{args.model}.json").write_text(json.dumps(results if len(results) > 1 else results[0]))
    return 0


def timeline(engine, requests, prompts, params, lengths) -> dict:
    """One timed realistic run after its warm-up, every decode step's host time and width recorded; printed as a
    table by range of widths."""
    engine_warm_up(engine, requests, prompts, params, forced_lengths=lambda t, i: lengths[(t, i)])
    marks: list[float] = []
    widths: list[int] = []
    original = DecodeRunner.step

    def step(self, batch):
        marks.append(time.perf_counter())
        widths.append(batch)
        return original(self, batch)

    DecodeRunner.step = step
    try:
        tokens, wall = timed_realistic_run(engine, requests, prompts, params, lengths)
    finally:
        DecodeRunner.step = original
    gaps = [b - a for a, b in zip(marks, marks[1:])] + [0.0]
    stats = engine.stats
    top = max(widths, default=1)
    edges = [0, 64, 128, 256, 384, 448] + [e for e in (512, 640, 768, 896) if e < top] + [10**6]
    table = ranges_of(widths, gaps, edges)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": stats.rows,
              "tokens": tokens, "wall_s": round(wall, 2), "tokens_per_s": round(tokens / wall, 1),
              "steps": len(widths), "setup_s": stats.capture_s, "warm_up_s": stats.warm_up_s,
              "prefill_s": stats.prefill_s, "mean_batch": round(sum(widths) / max(1, len(widths)), 1),
              "by_bucket": [vars(r) | {"ms_per_step": round(1000 * r.seconds / r.steps, 2) if r.steps else None}
                            for r in table],
              "widths": widths, "gaps_ms": [round(1000 * g, 3) for g in gaps]}
    result["capture_s_by_bucket"] = stats.capture_s_by_bucket
    slowest = sorted(stats.capture_s_by_bucket.items(), key=lambda kv: -kv[1])[:3]
    print(f"{stats.rows} rows: {tokens} tokens in {wall:.2f} s ({tokens / wall:,.0f} tok/s), {len(widths)} steps, "
          f"set-up {stats.capture_s:.2f} s (warm-up {stats.warm_up_s:.2f}; slowest captures {slowest}), "
          f"prefill {stats.prefill_s:.2f} s")
    print("| bucket rows | steps | s | ms/step | row-steps |")
    for r in table:
        ms = f"{1000 * r.seconds / r.steps:.2f}" if r.steps else "-"
        print(f"| {r.low}-{r.high - 1} | {r.steps} | {r.seconds:.2f} | {ms} | {r.row_steps} |")
    return result


if __name__ == "__main__":
    sys.exit(main())
