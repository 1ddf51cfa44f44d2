"""What both DeepSpeed strategies need before DeepSpeed is imported (a module of its own: neither owns it)."""

from __future__ import annotations

import os
import socket
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.planner.plan import Plan


def prepare_deepspeed_environment() -> list[str]:
    """Fix what breaks DeepSpeed before it is imported; returns notes for the plan.

    * ``TORCH_CUDA_ARCH_LIST`` entries with a suffix (``9.0a``, ``9.0+PTX``) crash DeepSpeed's JIT op
      build (ValueError parsing ``0a``); the suffix-free list for the visible GPUs works.
    * A single process still needs the torch.distributed rendezvous variables.
    """
    import torch

    notes = []
    arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if torch.cuda.is_available():
        wanted = sorted({"{}.{}".format(*torch.cuda.get_device_capability(i))
                         for i in range(torch.cuda.device_count())})
        fixed = ";".join(wanted)
        if arch != fixed:
            os.environ["TORCH_CUDA_ARCH_LIST"] = fixed
            notes.append(f"TORCH_CUDA_ARCH_LIST set to {fixed!r} for DeepSpeed's JIT build (was {arch!r})")
    defaults = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    if "MASTER_PORT" not in os.environ:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(sock.getsockname()[1])
    return notes


def import_deepspeed(plan: Plan) -> Any:
    plan.notes.extend(prepare_deepspeed_environment())
    try:
        import deepspeed
    except ImportError:
        raise EvalsuiteError(f"strategy {plan.strategy} needs DeepSpeed: pip install 'evalsuite[deepspeed]'") from None
    import torch.distributed

    if not torch.distributed.is_initialized():
        deepspeed.init_distributed(dist_backend="nccl", verbose=False)
    return deepspeed
