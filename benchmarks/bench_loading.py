"""Loading strategies under a GPU cap: load time, peak GPU memory and ms per generated token (GPU).

Acceptance table of the memory planner (docs/benchmarks.md, "Loading strategies"):

    # random checkpoints with the real shapes: GPT-J-6B in fp32 (24 GB), BLOOM-7B1 in fp16 (14 GB)
    python benchmarks/bench_loading.py make --dir /tmp/ckpt
    python benchmarks/bench_loading.py run --model gpt-j-6b=/tmp/ckpt/gpt-j-6b --model bloom-7b1=/tmp/ckpt/bloom-7b1 \
        --gpu-memory 16GiB --out loading.json

Each (model, strategy) runs in its own subprocess with a timeout, so an out-of-memory error or a DeepSpeed
crash costs one row, not the table; results are appended to the JSON as they come. ms per generated token
= wall time of generate / (batch x new tokens), prompt of --prompt-len random tokens, greedy, no early stop.
`baseline` is plain transformers (bf16, one GPU, no cap); `auto` is the planner's choice under the cap;
every other name forces that strategy under the cap.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = {"gpt-j-6b": "float32", "bloom-7b1": "float16", "llama-2-7b": "float16",  # bundled config -> checkpoint dtype
          "mistral-7b": "bfloat16"}  # (as on the hub)
SLOW = {"cpu-offload", "zero-inference", "cpu"}
# Shapes too large for one GPU to initialise whole: written tensor by tensor (make_sharded). Public config values.
LARGE_SHAPES = {
    "llama-2-70b": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
                    "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
                    "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096,
                    "rms_norm_eps": 1e-5, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
                    "initializer_range": 0.02, "tie_word_embeddings": False, "dtype": "bfloat16"},
}


def make_sharded(out: Path, config: dict, layers: int | None = None, shard_bytes: int = 5 << 30) -> None:
    """A random checkpoint of ``config`` (bfloat16, N(0, initializer_range), norms at one) written one tensor
    at a time into safetensors shards with their index, a small tokenizer beside them: a 140 GB model never
    sits whole in any memory. Tensors are drawn on the GPU where there is one. ``layers``: fewer blocks (the
    CPU check of this function)."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import gpt2_style_tokenizer

    values = dict(config, **({"num_hidden_layers": layers} if layers else {}))
    model_config = AutoConfig.for_model(**values)
    with torch.device("meta"):
        shapes = {name: tensor.shape for name, tensor in AutoModelForCausalLM.from_config(model_config).state_dict().items()}
    out.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    generator = torch.Generator(device=device).manual_seed(0)
    std = float(values.get("initializer_range", 0.02))
    shard: dict[str, torch.Tensor] = {}
    size = total = 0
    files: list[tuple[Path, list[str]]] = []  # each shard as written, and the tensors in it

    def flush() -> None:
        nonlocal shard, size
        path = out / f"part-{len(files) + 1:05d}.safetensors"
        save_file(shard, str(path), metadata={"format": "pt"})
        files.append((path, list(shard)))
        shard, size = {}, 0

    started = time.perf_counter()
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            tensor = torch.ones(shape, dtype=torch.bfloat16)
        else:
            tensor = (torch.randn(shape, generator=generator, device=device, dtype=torch.float32) * std).to(
                torch.bfloat16).cpu()
        shard[name] = tensor
        size += tensor.numel() * 2
        total += tensor.numel() * 2
        if size >= shard_bytes:
            flush()
    if shard:
        flush()
    count = len(files)
    weight_map: dict[str, str] = {}
    for index, (path, names) in enumerate(files, 1):  # transformers' names: model-00001-of-000NN.safetensors
        final = path.rename(out / f"model-{index:05d}-of-{count:05d}.safetensors")
        weight_map.update(dict.fromkeys(names, final.name))
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                   "weight_map": weight_map}))
    model_config.save_pretrained(out)
    gpt2_style_tokenizer(4000).save_pretrained(out)
    print(f"{out.name}: {total / 2 / 1e9:.2f}B params, bfloat16, {total / 1e9:.1f} GB in {count} shards, "
          f"{time.perf_counter() - started:.1f} s", flush=True)


def make_checkpoints(directory: Path, names: list[str]) -> None:
    """Random weights in the real shapes, initialised on the GPU (where there is one) and saved as safetensors, with a small
    trained BPE tokenizer beside them so that `evalsuite run` takes the same folders."""
    import torch
    from transformers import AutoModelForCausalLM

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from evalsuite.planner.source import _config_from_dict, bundled_config_path
    from tiny_models import gpt2_style_tokenizer

    for name in names:
        out = directory / name
        if (out / "config.json").exists():
            print(f"{name}: exists at {out}")
            continue
        if name in LARGE_SHAPES:
            make_sharded(out, LARGE_SHAPES[name], layers=int(os.environ.get("LAYERS", "0")) or None)
            continue
        dtype = getattr(torch, SHAPES[name])
        config = _config_from_dict(json.loads(bundled_config_path(name).read_text()))
        started = time.perf_counter()
        torch.manual_seed(0)
        cuda = torch.cuda.is_available()  # CPU too: the GPU acceptance builds it while the GPU tests run
        with torch.device("cuda" if cuda else "cpu"):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
        if cuda:
            torch.cuda.synchronize()
        built = time.perf_counter() - started
        model.save_pretrained(out, max_shard_size="5GB")
        gpt2_style_tokenizer(4000).save_pretrained(out)
        size = sum(f.stat().st_size for f in out.glob("*.safetensors"))
        print(f"{name}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B params, {SHAPES[name]}, "
              f"{size / 1e9:.1f} GB on disk; init on GPU {built:.1f} s, save {time.perf_counter() - started - built:.1f} s",
              flush=True)
        del model
        if cuda:
            torch.cuda.empty_cache()


