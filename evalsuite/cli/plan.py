"""``evalsuite plan``: how each model would be loaded within the given memory, and why; no weights downloaded."""

from __future__ import annotations

import argparse
import json
import sys
import time

from evalsuite.errors import EvalsuiteError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan", help="show how models would be loaded (GPU, 8/4-bit, offload, CPU) within your memory",
        description="Print, per model and without downloading weights, the parameter count, bytes per "
                    "precision, the KV-cache and activation budget, the chosen loading strategy, a device-map "
                    "summary and the expected speed relative to a whole GPU. `run` uses the same plan.")
    parser.add_argument("--models", required=True, help="comma-separated aliases, hub ids or local checkpoint dirs")
    parser.add_argument("--gpu-memory", help="cap per GPU, e.g. 16GiB (enforced when loading)")
    parser.add_argument("--gpus", type=int, help="plan for N GPUs of --gpu-memory each instead of this machine's")
    parser.add_argument("--cpu-memory", help="CPU RAM the model may use, e.g. 100GiB (default: available RAM)")
    parser.add_argument("--offload-dir", help="folder for disk/NVMe offload (enables those rungs)")
    parser.add_argument("--strategy", help="force one strategy: gpu, multi-gpu, int8, nf4, cpu-offload, "
                                           "zero-inference, cpu, ds-inference")
    parser.add_argument("--batch-size", type=int, default=8, help="sequences generated together (default 8)")
    parser.add_argument("--prompt-len", type=int, default=512, help="prompt tokens budgeted (default 512)")
    parser.add_argument("--max-new-tokens", type=int, default=512, help="new tokens budgeted (default 512)")
    parser.add_argument("--dtype", choices=["bfloat16", "float16"], help="half precision (default bf16; fp16 "
                                                                        "on GPUs without bf16)")
    parser.add_argument("--revision", help="hub models: the branch, tag or commit whose config to plan for "
                                          "(refused for local folders and GGUF files)")
    parser.add_argument("--json", action="store_true", help="print the plans as JSON")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from evalsuite.cli import preflight
    from evalsuite.cli.options import split_names
    from evalsuite.planner import detect_capacity, plan_model

    if args.batch_size < 1 or args.prompt_len < 1 or args.max_new_tokens < 1:
        raise EvalsuiteError("--batch-size, --prompt-len and --max-new-tokens must be positive")
    preflight.check_model_files(split_names(args.models))
    specs = {}
    if args.revision is not None:  # refused in one line for anything but a hub model, before any planning
        from evalsuite.models.registry import resolve_model

        specs = {name: resolve_model(name, revision=args.revision) for name in split_names(args.models)}
    capacity = detect_capacity(args.gpu_memory, args.cpu_memory, args.offload_dir, num_gpus=args.gpus)
    refused = 0
    plans = []
    for name in split_names(args.models):
        started = time.perf_counter()
        try:
            plan, _ = plan_model(name, capacity, spec=specs.get(name), strategy=args.strategy, batch_size=args.batch_size,
                                 seq_len=args.prompt_len + args.max_new_tokens, prompt_len=args.prompt_len,
                                 half_dtype=args.dtype or "bfloat16")
        except EvalsuiteError as exc:
            refused += 1
            if args.json:
                plans.append({"model": name, "refused": str(exc)})
            else:
                print(f"{name}\n  REFUSED         {exc}\n", file=sys.stdout)
            continue
        elapsed = time.perf_counter() - started
        if args.json:
            plans.append({**plan.to_json(), "plan_seconds": elapsed})
        else:
            print(plan.render())
            print(f"  (planned in {elapsed:.1f} s, no weights loaded)\n")
    if args.json:
        print(json.dumps(plans, indent=2))
    return 2 if refused else 0
