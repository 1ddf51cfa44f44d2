"""Per-problem wall-clock limits calibrated on this machine, as EvalPlus sets them.

A fixed limit turns slow machines into failures: EvalPlus issue #5 reports HumanEval+ pass@1 of 0.40 on a laptop
and 0.23 on a loaded cloud machine for the same samples. EvalPlus times each problem's ground-truth solution and
gives a sample ``max(min_time_limit, gt_time_limit_factor * gt_time)`` (``untrusted_check`` in
``evalplus/eval/__init__.py``; defaults ``DEFAULT_MIN_TIME_LIMIT = 1.0`` s and ``DEFAULT_GT_TIME_LIMIT_FACTOR =
4.0`` in ``evalplus/config.py``). evalsuite applies the same rule, per sample rather than per test input:

* before a task's samples execute, each problem's canonical solution runs once in the sandbox, as the very
  program a sample becomes (prompt + solution, then the trusted test), and its wall time (fork to verdict,
  what the limit is applied to) is recorded;
* the times are cached per machine, task data (sha256) and evalsuite version under
  ``~/.cache/evalsuite/timeouts/`` (``$EVALSUITE_CACHE_DIR`` or ``$XDG_CACHE_HOME`` move it), each with the
  digest of the program timed (a spec's or plugin's test changed over the same data is timed again), so this
  happens once; ``--recalibrate`` measures again;
* each sample gets ``max(floor, factor x time)``; a problem with no canonical solution, or one that did not pass
  while being timed, gets the fallback limit (``TimeoutPolicy.fallback_s``) and is listed in the record.

Tasks checked EvalPlus's way (``--preset evalplus``: :meth:`~evalsuite.tasks.task.Task.io_test`) get EvalPlus's own
rule instead, per test input, from the ground truth's time on each input (:func:`execute_differential`,
:mod:`evalsuite.execution.differential`).

``--timeout S`` replaces all of it with one fixed limit. Either way a sample over its limit is its own verdict,
"timed out", counted apart from failures.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import socket
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalsuite.environment import hardware
from evalsuite.execution.differential import InputLimits, cache_path, ground_truths, io_jobs
from evalsuite.execution.executor import ExecutionOptions, execute_samples
from evalsuite.flags import flag
from evalsuite.jsonl import safe_file_name, save_to_cache
from evalsuite.records import SampleResult
from evalsuite.tasks.task import Problem, Task
from evalsuite.version import __version__
from sandbox import DEFAULT_TIMEOUT_S, cache_root

DEFAULT_FLOOR_S = 1.0  # EvalPlus DEFAULT_MIN_TIME_LIMIT
DEFAULT_FACTOR = 4.0  # EvalPlus DEFAULT_GT_TIME_LIMIT_FACTOR
# A canonical solution's own limit while it is timed: EvalPlus's cap on one task (EVALPLUS_TIMEOUT_PER_TASK).
CALIBRATION_LIMIT_S = 60.0
CACHE_SCHEMA = "evalsuite.timeout-calibration/2"  # 2: the digest of each timed program


MAX_LIMIT_S = 86_400.0  # a day: a sample's limit past it is a typo (`inf`, `1e10` overflowed the sandbox's clock)
MAX_FACTOR = 1_000.0


def _seconds(value: float) -> bool:
    return 0 < value <= MAX_LIMIT_S  # NaN fails both


def _factor(value: float) -> bool:
    return 0 < value <= MAX_FACTOR


@dataclass(frozen=True)
class TimeoutPolicy:
    """How a sample's wall-clock limit is chosen: one fixed value (``--timeout``), or calibrated per problem.

    The one home of ``--timeout``: the executor is handed the limits this policy chooses."""

    fixed_s: float | None = flag(
        None, "one fixed wall-clock limit for every sample", name="--timeout", metavar="SECONDS",
        check=_seconds, must=f"be positive and at most {MAX_LIMIT_S:g} (a day)",
        default_text=f"calibrated per problem on this machine, max(--timeout-floor, --timeout-factor x the canonical "
                     f"solution's time), as EvalPlus does; {DEFAULT_TIMEOUT_S:g} s for problems without a canonical "
                     "solution")
    floor_s: float = flag(DEFAULT_FLOOR_S, "calibrated limits: the smallest limit (EvalPlus's)", name="--timeout-floor",
                          metavar="SECONDS", check=_seconds, must=f"be positive and at most {MAX_LIMIT_S:g} (a day)")
    factor: float = flag(DEFAULT_FACTOR, "calibrated limits: multiple of the canonical solution's time (EvalPlus's)",
                         name="--timeout-factor", check=_factor, must=f"be positive and at most {MAX_FACTOR:g}")
    recalibrate: bool = flag(False, "time the canonical solutions again instead of using this machine's cached times")

    @property
    def calibrated(self) -> bool:
        return self.fixed_s is None

    @property
    def fallback_s(self) -> float:
        """The limit of a sample no calibration covers: ``--timeout`` when given, else the sandbox's default."""
        return self.fixed_s if self.fixed_s is not None else DEFAULT_TIMEOUT_S

    def limit_for(self, canonical_s: float) -> float:
        return min(max(self.floor_s, self.factor * canonical_s), MAX_LIMIT_S)


