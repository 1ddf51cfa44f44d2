"""Devices: what a ``--device`` value means, and how much memory PyTorch may still take on a GPU.

One home for these facts: the loader, the planner, the plain-generate batcher and the engine all size
themselves from :func:`allocatable_bytes`, and every ``--device`` value is checked by :func:`parse_device`
before any model loads. Importing this module does not import torch; the functions that need it do.
"""

from __future__ import annotations

import gc
import os
import re
from typing import Any

from evalsuite.environment import imported_torch
from evalsuite.errors import EvalsuiteError

_DEVICE = re.compile(r"^(cpu|cuda(?::(\d+))?)$")


def parse_device(value: str | None) -> str | None:
    """``--device``: ``cpu``, ``cuda`` or ``cuda:N``, normalised; anything else is one clear error. Whether
    the GPU exists is checked by :func:`check_device_present` (that needs torch)."""
    if value is None:
        return None
    text = value.strip().lower()
    if not _DEVICE.match(text):
        raise EvalsuiteError(f"--device {value!r} is not a device: use cpu, cuda or cuda:N (N = the GPU's index)")
    return text


def pinned_gpu(value: str | None) -> int | None:
    """The GPU index ``--device cuda:N`` names (a torchrun rank's own GPU is passed this way), else None:
    ``cuda`` alone leaves the choice among the GPUs to the planner."""
    text = parse_device(value)
    match = _DEVICE.match(text) if text else None
    return int(match.group(2)) if match and match.group(2) is not None else None


def check_device_present(value: str | None) -> None:
    """Refuse a CUDA device this machine does not have, before any model loads."""
    if value is None or not value.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise EvalsuiteError(f"--device {value}: this machine has no CUDA GPU visible to PyTorch (use --device cpu)")
    index = pinned_gpu(value) or 0
    if index >= torch.cuda.device_count():
        raise EvalsuiteError(f"--device {value}: this machine has {torch.cuda.device_count()} GPU(s), "
                             f"cuda:0 to cuda:{torch.cuda.device_count() - 1}")


def cuda_index(device: Any) -> int:
    """The GPU index of ``device`` (a torch.device, ``"cuda"``, ``"cuda:N"`` or an int); ``cuda`` without an
    index means the current GPU, as PyTorch itself reads it."""
    import torch

    if isinstance(device, int):
        return device
    device = torch.device(device)
    return device.index if device.index is not None else torch.cuda.current_device()


def allocatable_bytes(device: Any, cap_bytes: int | None = None) -> int:
    """Bytes PyTorch may still allocate on ``device``: the GPU's free memory plus what its allocator holds
    unused, and no more than the model's ``--gpu-memory`` cap (``cap_bytes``, carried by its loading plan)
    leaves, which ``mem_get_info`` alone does not see."""
    import torch

    index = cuda_index(device)
    free, _ = torch.cuda.mem_get_info(index)
    allocated, reserved = torch.cuda.memory_allocated(index), torch.cuda.memory_reserved(index)
    return capped_free_bytes(free, allocated, reserved, cap_bytes)


def capped_free_bytes(free: int, allocated: int, reserved: int, cap_bytes: int | None) -> int:
    """Free device memory as the allocator sees it (see :func:`allocatable_bytes`).

    Under a cap, PyTorch refuses any new segment that would take its *reserved* total past the cap; the
    reserved-but-unused blocks left by freed tensors (the engine's fused weights replace the originals
    in place of them) only serve allocations small enough to fit a hole. So what a large tensor such as a
    KV cache can count on is the cap less what is reserved, not less what is allocated: planning from the
    latter put the GPT-J seed case's cache 1 GiB past its 16 GiB cap and cost a retry at half the rows."""
    available = free + (reserved - allocated)
    if cap_bytes:
        available = min(available, cap_bytes - max(allocated, reserved))
    return max(0, available)


def free_accelerator_memory() -> None:
    """Drop unreachable tensors and hand the allocator's unused blocks back to the GPU."""
    gc.collect()
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def release_device_memory() -> None:
    """Everything a closed model left to the process goes back to the GPU: unreachable tensors (reference
    cycles included), cuBLAS's per-stream workspaces (allocator blocks no ``empty_cache`` frees) and the
    allocator's cached blocks. A no-op where torch was never imported (the reference model, a server)."""
    gc.collect()
    torch = imported_torch()
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return
    try:
        torch.cuda.synchronize()
        clear_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear_workspaces is not None:
            clear_workspaces()
        torch.cuda.empty_cache()
    except RuntimeError:  # a CUDA error is sticky: the error that caused it is what the caller reports, not this
        pass


def is_out_of_memory(exc: BaseException) -> bool:
    """An allocation failure, whichever library raised it (cuBLAS reports its own in a RuntimeError)."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "CUBLAS_STATUS_ALLOC_FAILED" in text)


def use_expandable_segments() -> None:
    """Let freed GPU memory be handed back page by page (PyTorch's expandable segments) unless the user set
    the allocator up themselves. Why: transformers carves a model's weights out of one large block; the
    engine's set-up replaces some of them, and without expandable segments the freed holes stay reserved
    and count against a ``--gpu-memory`` cap (GPT-J-6B fp16 under 16 GiB: 4.6 GiB of holes, then
    out-of-memory). Must run before the first CUDA allocation to cover the weights."""
    if "expandable_segments" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
        return
    import torch

    setting = getattr(torch._C, "_accelerator_setAllocatorSettings", None)  # torch >= 2.10; older: cuda.memory's
    setting = setting or getattr(torch.cuda.memory, "_set_allocator_settings", None)
    try:
        if setting is not None:
            setting("expandable_segments:True")
    except RuntimeError:  # an allocator without that setting: fusing then relies on the room check alone
        pass


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which containers and pinning narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1


def load_average() -> float:
    """Runnable processes over the last minute (0 where the platform cannot say)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def choose_cpu_threads(requested: int | None = None) -> int:
    """Threads for CPU generation: ``--threads`` if given, else the cores not already busy when the run starts
    (at least one). Why: on 2 cores kept busy by other jobs, two torch threads took 1.1-2.7 s per decode step
    of a 135M model and one thread 0.23 s: threads that wait for a busy core stall every step."""
    if requested is not None:
        return requested
    cores = usable_cores()
    return max(1, min(cores, int(cores - load_average() + 0.5)))


def set_cpu_threads(requested: int | None = None) -> int:
    """Apply :func:`choose_cpu_threads` to torch; returns the count (recorded with the run)."""
    import torch

    threads = choose_cpu_threads(requested)
    torch.set_num_threads(threads)
    return threads

