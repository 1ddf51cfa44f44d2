"""The line each model of a command prints before it generates: how it was placed, in which dtype, and how long
the work should take; and, for a plan more than 10x slower than the model whole on one GPU, a warning that names
the flags that would avoid it. Why: a model that fell to an offload or CPU rung used to be noticed only from an
ETA of hours, well after the command had started.

Everything here reads the generator's ``describe()`` (the planner's plan as recorded), so the line says what
the run record will say.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GiB = 1024**3
SLOW_PLAN = 0.1  # a plan this far below whole-GPU speed is said loudly
WHOLE_GPU_SLACK = 1.1  # beyond weights and the planner's budget: the engine's workspace, allocator rounding


@dataclass(frozen=True)
class Workload:
    """What the model is about to generate, at most: resumed samples make it less."""

    samples: int
    max_new_tokens: int


def plan_line(display: str, description: Mapping[str, Any], workload: Workload,
              cpu_tokens_per_s: float | None = None) -> str | None:
    """``plan: <model>: <strategy>, <dtype>, <speed>, <estimate>``; None for a model not loaded on a device
    (the reference, a server). ``cpu_tokens_per_s``: the speed model's rate for an unplanned CPU load."""
    placement = description.get("placement") or {}
    plan = placement.get("plan") or {}
    if not plan and not description.get("device"):
        return None
    strategy = placement.get("strategy") or "single-device"
    where = f"{strategy} on {description.get('device')}" if not plan else strategy
    speed = plan.get("speed_class") or "not placed by the memory planner (no whole-GPU comparison)"
    return (f"plan: {display}: {where}, {description.get('dtype')}, {speed}; "
            f"{estimate(plan, workload, cpu_tokens_per_s)}")


def estimate(plan: Mapping[str, Any], workload: Workload, cpu_tokens_per_s: float | None) -> str:
    """The expected generation time if every sample runs to ``max_new_tokens`` (the planner's speed model:
    orders of magnitude, not a promise), or what is known when it cannot be estimated."""
    work = f"{workload.samples} sample(s) x {workload.max_new_tokens} new tokens"
    step, batch = plan.get("est_step_s"), (plan.get("budget") or {}).get("batch_size")
    if step and batch:
        seconds = math.ceil(workload.samples / batch) * workload.max_new_tokens * step
        return f"~{duration(seconds)} for {work} at batch {batch} (~{1000 * step / batch:.3g} ms a token)"
    if cpu_tokens_per_s:
        seconds = workload.samples * workload.max_new_tokens / cpu_tokens_per_s
        return f"~{duration(seconds)} for {work} at ~{cpu_tokens_per_s:,.1f} tokens/s"
    return f"no time estimate (the speed model covers planned loads and CPU runs); {work}"


def slow_plan_warning(display: str, description: Mapping[str, Any]) -> str | None:
    """A warning for a plan more than 10x slower than whole-GPU, naming the flags that would avoid it."""
    placement = description.get("placement") or {}
    plan = placement.get("plan") or {}
    relative = plan.get("relative_speed")
    if relative is None or not 0 < relative < SLOW_PLAN:
        return None
    return (f"WARNING: {display} is planned as {placement.get('strategy')}, {1 / relative:.0f}x slower than the "
            f"model whole on one GPU. To avoid it: {'; '.join(remedies(plan)) or 'a GPU with more memory'}")


def remedies(plan: Mapping[str, Any]) -> list[str]:
    """The flags that would put this model back on the GPU, from what the plan knows: its weights in each
    precision, the memory set aside for the KV cache, the GPUs it had, and why the faster rungs were rejected."""
    sizes = plan.get("bytes_per_precision") or {}
    budget = (plan.get("budget") or {}).get("total") or 0
    largest_gpu = max((plan.get("capacity") or {}).get("gpus") or [0])
    rejected = {item.get("strategy"): item.get("reason", "") for item in plan.get("rejected") or []}
    # float32 asked: the GPU rung says so (a CPU plan holds float32 whatever was asked for the GPU)
    float32 = "of float32 weights" in rejected.get("gpu", "") or (plan.get("dtype") == "float32"
                                                                 and plan.get("strategy") != "cpu")
    found = []
    capacity = plan.get("capacity") or {}
    held = capacity.get("gpus_held") or []
    ids = capacity.get("gpu_ids") or list(range(len(held)))
    found += [f"the {taken / GiB:.1f} GiB other processes hold on GPU {index} (another run or notebook: let it "
              "finish, or give this run another GPU with --device)" for index, taken in zip(ids, held) if taken]
    weights = sizes.get("float32" if float32 else "bfloat16") or 0
    if weights:
        need = (weights + budget) * WHOLE_GPU_SLACK
        if need > largest_gpu:
            found.append(f"--gpu-memory {math.ceil(need / GiB)}GiB or more on one GPU ({plan.get('dtype')} weights "
                         f"{weights / GiB:.1f} GiB + {budget / GiB:.1f} GiB for the cache), or more GPUs")
    bfloat16 = sizes.get("bfloat16")
    if float32 and bfloat16:
        found.append(f"--dtype bfloat16 (weights {bfloat16 / GiB:.1f} GiB instead of {weights / GiB:.1f})")
    missing = [name for name in ("nf4", "int8") if "not installed" in rejected.get(name, "") and sizes.get(name)]
    if missing:
        install = re.search(r"pip install '[^']+'", rejected[missing[0]])
        found.append(f"{install.group(0) if install else 'install bitsandbytes'}, then "
                     + " or ".join(f"--strategy {name} ({sizes[name] / GiB:.1f} GiB of weights)" for name in missing))
    if plan.get("forced"):
        found.append(f"drop --strategy {plan.get('strategy')} (the planner takes the fastest rung that fits)")
    return found


def announce_plan(display: str, description: Mapping[str, Any], workload: Workload, show: bool,
                  cpu_tokens_per_s: float | None = None) -> None:
    """Print the plan line (unless quiet) and, whatever the verbosity, the slow-plan warning, to stderr."""
    line = plan_line(display, description, workload, cpu_tokens_per_s)
    if show and line:
        print(line, file=sys.stderr)
    warning = slow_plan_warning(display, description)
    if warning:
        print(warning, file=sys.stderr)


def duration(seconds: float) -> str:
    if seconds < 1:
        return "<1 s"
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= 1.5 * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"