def worker(args: argparse.Namespace) -> dict:
    """One (model, strategy): load, then time generate at each batch size. Runs in its own process."""
    import torch

    sys.path.insert(0, str(ROOT))
    cuda = torch.cuda.is_available()  # False only in the CPU smoke test of this script
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    peak = (lambda: torch.cuda.max_memory_allocated() / 2**30) if cuda else (lambda: 0.0)
    result: dict = {"model": args.name, "strategy": args.strategy, "gpu_memory": args.gpu_memory}
    max_new = max(args.new_tokens)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    if args.strategy == "baseline":
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.bfloat16, device_map={"": 0})
        result.update(chosen="gpu (plain transformers, bf16, no cap)", gpu_memory=None)
        max_batch = max(args.batches)
    else:
        from evalsuite.models.options import LoadingOptions
        from evalsuite.planner.loaders import load_planned

        options = LoadingOptions(strategy=None if args.strategy == "auto" else args.strategy,
                                 gpu_memory=args.gpu_memory, offload_dir=args.offload_dir)
        model, plan = load_planned(args.model_dir, None, options, batch_size=max(args.batches),
                                   seq_len=args.prompt_len + max_new, prompt_len=args.prompt_len)
        result.update(chosen=plan.strategy, plan=plan.to_json(), plan_text=plan.render())
        max_batch = plan.batch_limit or max(args.batches)
    sync()
    result["load_s"] = time.perf_counter() - started
    result["peak_gpu_after_load_gib"] = peak()
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    runs = []
    for batch, new_tokens in zip(args.batches, args.new_tokens):
        prompt = torch.randint(10, vocab - 10, (batch, args.prompt_len), generator=generator)
        device = next((p.device for p in model.parameters() if p.device.type == "cuda"),
                      torch.device("cuda:0" if cuda else "cpu"))
        chunk = min(batch, max_batch)

        def generate(ids, n):
            ids = ids.to(device)
            return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                                  do_sample=False, pad_token_id=0, eos_token_id=None)

        generate(prompt[:1, :8], 2)  # warm-up: kernels, cuBLAS handles, first offload copies
        sync()
        t0 = time.perf_counter()
        outputs = [generate(prompt[i:i + chunk], new_tokens) for i in range(0, batch, chunk)]
        sync()
        wall = time.perf_counter() - t0
        first = outputs[0][0, args.prompt_len:].tolist()
        runs.append({"batch": batch, "chunk": chunk, "new_tokens": new_tokens, "wall_s": wall,
                     "ms_per_token": 1000 * wall / (batch * new_tokens), "first_tokens": first[:8]})
        print(f"  {args.name} {args.strategy} bs{batch}: {1000 * wall / (batch * new_tokens):.2f} ms/token", flush=True)
    result["runs"] = runs
    result["peak_gpu_gib"] = peak()
    result["peak_gpu_reserved_gib"] = torch.cuda.max_memory_reserved() / 2**30 if cuda else 0.0
    return result


def run_all(args: argparse.Namespace) -> list[dict]:
    out = Path(args.out)
    results: list[dict] = json.loads(out.read_text()) if out.exists() and args.append else []
    deadline = time.monotonic() + args.budget_s
    dirs = dict(spec.partition("=")[::2] for spec in args.model)
    if args.jobs:  # explicit order across models, most important first, so a spent budget cuts the least
        jobs = [tuple(job.split(":", 1)) for job in args.jobs.split(",")]
    else:
        jobs = [(name, strategy) for name in dirs for strategy in args.strategies.split(",")]
    for name, strategy in jobs:
        model_dir = dirs[name]
        if True:
            cap = args.offload_gpu_memory if strategy == "cpu-offload" and args.offload_gpu_memory else args.gpu_memory
            slow = strategy in SLOW
            new_tokens = args.slow_new_tokens if slow else args.new_tokens
            cmd = [sys.executable, __file__, "worker", "--name", name, "--model-dir", model_dir, "--strategy", strategy,
                   "--gpu-memory", cap, "--prompt-len", str(args.prompt_len),
                   "--batches", ",".join(map(str, args.batches)), "--new-tokens", ",".join(map(str, new_tokens)),
                   "--result", str(out) + ".one"]
            if args.offload_dir:
                cmd += ["--offload-dir", args.offload_dir]
            timeout = min(args.timeout, deadline - time.monotonic())
            if timeout < 20:
                print(f"== {name} {strategy}: skipped, the run's --budget-s is spent", flush=True)
                continue
            print(f"== {name} {strategy} (cap {cap if strategy != 'baseline' else 'none'})", flush=True)
            started = time.perf_counter()
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
                one = Path(str(out) + ".one")
                if proc.returncode == 0 and one.exists():
                    result = json.loads(one.read_text())
                else:
                    tail = (proc.stdout + proc.stderr).strip().splitlines()
                    errors = [line for line in tail if "Error" in line or "error" in line]
                    result = {"model": name, "strategy": strategy, "failed": True, "returncode": proc.returncode,
                              "error": (errors[-1] if errors else (tail[-1] if tail else ""))[:400],
                              "log_tail": tail[-25:]}
                one.unlink(missing_ok=True)
            except subprocess.TimeoutExpired as exc:
                tail = ((exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes)
                        else (exc.stdout or "")).strip().splitlines()
                result = {"model": name, "strategy": strategy, "failed": True,
                          "error": f"timed out after {timeout:.0f} s", "log_tail": tail[-10:]}
            result["gpu_memory"] = None if strategy == "baseline" else cap
            result["wall_s"] = time.perf_counter() - started
            results.append(result)
            out.write_text(json.dumps(results, indent=2))
            print(f"   {summary_line(result)}", flush=True)
    return results


