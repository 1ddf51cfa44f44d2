"""Prefill seconds for HumanEval's 164 prompts by the most tokens one packed forward may take.

A small model's prefill is host-bound (~40 ms of Python per forward of any length), so fewer, longer packs win
until the dense mask's quadratic cost takes over. Runs the engine on a random model of a bench_generate.py
shape, greedy, 2 new tokens, 3 times per pack size, after one untimed call.

    python benchmarks/bench_prefill_packs.py [--model smollm2-135m] [--dtype float32]    # GPU, ~1 minute
    python benchmarks/bench_prefill_packs.py --tiny                                     # CPU: checks the script
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

from bench_generate import SHAPES, build_model, load_prompt_tokens, prompt_subset, sync  # noqa: E402

import evalsuite.engine.engine as engine_module  # noqa: E402
from evalsuite.engine import Engine  # noqa: E402
from evalsuite.records import GenerationRequest, SamplingParams  # noqa: E402

PACK_TOKENS = (8192, 4096, 2048, 1024, 512, 256)


def humaneval_prefill(model: str, dtype: str, tiny: bool):
    """The engine on a random model of ``model``'s shape, and the work whose prefill is measured: HumanEval's
    prompts (16 on the CPU with ``tiny``), each greedy for 2 new tokens. Returns (engine, requests, prompt ids,
    params, device)."""
    device = "cuda" if torch.cuda.is_available() and not tiny else "cpu"
    prompt_tokens, eos, _ = load_prompt_tokens(SHAPES[model][1]["vocab_size"], tiny)
    tasks = prompt_subset(prompt_tokens, 16 if tiny else len(prompt_tokens))  # all of them, in task order
    prompts = [prompt_tokens[t] for t in tasks]
    engine = Engine(build_model(model, eos, device, getattr(torch, dtype), tiny), decode_tokens=json.dumps,
                    eos_token_ids=[eos])
    requests = [GenerationRequest(task_id=t, prompt="", sample_indices=(0,)) for t in tasks]
    return engine, requests, prompts, SamplingParams(n=1, temperature=0.0, max_new_tokens=2, seed=0), device


def prefill_arguments(description: str, out: str) -> argparse.ArgumentParser:
    """The arguments of the scripts that study HumanEval's prefill on one shape (this one, profile_prefill.py)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", default=os.environ.get("OUT", out))
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model of the shape and 16 prompts, on the CPU")
    return ap


def main(argv=None) -> int:
    args = prefill_arguments(__doc__.split("\n")[0], "runs/bench_prefill_packs").parse_args(argv)
    engine, requests, prompts, params, device = humaneval_prefill(args.model, args.dtype, args.tiny)

    def prefill_s() -> tuple[float, int]:
        sync()
        list(engine.generate(requests, params, prompt_ids=prompts, ignore_eos=True))
        sync()
        return engine.stats.prefill_s, engine.stats.prefill_forwards

    prefill_s()  # untimed: kernels and allocator
    rows = []
    for pack in PACK_TOKENS:
        engine_module.MAX_PACK_TOKENS = pack
        runs = [prefill_s() for _ in range(3)]
        rows.append({"max_pack_tokens": pack, "forwards": runs[0][1], "prefill_s": [round(s, 3) for s, _ in runs]})
        print(f"pack {pack:5d}: {runs[0][1]:3d} forwards, prefill s {rows[-1]['prefill_s']}", flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench_prefill_packs.json").write_text(json.dumps(
        {"model": args.model, "dtype": args.dtype, "device": device, "prompts": len(prompts),
         "tokens": sum(map(len, prompts)), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
