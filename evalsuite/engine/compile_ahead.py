"""Compile the Triton kernels a decode step needs side by side, before the step first runs.

Why: on a machine whose Triton cache is empty (every fresh GPU machine, every CI runner), the engine's first
decode steps compiled each kernel at its first launch, one after another: 0.5-1 s each, 1.7-3.6 s of the real
SmolLM2's 3.6 s greedy run over HumanEval (issue 31). Triton releases the GIL while it compiles, so a few
threads compile them in about the time of the slowest one.

Each kernel's launcher (a small C module Triton builds with the system's compiler, ~0.1-0.3 s, at the kernel's
first launch) is built on the same thread right after, into Triton's cache, where that first launch finds it.

How: :func:`compile_kernels_ahead` runs the caller's steps once with Triton's ``jit_cache_hook`` set. A kernel
not compiled yet in this process is recorded and *not launched* (its outputs are left as they were, so the
caller restores whatever state the steps write). The recorded kernels then compile on a thread pool (Triton's
``AsyncCompileMode``, through ``JITFunction.preload``) into each kernel's own cache, where the real steps find
them. A kernel this misses, or whose compilation fails here, compiles at its first launch, as before: the
dry pass decides only when compilation happens, never what runs.

The dry run itself costs a few eager steps (0.3-0.9 s on SmolLM2's shape, where the kernels it finds in
Triton's disk cache took 0.03 s to load), so what it found is kept beside them, in Triton's cache folder, as a
listing named by the steps' signature; a later run with the same signature loads the listed kernels side by
side without a dry run.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.devices import usable_cores


@dataclass(frozen=True)
class CompileAhead:
    """What a dry pass found: kernel specializations compiled (or loaded from Triton's disk cache) and when."""

    kernels: int = 0
    listed: bool = False  # named by an earlier run's listing (no dry run)
    dry_s: float = 0.0  # finding them: reading the listing, or the dry steps (kernels not yet compiled skipped)
    compile_s: float = 0.0  # the thread pool's compilations and launchers (or disk-cache loads), side by side
    workers: int = 0


class _CompileThenBuildLauncher(ThreadPoolExecutor):
    """Each compilation submitted (by Triton's ``AsyncCompileMode``) also builds the kernel's launcher."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        def compile_and_build() -> Any:
            kernel = fn(*args, **kwargs)
            try:
                from triton.runtime.driver import driver

                driver.active.launcher_cls(kernel.src, kernel.metadata)  # cached by its C source; result dropped
            except Exception:  # noqa: BLE001 - built (and any error reported) at the kernel's first launch instead
                pass
            return kernel

        return super().submit(compile_and_build)


@functools.cache
def code_version() -> str:
    """A digest of the engine's sources and Triton's version: a listing written by other code is not used."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    try:
        import triton

        digest.update(triton.__version__.encode())
    except ImportError:
        pass
    return digest.hexdigest()[:16]


_DONE_IN_PROCESS: set[str] = set()  # signatures whose kernels this process holds compiled already


def compile_kernels_ahead(dry_steps: Callable[[], None], signature: str,
                          max_workers: int | None = None) -> CompileAhead | None:
    """Compile side by side the kernels ``dry_steps`` would launch: those a listing in Triton's cache names for
    ``signature`` (what decides the steps' kernel specializations: model, dtype, rows, sampling, code), or else
    those a dry run of the steps records, which then become that listing. Returns None, having run nothing,
    where this Triton lacks the hooks it needs or another hook is set; an empty record where this process did
    it already for ``signature``."""
    try:
        from triton import knobs
        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:  # no Triton, or a version without the hook or the async mode
        return None
    if knobs.runtime.jit_cache_hook is not None:  # someone else's hook (a profiler, a test): leave it alone
        return None
    if signature in _DONE_IN_PROCESS:
        return CompileAhead()
    # a dry run sees only the kernels this process has not compiled yet: after an earlier compile-ahead here (the
    # first model of a several-model run), kernels the steps share with it go unseen, so only the process's first
    # dry run is complete enough to become a listing (a later process running this model alone writes it)
    first_in_process = not _DONE_IN_PROCESS
    listing = Path(knobs.cache.dir) / "evalsuite-ahead" / f"{signature}.json"
    started = time.perf_counter()
    found = _read_listing(listing)
    listed = found is not None
    if found is None:
        found = _dry_run(dry_steps, knobs)
    dry_s = time.perf_counter() - started
    workers = min(len(found), max_workers or usable_cores())  # a data-parallel rank: its own share
    started = time.perf_counter()
    if found:
        with _CompileThenBuildLauncher(workers, thread_name_prefix="evalsuite-triton-compile") as pool:
            with AsyncCompileMode(pool, ignore_errors=True):  # a failure here surfaces at the kernel's own launch
                for jit_function, data in found:
                    try:
                        jit_function.preload(data)
                    except Exception:  # noqa: BLE001 - compiled at its first launch instead, which reports errors
                        pass
    if not listed and first_in_process:
        _write_listing(listing, found)
    _DONE_IN_PROCESS.add(signature)
    return CompileAhead(kernels=len(found), listed=listed, dry_s=round(dry_s, 4),
                        compile_s=round(time.perf_counter() - started, 4), workers=workers)


def _dry_run(dry_steps: Callable[[], None], knobs: Any) -> list[tuple[Any, str]]:
    """The kernels ``dry_steps`` launch that this process has not compiled, each specialization once, recorded
    and skipped (Triton's ``jit_cache_hook`` returning True)."""
    owner = threading.get_ident()
    found: dict[tuple[int, str], tuple[Any, str]] = {}

    def record(*, key: Any, fn: Any, compile: dict, **_: Any) -> bool | None:
        if threading.get_ident() != owner:  # another thread's kernels launch as usual
            return None
        data = compile.get("specialization_data")
        if data is None:
            return None
        found.setdefault((id(fn.jit_function), str(key)), (fn.jit_function, data))
        return True  # skip: not compiled, not launched

    knobs.runtime.jit_cache_hook = record
    try:
        dry_steps()
    finally:
        knobs.runtime.jit_cache_hook = None
    return list(found.values())


def _read_listing(path: Path) -> list[tuple[Any, str]] | None:
    """The kernels a listing names, each resolved to its Triton function in an evalsuite module; None where the
    listing is missing or anything in it does not resolve (then a dry run decides afresh)."""
    try:
        entries = json.loads(path.read_text())
        kernels = []
        for entry in entries:
            module, name, data = entry["module"], entry["name"], entry["data"]
            if not module.startswith("evalsuite."):
                return None
            target: Any = importlib.import_module(module)
            for part in name.split("."):
                target = getattr(target, part)
            if not callable(getattr(target, "preload", None)) or not isinstance(data, str):
                return None
            kernels.append((target, data))
        return kernels
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError):
        return None


def _write_listing(path: Path, kernels: list[tuple[Any, str]]) -> None:
    """Written whole or not at all (a rename), so concurrent runs on one cache never read half a listing."""
    entries = [{"module": f.fn.__module__, "name": f.fn.__qualname__, "data": data} for f, data in kernels]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_text(json.dumps(entries))
        os.replace(temporary, path)
    except OSError:  # a read-only cache: the next run does its dry run again
        pass
