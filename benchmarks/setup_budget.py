"""Where the engine's one-time work goes, run after run in one process (issue 31): `evalsuite run` on a model
several times in a row, each part of the engine's set-up timed (KV cache, the two warm-up steps, each CUDA graph
capture, each prefill), with the run's own generate time and tokens/s.

The first run of a process pays what every process pays once (Triton's library hash, each kernel's first
load, cuBLAS and SDPA first calls); the later ones show what each run pays. Variants change one knob of the
engine for one run: ``pack2048``/``pack4096`` (tokens per prefill forward), ``coarse`` (power-of-two buckets only).

    python benchmarks/setup_budget.py --model GGUF_OR_FOLDER --out runs/setup_budget \\
        --variants base,base,pack4096,pack2048,coarse,base          # GPU, ~2 minutes for SmolLM2-135M
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import evalsuite.engine.engine as engine_module  # noqa: E402
import evalsuite.engine.runner as runner_module  # noqa: E402
from evalsuite.cli import main as evalsuite_main  # noqa: E402

COARSE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class Timings:
    """Seconds of each timed part of the current run, in call order."""

    def __init__(self):
        self.parts: dict[str, list] = {}

    def add(self, part: str, value) -> None:
        self.parts.setdefault(part, []).append(value)

    def wrap(self, owner, name: str, part: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            synchronize()
            started = time.perf_counter()
            result = original(*args, **kwargs)
            synchronize()
            self.add(part, round(time.perf_counter() - started, 4))
            return result

        setattr(owner, name, timed)


def instrument(timings: Timings) -> None:
    """Time the engine's parts, and each decode step of its graph set-up (``DecodeRunner._capture_all``): the
    warm-up steps (on the device, before any capture) and each graph's capture (the host's recording of the step;
    nothing may synchronize while capturing). Steps of the run itself are not timed."""
    step, capture_all = runner_module.DecodeRunner._step, runner_module.DecodeRunner._capture_all
    in_setup = [False]

    def timed_step(self, batch: int) -> None:
        if not in_setup[0]:
            return step(self, batch)
        capturing = torch.cuda.is_current_stream_capturing()
        if not capturing:
            synchronize()
        started = time.perf_counter()
        step(self, batch)
        if not capturing:
            synchronize()
        seconds = round(time.perf_counter() - started, 4)
        timings.add("captures" if capturing else "warmup_steps", (batch, seconds))

    def timed_capture_all(self) -> None:
        in_setup[0] = True
        try:
            capture_all(self)
        finally:
            in_setup[0] = False

    runner_module.DecodeRunner._step = timed_step
    runner_module.DecodeRunner._capture_all = timed_capture_all
    timings.wrap(runner_module.DecodeRunner, "_capture_all", "capture_all")
    timings.wrap(engine_module.Engine, "prefill", "prefill")
    timings.wrap(engine_module, "KVCache", "kv_cache")
    timings.wrap(engine_module, "DecodeRunner", "runner")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--variants", default="base,base,pack4096,pack2048,coarse,base")
    ap.add_argument("--out", default=os.environ.get("OUT", "runs/setup_budget"))
    ap.add_argument("run_args", nargs="*", help="more `evalsuite run` flags (after --)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    timings = Timings()
    instrument(timings)
    default_pack, default_buckets = engine_module.MAX_PACK_TOKENS, runner_module.BUCKETS
    rows = []
    for index, variant in enumerate(args.variants.split(",")):
        engine_module.MAX_PACK_TOKENS = int(variant[4:]) if variant.startswith("pack") else default_pack
        runner_module.BUCKETS = COARSE_BUCKETS if variant == "coarse" else default_buckets
        timings.parts.clear()
        folder = out / f"{index}-{variant}"
        started = time.perf_counter()
        code = evalsuite_main(["run", "--models", args.model, "--output", str(folder), "--no-leaderboard", "--quiet",
                               "--allow-unsandboxed", "--device", device, "--dtype", "float32", "--temperature", "0",
                               *args.run_args])
        record = json.loads(next(folder.glob("*/record.json")).read_text())
        engine = record["model"].get("engine")
        row = {"variant": variant, "exit": code, "wall_s": round(time.perf_counter() - started, 2),
               "generate_s": record["timings_s"]["generate"],
               "tokens_per_s": record["generation_stats"]["tokens_per_s"],
               "engine": {k: engine.get(k) for k in ("setup_s", "prefill_s", "wait_s", "loop_s", "steps")}
               if isinstance(engine, dict) else engine, **timings.parts}
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / "setup_budget.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