# -- the cache -------------------------------------------------------------------------------------------

def machine_fingerprint() -> dict[str, Any]:
    """What makes a canonical solution's time this machine's: host, CPU, memory, interpreter."""
    info = hardware()
    return {"host": socket.gethostname(), "cpu": info.get("cpu"), "cpu_count": info.get("cpu_count"),
            "memory_gib": info.get("memory_gib"), "platform": platform.platform(),
            "python": f"{sys.implementation.name} {platform.python_version()}"}


def machine_key(fingerprint: Mapping[str, Any] | None = None) -> str:
    blob = json.dumps(fingerprint or machine_fingerprint(), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def calibration_path(task: Task) -> Path:
    return (cache_root() / "timeouts" / machine_key()
            / f"{safe_file_name(task.name)}-{task.dataset_sha256[:16]}-evalsuite{__version__}.json")


def timed_program_digest(task: Task, problem: Problem) -> str:
    """The sha256 of the program a problem's calibration times: its canonical solution as the task builds a
    sample's program. Why: the cache is keyed by the data's sha256, but a spec's ``test_field`` or a plugin's
    ``build_program`` can change the test over the same data; a time measured for a light test then set the limit
    of a heavy one, whose correct samples timed out (red-team round 20)."""
    program = task.build_program(problem, task.canonical_completion(problem))
    blob = json.dumps(dataclasses.asdict(program), sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _read_cache(path: Path, task: Task) -> dict[str, Any]:
    """The cached times for this task data on this machine, or an empty entry (missing, stale or unreadable)."""
    empty: dict[str, Any] = {"times_s": {}, "failed": {}, "programs": {}}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return empty
    if (not isinstance(data, dict) or data.get("schema") != CACHE_SCHEMA
            or data.get("dataset_sha256") != task.dataset_sha256 or data.get("evalsuite") != __version__):
        return empty
    return {"times_s": dict(data.get("times_s") or {}), "failed": dict(data.get("failed") or {}),
            "programs": dict(data.get("programs") or {})}


# -- calibration -----------------------------------------------------------------------------------------

@dataclass
class Calibration:
    """Canonical solution times on this machine for some of a task's problems."""

    path: Path
    times_s: dict[str, float]  # task_id -> wall seconds of its passing canonical solution
    failed: dict[str, str]  # task_id -> verdict of a canonical solution that did not pass
    measured_now: int  # problems timed by this call (0: everything came from the cache)


def canonical_samples(task: Task, problems: Sequence[Problem], repeat: int = 1) -> list[dict[str, Any]]:
    """Samples whose completions are the canonical solutions (``repeat`` copies of each), in the form the task
    as executed takes them (a whole program where instruct answers are whole programs)."""
    return [{"task_id": p.task_id, "completion_id": i, "completion": task.canonical_completion(p)}
            for p in problems if p.canonical_solution is not None for i in range(repeat)]


def calibrate(task: Task, problems: Sequence[Problem], options: ExecutionOptions,
              recalibrate: bool = False) -> Calibration:
    """Time the canonical solution of each problem not yet in the cache, once, in the sandbox."""
    task.problems()  # the cache is keyed by the data's sha256, known once loaded
    path = calibration_path(task)
    cached = {"times_s": {}, "failed": {}, "programs": {}} if recalibrate else _read_cache(path, task)
    digests = {p.task_id: timed_program_digest(task, p) for p in problems if p.canonical_solution is not None}
    # A failed canonical solution is timed again next time: it may have failed for a transient reason (a broken
    # checkout, a sandbox that could not start), and a cached failure would fix that run's fallback limits for good.
    todo = [p for p in problems if p.canonical_solution is not None
            and (recalibrate or p.task_id not in cached["times_s"]
                 or cached["programs"].get(p.task_id) != digests[p.task_id])]
    if todo:
        if options.show_progress:
            print(f"timing {len(todo)} canonical solution(s) of {task.name} once, for calibrated timeouts "
                  f"(cached in {path.parent})", file=sys.stderr)
        results, info = execute_samples(task, canonical_samples(task, todo), options,
                                        default_timeout_s=CALIBRATION_LIMIT_S, stage="calibrate")
        for result in results:
            cached["times_s"].pop(result.task_id, None)
            cached["failed"].pop(result.task_id, None)
            cached["programs"][result.task_id] = digests[result.task_id]
            if result.passed:
                cached["times_s"][result.task_id] = round(result.duration_s, 6)
            else:
                cached["failed"][result.task_id] = result.result
        on_disk = _read_cache(path, task)  # another process may have added problems meanwhile
        merged = {key: {**on_disk[key], **cached[key]} for key in ("times_s", "failed", "programs")}
        for task_id in merged["times_s"]:
            merged["failed"].pop(task_id, None)
        save_to_cache(path, {
            "schema": CACHE_SCHEMA, "task": task.name, "dataset_sha256": task.dataset_sha256,
            "evalsuite": __version__, "machine_key": machine_key(), "machine": machine_fingerprint(),
            "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "load_average": list(os.getloadavg()),
            "sandbox": {"mode": info.get("mode"), "workers": info.get("workers")},
            **merged}, "the timeout calibration")
        cached = merged
    # only times of the programs this run's samples become (another process may have timed another version since)
    times = {task_id: seconds for task_id, seconds in cached["times_s"].items()
             if task_id in digests and cached["programs"].get(task_id) == digests[task_id]}
    return Calibration(path=path, times_s=times, failed=cached["failed"], measured_now=len(todo))


def resolve_timeouts(task: Task, problems: Sequence[Problem], options: ExecutionOptions,
                     policy: TimeoutPolicy) -> tuple[dict[str, float] | None, dict[str, Any]]:
    """Each problem's limit under ``policy`` (None when fixed: the executor's default applies), plus the record."""
    if not policy.calibrated:
        return None, {"mode": "fixed", "timeout_s": policy.fixed_s}
    calibration = calibrate(task, problems, options, policy.recalibrate)
    limits: dict[str, float] = {}
    fallback: list[str] = []
    for problem in problems:
        seconds = calibration.times_s.get(problem.task_id)
        if seconds is None:
            fallback.append(problem.task_id)
        else:
            limits[problem.task_id] = round(policy.limit_for(seconds), 6)
    failed = {k: v for k, v in calibration.failed.items() if k in {p.task_id for p in problems}}
    if failed:  # never silent: these problems' samples get the fallback limit, and the task may be broken here
        first = next(iter(failed.items()))
        print(f"warning: {len(failed)} canonical solution(s) of {task.name} did not pass in the sandbox "
              f"(e.g. {first[0]}: {first[1]}); their samples get the fixed limit of {policy.fallback_s:g} s. "
              f"Check with `evalsuite selfcheck --task {task.name}`", file=sys.stderr)
    info = {
        "mode": "calibrated",
        "rule": "max(floor_s, factor x canonical solution's wall time on this machine)",
        "floor_s": policy.floor_s, "factor": policy.factor,
        "defaults_from": "EvalPlus evalplus/config.py: DEFAULT_MIN_TIME_LIMIT = 1.0, "
                         "DEFAULT_GT_TIME_LIMIT_FACTOR = 4.0",
        "cache": str(calibration.path), "machine_key": calibration.path.parent.name,
        "measured_now": calibration.measured_now,
        "fallback_s": policy.fallback_s, "fallback_problems": fallback,
        "canonical_failed": failed,
        "limit_s": limit_span(limits.values()),
        "per_problem_s": limits,
    }
    return limits, info


def limit_span(limits: Iterable[float]) -> dict[str, float]:
    """The smallest, median and largest of some time limits (``limit_s`` in a record), {} for none."""
    values = sorted(limits)
    return {"min": values[0], "median": statistics.median(values), "max": values[-1]} if values else {}


def limit_range(span: Mapping[str, float]) -> str:
    """"1 s" or "1-1.05 s": the spread of calibrated limits, for one-line reports."""
    low, high = span["min"], span["max"]
    return f"{low:.3g} s" if f"{low:.3g}" == f"{high:.3g}" else f"{low:.3g}-{high:.3g} s"


def execute_with_timeouts(task: Task, samples: Sequence[Mapping[str, Any]], options: ExecutionOptions,
                          policy: TimeoutPolicy) -> tuple[list[SampleResult], dict[str, Any]]:
    """:func:`~evalsuite.execution.executor.execute_samples` with each problem's limit chosen by ``policy``; a task
    checked EvalPlus's way (:meth:`~evalsuite.tasks.task.Task.io_test`) gets its limits per input instead."""
    wanted = {sample["task_id"] for sample in samples}
    problems = [p for p in task.problems() if p.task_id in wanted]
    if problems and task.io_test(problems[0]) is not None:
        return execute_differential(task, samples, problems, options, policy)
    limits, timeout_info = resolve_timeouts(task, problems, options, policy)
    results, info = execute_samples(task, samples, options, limits, default_timeout_s=policy.fallback_s)
    info["timeouts"] = timeout_info
    return results, info


def execute_differential(task: Task, samples: Sequence[Mapping[str, Any]], problems: Sequence[Problem],
                         options: ExecutionOptions, policy: TimeoutPolicy) -> tuple[list[SampleResult], dict[str, Any]]:
    """EvalPlus's way: expected outputs and per-input times from the ground truth on this machine (cached), each
    input's limit ``max(floor, factor x its time)`` (or ``--timeout``), then the samples."""
    tests = {}
    for problem in problems:
        test = task.io_test(problem)
        if test is None:  # the caller sends only problems checked by inputs and expected outputs
            raise ValueError(f"{problem.task_id} has no input/output test")
        tests[problem.task_id] = test
    machine = machine_key()
    truths = ground_truths(task, problems, tests, machine, recompute=policy.recalibrate,
                           show_progress=options.show_progress)
    rule = InputLimits(policy.floor_s, policy.factor, policy.fixed_s)
    jobs = io_jobs(task, problems, tests, truths, rule)
    results, info = execute_samples(task, samples, options, default_timeout_s=policy.fallback_s, io_jobs=jobs)
    limits = [limit for job in jobs.values() for s in job.spec["sets"] for limit in s["time_limits"]]
    info["timeouts"] = {
        "mode": "evalplus per input" if policy.calibrated else "fixed per input",
        "rule": "max(floor_s, factor x the ground truth's time on the input, on this machine); each input set "
                "killed after min(60, sum of its limits) + 2 s (evalplus 0.3.1 untrusted_check)",
        "floor_s": policy.floor_s, "factor": policy.factor, "fixed_s": policy.fixed_s,
        "cache": str(cache_path(task, machine)), "machine_key": machine,
        "limit_s": limit_span(limits),
        "inputs": len(limits), "fast_check": True,
    }
    return results, info
