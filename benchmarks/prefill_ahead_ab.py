"""A/B of prefills taking the next waiting prompts along (issue 31): bench_generate.py's realistic GPT-J workload,
several runs in one process, each with ``_Loop._take_ahead`` on ("ahead") or off ("plain"), then batch 1 at 72
and 264 tokens. Prints each run's tok/s, set-up, prefill seconds and forwards.

    python benchmarks/prefill_ahead_ab.py [--runs plain,ahead,plain,ahead] [--out runs/prefill_ahead]   # GPU, ~2.5 min
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import evalsuite.engine.engine as engine_module  # noqa: E402
from bench_generate import (SHAPES, build_model, engine_bs1_ms, engine_warm_up, load_prompt_tokens,  # noqa: E402
                            prompt_subset, realistic_samples, timed_realistic_run)
from evalsuite.engine import Engine  # noqa: E402
from evalsuite.records import SamplingParams  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default="plain,ahead,plain,ahead")
    ap.add_argument("--out", default=os.environ.get("OUT", "runs/prefill_ahead"))
    args = ap.parse_args(argv)
    prompt_tokens, eos, _ = load_prompt_tokens(SHAPES["gptj-6b"][1]["vocab_size"], False)
    tasks = prompt_subset(prompt_tokens, 16)
    model = build_model("gptj-6b", eos, "cuda", torch.bfloat16, False)
    engine = Engine(model, decode_tokens=json.dumps, eos_token_ids=[eos])
    params = SamplingParams(n=200, temperature=0.8, top_p=0.95, max_new_tokens=512, seed=0)
    requests, lengths = realistic_samples(tasks, 200)
    prompts = [prompt_tokens[t] for t in tasks]
    engine_warm_up(engine, requests, prompts, params, forced_lengths=lambda t, i: lengths[(t, i)])
    take_ahead = engine_module._Loop._take_ahead
    runs = []
    try:
        for variant in args.runs.split(","):
            engine_module._Loop._take_ahead = take_ahead if variant == "ahead" else (lambda self, prompts: None)
            tokens, wall = timed_realistic_run(engine, requests, prompts, params, lengths)
            stats = engine.stats
            runs.append(dict(variant=variant, tokens_per_s=round(tokens / wall), wall_s=round(wall, 2),
                             setup_s=round(stats.capture_s, 3), eager_warm_up_s=stats.warm_up_s,
                             prefill_s=round(stats.prefill_s, 3), prefill_forwards=stats.prefill_forwards,
                             waiting_on_device_s=round(stats.wait_s, 2), steps=stats.steps))
            print(runs[-1], flush=True)
    finally:
        engine_module._Loop._take_ahead = take_ahead
    prompt = prompt_tokens[tasks[0]]
    batch_1 = {long: round(engine_bs1_ms(engine, prompt, long=long), 4) for long in (72, 264)}
    print("batch 1 ms/token:", batch_1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "prefill_ahead_ab.json").write_text(json.dumps({"runs": runs, "batch_1_ms": batch_1,
                                                           "device": torch.cuda.get_device_name()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