def summary_line(r: dict) -> str:
    if r.get("failed"):
        return f"FAILED: {r.get('error')}"
    runs = " ".join(f"bs{x['batch']}={x['ms_per_token']:.2f}" for x in r["runs"])
    return (f"chosen {r['chosen']}: load {r['load_s']:.1f} s, peak {r['peak_gpu_gib']:.1f} GiB, ms/token {runs}")


def table(results: list[dict]) -> str:
    lines = ["| model | strategy | cap | runs as | load s | peak GPU GiB | ms/token bs1 | ms/token bs32 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.get("failed"):
            lines.append(f"| {r['model']} | {r['strategy']} | {r.get('gpu_memory') or '-'} | failed: "
                         f"{r.get('error', '')[:90]} | | | | |")
            continue
        by_batch = {x["batch"]: x for x in r["runs"]}

        def cell(b):
            x = by_batch.get(b)
            if not x:
                return "-"
            chunk = f" (chunks of {x['chunk']})" if x["chunk"] < b else ""
            return f"{x['ms_per_token']:.2f}{chunk}"

        lines.append(f"| {r['model']} | {r['strategy']} | {r.get('gpu_memory') or 'none'} | {r['chosen']} | "
                     f"{r['load_s']:.1f} | {r['peak_gpu_gib']:.1f} | {cell(1)} | {cell(32)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    make = sub.add_parser("make")
    make.add_argument("--dir", type=Path, required=True)
    make.add_argument("--models", default="gpt-j-6b,bloom-7b1")
    run = sub.add_parser("run")
    run.add_argument("--model", action="append", required=True, help="NAME=DIR (repeatable)")
    run.add_argument("--strategies", default="baseline,auto,gpu,int8,nf4,cpu-offload,zero-inference")
    run.add_argument("--jobs", help="MODEL:STRATEGY,... in this order (instead of every model x --strategies)")
    run.add_argument("--gpu-memory", default="16GiB")
    run.add_argument("--offload-gpu-memory", default="8GiB",
                     help="cap for cpu-offload, so that accelerate really offloads (under 16GiB both models fit)")
    run.add_argument("--offload-dir")
    run.add_argument("--prompt-len", type=int, default=32)
    run.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 32])
    run.add_argument("--new-tokens", type=lambda s: [int(x) for x in s.split(",")], default=[32, 16])
    run.add_argument("--slow-new-tokens", type=lambda s: [int(x) for x in s.split(",")], default=[8, 4])
    run.add_argument("--timeout", type=float, default=240)
    run.add_argument("--budget-s", type=float, default=3600, help="stop starting new rows after this long")
    run.add_argument("--out", default="loading.json")
    run.add_argument("--append", action="store_true", help="add to an existing --out")
    table_cmd = sub.add_parser("table")
    table_cmd.add_argument("json", nargs="+")
    w = sub.add_parser("worker")
    w.add_argument("--name", required=True)
    w.add_argument("--model-dir", required=True)
    w.add_argument("--strategy", required=True)
    w.add_argument("--gpu-memory")
    w.add_argument("--offload-dir")
    w.add_argument("--prompt-len", type=int, default=32)
    w.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 32])
    w.add_argument("--new-tokens", type=lambda s: [int(x) for x in s.split(",")], default=[32, 16])
    w.add_argument("--result", required=True)
    args = parser.parse_args()
    if args.cmd == "make":
        make_checkpoints(args.dir, args.models.split(","))
    elif args.cmd == "worker":
        Path(args.result).write_text(json.dumps(worker(args)))
    elif args.cmd == "run":
        print(table(run_all(args)))
    else:
        print(table([r for path in args.json for r in json.loads(Path(path).read_text())]))


if __name__ == "__main__":
    main()
