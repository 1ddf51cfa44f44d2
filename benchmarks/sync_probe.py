"""Where the engine's host waits for the device: one generate call on a small random GPT-J-shaped model under
``torch.cuda.set_sync_debug_mode("warn")``, each synchronizing call site counted (CUDA only).

A wait outside the decode loop's own read-back (``_Loop._read``) keeps the host from queueing the next work
while the device drains: in the realistic workload, prompts admitted mid-run waited for the decode steps in
flight before their forward was even queued.

    python benchmarks/sync_probe.py [--layers 4] [--prompts 4] [--n 16]
"""

from __future__ import annotations

import argparse
import collections
import sys
import traceback
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evalsuite.engine import Engine  # noqa: E402
from evalsuite.records import GenerationRequest, SamplingParams  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--n", type=int, default=16)
    args = ap.parse_args()
    from transformers import AutoModelForCausalLM, GPTJConfig

    config = GPTJConfig(n_embd=1024, n_layer=args.layers, n_head=16, rotary_dim=64, vocab_size=50400,
                        n_positions=2048, bos_token_id=0, eos_token_id=1)
    model = AutoModelForCausalLM.from_config(config).to("cuda", torch.bfloat16).eval()
    prompts = [[2 + (7 * i + j) % 50000 for j in range(100 + 17 * i)] for i in range(args.prompts)]
    requests = [GenerationRequest(task_id=f"t/{i}", prompt="", sample_indices=tuple(range(args.n)))
                for i in range(args.prompts)]
    params = SamplingParams(n=args.n, temperature=0.8, top_p=0.95, max_new_tokens=64, seed=0)
    engine = Engine(model, decode_tokens=lambda ids: "", eos_token_ids=[1])
    list(engine.generate(requests[:1], params, prompt_ids=prompts[:1]))  # compile and warm up outside the probe
    sites: collections.Counter[str] = collections.Counter()

    def record(message, category, filename, lineno, file=None, line=None):
        frames = [f for f in traceback.extract_stack()[:-1]
                  if "/evalsuite/" in f.filename or "transformers" in f.filename]
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in frames[-3:][::-1])
        sites[where or f"{filename}:{lineno}"] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            list(engine.generate(requests, params, prompt_ids=prompts))
        finally:
            torch.cuda.set_sync_debug_mode("default")
    print(f"{sum(sites.values())} synchronizing calls, {engine.stats.steps} decode steps, "
          f"{engine.stats.prefill_forwards} prefill forwards")
    for site, count in sites.most_common():
        print(f"{count:6d}  {site}")


if __name__ == "__main__":
    main()
