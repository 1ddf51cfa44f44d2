"""A machine's first run: the engine's set-up on an empty Triton cache, with and without compile-ahead.

Every fresh GPU machine and CI runner starts with an empty Triton cache, so its first run compiles the engine's
kernels; that is the run the GPU acceptance's SmolLM2 rows time (issue 31). Each run here is a fresh process
whose ``TRITON_CACHE_DIR`` is empty (``cold``) or was filled by the same variant's previous run (``warm``).
Variant ``off`` sets a Triton ``jit_cache_hook`` of its own, which turns the engine's compile-ahead off
(compile_ahead.py leaves another's hook alone), so the two variants compile as the engine did before and after
it. Each run times one ``generate`` call of each of two workloads on the SmolLM2-135M shape (random weights,
HumanEval prompts in the benchmark tokenizer, sample lengths as the realistic workload's):
  greedy  float32, 164 prompts, one sample each (the acceptance's fidelity case)
  sampled bfloat16, 20 prompts x 20 samples, T=0.8, top-p 0.95 (its sampled case)

    python benchmarks/first_run.py --rounds 2 --out first_run.json

Variants alternate within a round; Triton's library hash starts on a thread before the model is built, as
loading does. Per run: wall s, tok/s, set-up s (CUDA graphs, with the eager warm-up and, when on, the kernels
compiled ahead), prefill s, and a digest of the completions (equal across variants and runs when compile-ahead
keeps every token).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path


def child() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch
    from bench_generate import build_model, load_prompt_tokens, prompt_subset, realistic_samples, timed_realistic_run

    from evalsuite.engine import Engine
    from evalsuite.engine.kernels import hash_triton_in_background
    from evalsuite.records import SamplingParams

    if os.environ["FIRST_RUN_VARIANT"] == "off":
        from triton import knobs

        knobs.runtime.jit_cache_hook = lambda **_: None
    prompt_tokens, eos, _ = load_prompt_tokens(49152, False)
    cases = {"greedy": (torch.float32, prompt_subset(prompt_tokens, len(prompt_tokens)), 1,
                        SamplingParams(max_new_tokens=512)),
             "sampled": (torch.bfloat16, prompt_subset(prompt_tokens, 20), 20,
                         SamplingParams(n=20, temperature=0.8, top_p=0.95, max_new_tokens=512))}
    for case, (dtype, tasks, n, params) in cases.items():
        hashing = hash_triton_in_background()
        model = build_model("smollm2-135m", eos, "cuda", dtype, False)
        if hashing:
            hashing.join()
        engine = Engine(model, decode_tokens=json.dumps, eos_token_ids=[eos])
        requests, lengths = realistic_samples(tasks, n)
        done: list = []
        tokens, wall = timed_realistic_run(engine, requests, [prompt_tokens[t] for t in tasks], params, lengths, done)
        texts = sorted(f"{c.task_id}#{c.sample_index}:{c.text}" for c in done)
        stats = engine.stats
        ahead = getattr(stats, "compile_ahead", None)
        print(json.dumps({"case": case, "tok_s": round(tokens / wall), "wall_s": round(wall, 3),
                          "setup_s": round(stats.capture_s, 3), "warm_up_s": stats.warm_up_s,
                          "compile_ahead": asdict(ahead) if ahead else None, "prefill_s": round(stats.prefill_s, 3),
                          "digest": hashlib.sha256("\n".join(texts).encode()).hexdigest()[:12]}), flush=True)
        del engine, model
        torch.cuda.empty_cache()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="ahead,off", help="comma-separated: ahead (the engine's default), off")
    parser.add_argument("--rounds", type=int, default=2, help="cold runs per variant (then one warm run each)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return 0
    root = Path(tempfile.mkdtemp(prefix="first-run-"))
    variants = args.variants.split(",")
    plan = [(r, variant, "cold") for r in range(args.rounds) for variant in variants]
    plan += [(args.rounds, variant, "warm") for variant in variants]
    rows, last_cache = [], {}
    for index, (round_no, variant, kind) in enumerate(plan):
        cache = last_cache[variant] if kind == "warm" else root / f"cache{index}"
        last_cache[variant] = cache
        env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "FIRST_RUN_VARIANT": variant}
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child"], env=env,
                              capture_output=True, text=True, timeout=300)
        process_s = round(time.perf_counter() - started, 2)
        if done.returncode:
            print(f"{variant} {kind}: exit {done.returncode}\n{done.stderr[-2000:]}", flush=True)
            continue
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                row = {"variant": variant, "kind": kind, "round": round_no, "process_s": process_s,
                       **json.loads(line)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
