"""Checks that must pass before any model loads: a run that cannot finish should fail in a second, in one
line, not after hours of generation.

* the sandbox: can samples be isolated here (bubblewrap present and able to build the jail)?
* the output folders: can the run folder and the leaderboard folder be created and written?
* sizes: ``--gpu-memory``/``--cpu-memory`` are parsed once, where the loading options are made
  (:class:`~evalsuite.sizes.ByteSize`), so a bad one is refused here too;
* ``--fail-under``: every gated metric is one the run reports;
* every other value a run would otherwise ignore or trip over later: counts that must be positive, a
  ``--strategy`` the planner knows, ``--top-k``/``--top-p`` in range;
* model files: a ``.gguf`` named on the command line exists and is whole (a truncated download is one line,
  not a traceback from transformers' reader).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError


def check_sandbox(allow_unsandboxed: bool, isolation: str = "auto") -> None:
    """Refuse now, not after generation, where the jail the user chose (``--isolation``) cannot be built (the
    answer is cached)."""
    if allow_unsandboxed:
        return
    from sandbox import isolation_problem

    why = isolation_problem(isolation)  # the name itself was checked when the option was read
    if why:
        raise EvalsuiteError(f"cannot isolate sample execution: {why}; nothing was generated. Install bubblewrap "
                             "or allow user namespaces, or pass --allow-unsandboxed (UNSAFE, see docs/sandbox.md)")


def check_not_empty(path: str | Path, flag: str) -> None:
    """An empty folder flag (an unset shell variable: ``--output "$OUT"``) is refused: it meant the current
    folder, where the run folders and the leaderboard then landed."""
    if not str(path).strip():
        raise EvalsuiteError(f"{flag} is empty; give a folder (\".\" for this one)")


def check_writable_dirs(folders: Mapping[str, str | Path]) -> None:
    """Each folder flag's value (``{"--output": ...}``) not empty, then each folder created and written, as the run
    will: an empty one is refused before any other is made."""
    for flag, path in folders.items():
        check_not_empty(path, flag)
    for flag, path in folders.items():
        _check_writable_dir(path, flag)


def _check_writable_dir(path: str | Path, flag: str) -> None:
    """Create ``path`` if needed and write a file in it."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".evalsuite-write-check-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise EvalsuiteError(f"{flag} {path}: cannot create or write there ({reason})") from None


def check_leaderboard(directory: str | Path) -> None:
    """The leaderboard the runs will add to is readable: found broken after the work, it was charged to every
    model of the command as its failure."""
    from evalsuite.reporting.store import LEADERBOARD_FILE, load_leaderboard

    try:
        load_leaderboard(Path(directory) / LEADERBOARD_FILE)
    except EvalsuiteError as exc:
        raise EvalsuiteError(f"{exc}; the results are added to it: fix or move it, or choose another "
                             "--leaderboard-dir; nothing was run") from None


def check_reference_has_solutions(specs: Sequence[Any], tasks: Sequence[Any], limit: int | None) -> None:
    """The built-in ``reference`` model answers with canonical solutions: a task without them is refused now,
    before the models ahead of it run and any folder is made."""
    if not any(spec.source == "builtin" for spec in specs):
        return
    from evalsuite.runs.identity import select_problems

    for task in tasks:
        lacking = [p.task_id for p in select_problems(task, limit) if p.canonical_solution is None]
        if lacking:
            raise EvalsuiteError(f"the reference model answers with canonical solutions, and task {task.name!r} has "
                                 f"none for {len(lacking)} problem(s) ({lacking[0]}...); drop reference or the task")


def check_prompt_styles(specs: Sequence[Any], generation: Any, style: str) -> None:
    """``--prompt-style instruct`` on a model without a chat template: one line now, before the first model's
    weights load (its config and tokenizer are read, see generation.check_prompt_style)."""
    from evalsuite.generation import check_prompt_style

    for spec in specs:
        check_prompt_style(spec, generation, style)


def check_fail_under(thresholds: Mapping[str, float] | None, ks: Sequence[int]) -> None:
    """Every ``--fail-under`` metric must be a pass@k this run computes."""
    if not thresholds:
        return
    reported = {f"pass@{k}" for k in ks}
    missing = [name for name in thresholds if name not in reported]
    if missing:
        names = ", ".join(sorted(reported, key=lambda n: int(n[5:])))
        raise EvalsuiteError(f"--fail-under {', '.join(missing)}: this run reports only {names} (--k); "
                             "add the k to --k (with --n at least that large) or gate on a reported metric")


def check_generation_options(options: Any, sampling: Any) -> None:
    """Values of ``run``'s flags that would be ignored (with the reference model, or on the CPU) or fail only
    after the model loads: each is one line now. ``options`` is a GenerationOptions, ``sampling`` the
    SamplingParams."""
    positive = {"--batch-size": options.hf.batch_size, "--threads": options.hf.threads,
                "--concurrency": options.openai.concurrency}
    for flag, value in positive.items():
        if value is not None and value < 1:
            raise EvalsuiteError(f"{flag} must be at least 1, got {value}")
    if options.openai.max_retries < 0 or options.openai.request_timeout_s <= 0:
        raise EvalsuiteError("--max-retries must be >= 0 and --request-timeout > 0")
    from evalsuite.generation.backends import AUTO, BACKENDS

    if options.backend != AUTO:
        BACKENDS.get(options.backend)  # "unknown backend 'x'; choose one of hf, openai, reference" (plugins too)
    if options.openai.base_url and options.backend in ("hf", "reference"):
        raise EvalsuiteError(f"--base-url is for --backend openai (or auto); --backend {options.backend} would "
                             "ignore it")
    if options.loading.strategy is not None:
        from evalsuite.planner.strategies import strategy_named

        strategy_named(options.loading.strategy)  # "--strategy 'x' is not one of: gpu, multi-gpu, ..." (plugins too)


def check_model_files(names: Sequence[str]) -> None:
    """Every ``.gguf`` among ``names`` exists and is a complete GGUF file (see generation/gguf_files.py)."""
    from evalsuite.generation.hf.gguf_files import check_gguf_file

    for name in names:
        path = Path(name).expanduser()
        if path.suffix.lower() != ".gguf":
            continue
        if not path.is_file():
            raise EvalsuiteError(f"{name}: no such GGUF file")
        check_gguf_file(path)
