"""Where a small model's prefill time goes: host work against device kernels, per packed forward.

Runs the engine's prefill of HumanEval's 164 prompts (2 new tokens each) on a random model of a
bench_generate.py shape, times it, then profiles one run: the device's busy time, its kernels by time, and
the host-device synchronizations, so a slow prefill can be told apart as host-bound or device-bound.

    python benchmarks/profile_prefill.py [--model smollm2-135m] [--dtype float32]      # GPU, ~1 minute
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_generate import sync  # noqa: E402
from bench_prefill_packs import humaneval_prefill, prefill_arguments  # noqa: E402

SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync")


def main(argv=None) -> int:
    args = prefill_arguments(__doc__.split("\n")[0], "runs/profile_prefill").parse_args(argv)
    engine, requests, prompts, params, device = humaneval_prefill(args.model, args.dtype, args.tiny)

    def run() -> tuple[float, float]:
        sync()
        started = time.perf_counter()
        list(engine.generate(requests, params, prompt_ids=prompts, ignore_eos=True))
        sync()
        return engine.stats.prefill_s, time.perf_counter() - started

    run()
    timed = [run() for _ in range(3)]
    result: dict = {"model": args.model, "dtype": args.dtype, "device": device, "prompts": len(prompts),
                    "tokens": sum(map(len, prompts)), "prefill_s": [round(p, 4) for p, _ in timed],
                    "generate_s": [round(g, 4) for _, g in timed]}
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        prefill, whole = run()
    result["profiled"] = {"prefill_s": round(prefill, 4), "generate_s": round(whole, 4),
                          "forwards": engine.stats.prefill_forwards}
    kernels: dict[str, list[float]] = {}
    syncs: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels.setdefault(event.name[:120], []).append(event.time_range.elapsed_us())
        elif event.name in SYNC_CALLS:
            syncs.setdefault(event.name, []).append(event.time_range.elapsed_us())
    busy = sum(sum(v) for v in kernels.values())
    result["device_busy_s"] = round(busy / 1e6, 4)
    result["kernels"] = [{"name": k, "ms": round(sum(v) / 1000, 3), "launches": len(v)}
                         for k, v in sorted(kernels.items(), key=lambda kv: -sum(kv[1]))[:25]]
    result["syncs"] = {k: {"calls": len(v), "ms": round(sum(v) / 1000, 3)} for k, v in syncs.items()}
    result["host_ops"] = [{"op": a.key[:100], "cpu_ms": round(a.cpu_time_total / 1000, 2), "calls": a.count}
                          for a in sorted(prof.key_averages(), key=lambda a: -a.self_cpu_time_total)[:25]]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"profile_prefill_{args.model}_{args.dtype}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
