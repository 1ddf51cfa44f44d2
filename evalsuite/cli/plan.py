"""``evalsuite plan``: how each model would be loaded within the given memory, and why; no weights downloaded."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from evalsuite.cli.option_groups import add_options, options_from_args
from evalsuite.cli.options import add_json, add_max_new_tokens
from evalsuite.errors import EvalsuiteError
from evalsuite.models.options import PLACEMENT, LoadingOptions

PLAN_FLAGS = ("dtype", "revision", *PLACEMENT)  # the loading flags a plan depends on


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan", help="show how models would be loaded (GPU, 8/4-bit, offload, CPU) within your memory",
        description="Print, per model and without downloading weights, the parameter count, bytes per "
                    "precision, the KV-cache and activation budget, the chosen loading strategy, a device-map "
                    "summary and the expected speed relative to a whole GPU. `run` uses the same plan.")
    parser.add_argument("--models", required=True, help="comma-separated aliases, hub ids or local checkpoint dirs")
    add_options(parser, LoadingOptions, only=PLAN_FLAGS)
    parser.add_argument("--gpus", type=int, help="plan for N GPUs of --gpu-memory each (default: this machine's GPUs)")
    parser.add_argument("--batch-size", type=int, default=8, help="sequences generated together (default: 8)")
    parser.add_argument("--prompt-len", type=int, default=512, help="prompt tokens budgeted (default: 512)")
    add_max_new_tokens(parser, "new tokens budgeted")
    add_json(parser, "the plans")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from evalsuite.cli import preflight
    from evalsuite.cli.options import split_names
    from evalsuite.generation.hf.loading import check_gguf_placement
    from evalsuite.planner import detect_capacity, plan_model
    from evalsuite.planner.loaders import gpu_dtype

    if args.batch_size < 1 or args.prompt_len < 1 or args.max_new_tokens < 1:
        raise EvalsuiteError("--batch-size, --prompt-len and --max-new-tokens must be positive")
    loading = options_from_args(LoadingOptions, args, only=PLAN_FLAGS)
    preflight.check_model_files(split_names(args.models))
    specs = {name: _spec(name, loading.revision) for name in split_names(args.models)}
    capacity = detect_capacity(loading.gpu_memory, loading.cpu_memory, loading.offload_dir, num_gpus=args.gpus)
    refused = 0
    plans: list[dict[str, Any]] = []
    for name in split_names(args.models):
        spec = specs[name]
        if spec is not None:
            check_gguf_placement(spec, loading)
        if spec is not None and spec.source == "builtin":  # `run`'s default model: nothing to place
            if args.json:
                plans.append({"model": name, "strategy": "none", "note": "the built-in model (the canonical "
                              "solutions): no weights, nothing to place"})
            else:
                print(f"{name}\n  the built-in model (the task's canonical solutions): no weights, nothing to place\n")
            continue
        started = time.perf_counter()
        try:
            plan, _ = plan_model(name, capacity, spec=spec, strategy=loading.strategy,
                                 batch_size=args.batch_size,
                                 seq_len=args.prompt_len + args.max_new_tokens, prompt_len=args.prompt_len,
                                 gpu_dtype=gpu_dtype(loading, spec))
        except EvalsuiteError as exc:
            refused += 1
            if args.json:
                plans.append({"model": name, "refused": str(exc)})
            else:
                print(f"{name}\n  REFUSED         {exc}\n", file=sys.stdout)
            continue
        elapsed = time.perf_counter() - started
        # a forced strategy that does not fit is what `run` refuses: refused here too (exit 2), its plan still shown
        unfit = plan.forced and not plan.fits
        refused += unfit
        if args.json:
            plans.append({**plan.to_json(), "plan_seconds": elapsed,
                          **({"refused": f"--strategy {plan.strategy} does not fit"} if unfit else {})})
        else:
            print(plan.render())
            print(f"  (planned in {elapsed:.1f} s, no weights loaded)\n")
    if args.json:
        print(json.dumps(plans, indent=2))
    return 2 if refused else 0


def _spec(name: str, revision: str | None):
    """The registry's view of ``name``, so the plan takes the dtype a run would (the registry's, e.g. GPT-J's
    float16); None where the registry cannot resolve it (the planner may still know it from a bundled config).
    ``--revision`` is refused here, in one line, for anything but a hub model, before any planning."""
    from evalsuite.models.registry import resolve_model

    try:
        return resolve_model(name, revision=revision)
    except EvalsuiteError:
        if revision is not None or Path(name).expanduser().exists():  # a folder or file on disk: run's refusal
            raise
        return None

