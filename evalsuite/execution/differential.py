"""EvalPlus's differential testing, harness side: expected outputs and per-input time limits for the tasks whose
problems are checked by inputs and outputs (:class:`~evalsuite.tasks.evalplus_tasks.EvalPlusTask`), handed to the
sandbox as each job's ``io`` problem (:mod:`sandbox.differential` compares there, in the trusted checker).

As ``evalplus.evaluate`` does: the expected outputs are the ground truth's, computed on this machine
(:mod:`sandbox.groundtruth`, a process of its own) and cached per machine, task data and evalsuite version under
``~/.cache/evalsuite/evalplus/`` (EvalPlus caches them per data hash in ``~/.cache/evalplus``); each input's limit
is ``max(floor, factor x the ground truth's time on it)`` (EvalPlus: ``min_time_limit`` 1.0 s,
``gt_time_limit_factor`` 4.0, the defaults of ``--timeout-floor`` and ``--timeout-factor``), or ``--timeout`` for
every input.
"""

from __future__ import annotations

import hashlib
import marshal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import safe_file_name, save_to_cache
from evalsuite.tasks.task import IOTest, Problem, Task
from evalsuite.version import __version__
from sandbox import DEFAULT_TIMEOUT_PER_TASK_S, InputSet, cache_root
from sandbox import compute_ground_truth as compute

CACHE_SCHEMA = "evalsuite.evalplus-groundtruth/2"  # 2: Counter and OrderedDict outputs tagged
# What one problem's inputs and expected outputs may take in a frame to the checker (whose address space is 2 GiB):
# MBPP+'s Mbpp/255 (760 MB of expected outputs, in the November 2023 data) is over it; EvalPlus holds it all.
MAX_IO_BYTES = 192 << 20


@dataclass(frozen=True)
class GroundTruth:
    """One problem's expected outputs and the ground truth's time on each input, per input set."""

    expected: dict[str, list[Any]]
    times_s: dict[str, list[float]]
    typed: frozenset[str] = frozenset()  # the sets whose expected outputs hold a Counter or OrderedDict, tagged


@dataclass(frozen=True)
class IOJob:
    """What the sandbox needs to check one problem's samples EvalPlus's way (:class:`sandbox.Job`'s ``io``)."""

    spec: dict[str, Any]
    digest: str
    budget_s: float  # the harness's wait for one sample: every set's budget
    too_large: bool = False  # more data than a checker may be sent (MAX_IO_BYTES): its samples cannot be checked


@dataclass(frozen=True)
class InputLimits:
    """How each input's limit is chosen (``TimeoutPolicy``'s values): ``max(floor_s, factor x ground truth's time)``,
    or ``fixed_s`` for every input."""

    floor_s: float
    factor: float
    fixed_s: float | None = None

    def limit_for(self, ground_truth_s: float) -> float:
        return self.fixed_s if self.fixed_s is not None else max(self.floor_s, self.factor * ground_truth_s)


def cache_path(task: Task, machine: str) -> Path:
    """The folder of a task's cached ground truths on this machine (``machine``:
    :func:`evalsuite.execution.timeouts.machine_key`), one file per problem: MBPP+'s outputs reach 760 MB for one
    problem (Mbpp/255), and a run of a few problems reads only theirs."""
    return (cache_root() / "evalplus" / machine
            / f"{safe_file_name(task.name)}-{task.dataset_sha256[:16]}-evalsuite{__version__}")


def _problem_file(folder: Path, task_id: str) -> Path:
    return folder / (safe_file_name(task_id) + ".marshal")


def _read_cached(folder: Path, task_id: str) -> dict[str, Any] | None:
    try:
        data = marshal.loads(_problem_file(folder, task_id).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("schema") != CACHE_SCHEMA or data.get("task_id") != task_id:
        return None
    return data["sets"]


def _write_cached(folder: Path, task_id: str, sets: Mapping[str, Any]) -> None:
    save_to_cache(_problem_file(folder, task_id),
                  marshal.dumps({"schema": CACHE_SCHEMA, "task_id": task_id, "sets": dict(sets)}),
                  "EvalPlus's expected outputs")


def ground_truths(task: Task, problems: Sequence[Problem], tests: Mapping[str, IOTest], machine: str,
                  recompute: bool = False, show_progress: bool = True) -> dict[str, GroundTruth]:
    """Every problem's :class:`GroundTruth`, computed once per machine (cached) as EvalPlus computes it."""
    path = cache_path(task, machine)
    cached: dict[str, Any] = {}
    if not recompute:
        for p in problems:
            sets = _read_cached(path, p.task_id)
            if sets is not None:
                cached[p.task_id] = sets
    todo = [p for p in problems if p.task_id not in cached]
    if todo:
        if show_progress:
            print(f"computing EvalPlus expected outputs of {len(todo)} problem(s) of {task.name} from the ground "
                  f"truth, once (cached in {path.parent})", file=sys.stderr)
        started = time.perf_counter()
        jobs = [{"task_id": p.task_id, "program": tests[p.task_id].ground_truth, "entry_point": p.entry_point,
                 "sets": {name: list(inputs) for name, inputs in tests[p.task_id].sets.items()},
                 "output_not_none": tests[p.task_id].output_not_none} for p in todo]
        errors = {}
        for result in compute(jobs):
            if "error" in result:
                errors[result["task_id"]] = result["error"]
            else:
                cached[result["task_id"]] = result["sets"]
                _write_cached(path, result["task_id"], result["sets"])
        missing = [p.task_id for p in todo if p.task_id not in cached]
        if missing:
            first = missing[0]
            raise EvalsuiteError(f"task {task.name}: the ground truth of {len(missing)} problem(s) did not run "
                                 f"(e.g. {first}: {errors.get(first, 'no answer')}); its expected outputs are unknown")
        if show_progress:
            print(f"expected outputs computed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return {p.task_id: GroundTruth({n: v["expected"] for n, v in cached[p.task_id].items()},
                                   {n: v["times"] for n, v in cached[p.task_id].items()},
                                   frozenset(n for n, v in cached[p.task_id].items() if v.get("typed")))
            for p in problems}


def io_jobs(task: Task, problems: Sequence[Problem], tests: Mapping[str, IOTest], truths: Mapping[str, GroundTruth],
            limits_rule: InputLimits, fast_check: bool = True) -> dict[str, IOJob]:
    """Each problem's sandbox ``io`` problem: inputs, expected outputs, per-input limits, EvalPlus's settings."""
    out: dict[str, IOJob] = {}
    for problem in problems:
        test, truth = tests[problem.task_id], truths[problem.task_id]
        sets: list[dict[str, Any]] = []
        for name, inputs in test.sets.items():
            limits = [limits_rule.limit_for(t) for t in truth.times_s[name]]
            sets.append({"name": name, "inputs": list(inputs), "expected": truth.expected[name],
                         "time_limits": limits, "typed": name in truth.typed})
        spec = {"dataset": test.dataset, "entry_point": problem.entry_point, "atol": test.atol,
                "fast_check": fast_check, "per_task_cap_s": DEFAULT_TIMEOUT_PER_TASK_S, "sets": sets}
        digest = hashlib.sha256(f"{task.dataset_sha256}:{problem.task_id}:{fast_check}:".encode()
                                + marshal.dumps([s["time_limits"] for s in sets])).hexdigest()
        budget = sum(InputSet(s["name"], s["inputs"], s["expected"], s["time_limits"]).budget_s(fast_check)
                     for s in sets)
        size = len(marshal.dumps(spec))
        out[problem.task_id] = IOJob(spec, digest, budget + 1.0, too_large=size > MAX_IO_BYTES)
    return out
