"""The hf backend against plain ``model.generate`` on the same model, prompts and batch (issue 4, acceptance 4).

Builds a random-weight GPT-J-6B-shaped checkpoint (``GPTJConfig()`` defaults, bf16, initialised on the GPU)
with a byte-level BPE tokenizer trained on HumanEval code, saves it with ``save_pretrained`` into a temp
directory, loads it by path through ``load_generator`` (so the registry/tokenizer fixes are in the path), then
times, on the same left-padded batch of HumanEval prompts, greedy decoding of --max-new-tokens tokens:

* ``plain generate``: ``model.generate(do_sample=False, min_new_tokens=max_new_tokens)``, one call;
* ``evalsuite hf, engine=transformers``: ``HFGenerator.generate`` on plain generate (stop tracking, vocab mask,
  decode, Completion records) with no stop sequences, so both do the same number of decode steps unless a
  row emits EOS (reported);
* ``evalsuite hf, engine=auto``: the same call where the fast engine (evalsuite.engine) applies (CUDA).

Metric as in docs ANCHORS: ms per generated token = wall / (batch x new tokens); tokens/s = generated / wall.

    python benchmarks/bench_hf_backend.py --out hf_backend.json                 # GPU: GPT-J-6B shape
    python benchmarks/bench_hf_backend.py --tiny --out /tmp/hf_backend_tiny.json  # CPU smoke test, seconds
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tiny_models: the HumanEval-trained tokenizer builders


def build_checkpoint(directory: Path, tiny: bool, device: str, dtype: str, vocab: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, GPTJConfig

    from tiny_models import gpt2_style_tokenizer

    started = time.perf_counter()
    tokenizer = gpt2_style_tokenizer(vocab)
    tokenizer.save_pretrained(directory)
    config = GPTJConfig(n_embd=64, n_layer=2, n_head=4, rotary_dim=8) if tiny else GPTJConfig()
    config.bos_token_id = config.eos_token_id = tokenizer.eos_token_id
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    built = time.perf_counter() - started
    model.save_pretrained(directory, max_shard_size="5GB")
    params = sum(p.numel() for p in model.parameters())
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return {"parameters": params, "tokenizer_vocab": len(tokenizer), "model_vocab": config.vocab_size,
            "layers": config.n_layer, "hidden": config.n_embd, "build_s": round(built, 2),
            "save_s": round(time.perf_counter() - started - built, 2)}


def humaneval_prompts(count: int) -> list[tuple[str, str]]:
    from tiny_models import humaneval_prompts as prompts

    rows = list(prompts())
    return [rows[i % len(rows)] for i in range(count)]


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def peak_gib(device: str) -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.startswith("cuda") else None


def reset_peak(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()


def time_plain_generate(generator, prompts, max_new: int, device: str) -> dict:
    """The baseline: one model.generate call on the same left-padded batch the backend builds."""
    import torch

    codec = generator.codec
    encoded = [codec.encode(prompt) for _, prompt in prompts]
    length = max(map(len, encoded))
    input_ids = torch.full((len(encoded), length), codec.pad_id, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for i, ids in enumerate(encoded):
        input_ids[i, length - len(ids):] = torch.tensor(ids)
        mask[i, length - len(ids):] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    reset_peak(device)
    sync(device)
    started = time.perf_counter()
    with torch.inference_mode():
        out = generator.model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=max_new,
                                       min_new_tokens=max_new, do_sample=False, pad_token_id=codec.pad_id)
    sync(device)
    wall = time.perf_counter() - started
    generated = (out.shape[1] - length) * len(encoded)
    return {"method": "plain generate", "wall_s": wall, "new_tokens": generated, "eos_rows": 0,
            "prompt_tokens_max": length, "peak_gib": peak_gib(device)}


def time_backend(generator, prompts, max_new: int, device: str) -> dict:
    from evalsuite.records import GenerationRequest, SamplingParams

    engine = generator.options.hf.engine

    requests = [GenerationRequest(task_id=f"{tid}#{i}", prompt=prompt, sample_indices=(0,))
                for i, (tid, prompt) in enumerate(prompts)]
    reset_peak(device)
    sync(device)
    started = time.perf_counter()
    completions = list(generator.generate(requests, SamplingParams(max_new_tokens=max_new)))
    sync(device)
    wall = time.perf_counter() - started
    return {"method": f"evalsuite hf, engine={engine}", "wall_s": wall, "new_tokens": sum(c.num_tokens for c in completions),
            "eos_rows": sum(c.finish_reason == "eos" for c in completions), "peak_gib": peak_gib(device)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="2-layer GPT-J on CPU: a smoke test of this script")
    parser.add_argument("--out", required=True, help="write the results as JSON here")
    parser.add_argument("--batch-size", type=int, default=None, help="default: 32 (tiny: 4)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: 100 (tiny: 16)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per method (the best is reported)")
    parser.add_argument("--vocab", type=int, default=4000, help="BPE vocabulary trained on HumanEval code")
    parser.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    parser.add_argument("--dir", default=None, help="keep the checkpoint here instead of a temp directory")
    args = parser.parse_args(argv)

    import torch

    from evalsuite.generation import GenerationOptions, load_generator

    from evalsuite.models.options import LoadingOptions

    from evalsuite.generation.options import HFOptions

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = "bfloat16" if device.startswith("cuda") else "float32"
    batch = args.batch_size or (4 if args.tiny else 32)
    max_new = args.max_new_tokens or (16 if args.tiny else 100)
    with tempfile.TemporaryDirectory(prefix="bench-gptj-") as tmp:
        directory = Path(args.dir or tmp)
        if not (directory / "config.json").exists():
            checkpoint = build_checkpoint(directory, args.tiny, device, dtype, args.vocab)
        else:
            checkpoint = {"reused": str(directory)}
        started = time.perf_counter()
        generator = load_generator(str(directory), GenerationOptions(loading=LoadingOptions(device=device, dtype=dtype), hf=HFOptions(batch_size=batch, engine="transformers")))
        checkpoint["load_s"] = round(time.perf_counter() - started, 2)
        prompts = humaneval_prompts(batch)
        rows = []
        for engine in ("transformers", "auto"):  # our batching over plain generate; then the fast engine
            generator.options = replace(generator.options, engine=engine)
            for warm_up in (time_plain_generate, time_backend):  # kernels, allocator, CPU thread pools
                warm_up(generator, prompts, 4, device)
            if engine == "auto" and generator.describe()["engine"] == "transformers":
                print("engine=auto: the fast engine does not apply here (plain generate ran); row skipped")
                continue
            for measure in ((time_plain_generate, time_backend) if engine == "transformers" else (time_backend,)):
                best = min((measure(generator, prompts, max_new, device) for _ in range(args.repeats)),
                           key=lambda r: r["wall_s"])
                best["tokens_per_s"] = best["new_tokens"] / best["wall_s"]
                best["ms_per_token"] = 1000 * best["wall_s"] / best["new_tokens"]
                rows.append(best)
        description = generator.describe()
        generator.close()

    result = {
        "benchmark": "bench_hf_backend", "tiny": args.tiny, "device": device,
        "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor(),
        "dtype": dtype, "batch_size": batch, "max_new_tokens": max_new, "checkpoint": checkpoint,
        "tokenizer_fixes": description["tokenizer_fixes"], "results": rows,
        "software": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": __import__("transformers").__version__},
    }
    print(f"GPT-J {'tiny' if args.tiny else '6B'} shape, {device} {dtype}, batch {batch}, {max_new} new tokens, "
          f"prompt tokens up to {rows[0]['prompt_tokens_max']}")
    print(f"{'method':<34} {'wall s':>8} {'new tokens':>10} {'tokens/s':>10} {'ms/token':>9} {'EOS rows':>8} "
          f"{'peak GiB':>8}")
    for row in rows:
        print(f"{row['method']:<34} {row['wall_s']:>8.3f} {row['new_tokens']:>10} {row['tokens_per_s']:>10.1f} "
              f"{row['ms_per_token']:>9.3f} {row['eos_rows']:>8} {str(row['peak_gib']):>8}")
    for row in rows[1:]:
        print(f"{row['method']} / plain generate, tokens per s: {row['tokens_per_s'] / rows[0]['tokens_per_s']:.3f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
