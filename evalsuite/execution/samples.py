"""Reading a samples file: one ``{"task_id": ..., "completion": ...}`` object per line (human-eval's format:
the completion runs after the task's prompt) or ``{"task_id": ..., "solution": ...}`` (EvalPlus's: a whole
program, run alone, as instruct-style answers are). A file holds one kind or the other. A ``completion`` row
marked ``"prompt_style": "instruct"`` or ``"whole_program": true`` (an instruct run's own completions.jsonl, or a
base run's under EvalPlus's direct completion: the program made from the model's answer) is a whole program too, as
the run itself executed it.

Every problem is reported as ``FILE:LINE: what is wrong``, before any sample runs. ``completion_id`` is assigned
per task in file order (0-based), as human-eval does, unless the rows carry their own (an evalsuite run's
``completions.jsonl``, written in the order completions finished): then each keeps it, so results join back to
their completions, and one (task_id, completion_id) twice (a file concatenated with itself) is refused; extra keys
are kept and passed through. A ``solution`` row's
text is also put under ``completion`` (what the sandbox stage reads), with ``"kind": "solution"``.

Lone surrogates (valid JSON: ``"\ud800"``, but not text UTF-8 can hold): the code that runs is never altered, so
a ``completion`` or ``solution`` holding one is refused, as is a ``task_id`` (it names the problem everywhere).
Every other field is only shown (``raw_completion``, ``finish_reason``, extra keys): its lone surrogates are kept
as their visible escape (:func:`evalsuite.untrusted.storable`), so that every writer can write the row.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import read_jsonl
from evalsuite.untrusted import first_lone_surrogate, storable


def read_samples(path: str | Path, known_task_ids: Collection[str], task_name: str) -> list[dict[str, Any]]:
    """The samples of ``path`` in file order, validated against the task's problem ids."""
    path = Path(path)
    samples: list[dict[str, Any]] = []
    kinds: set[str] = set()
    next_id: dict[str, int] = {}
    seen: dict[tuple[str, int], int] = {}  # (task_id, completion_id) -> line
    labelled: bool | None = None  # whether the rows carry their own completion_id (all or none)
    for line, row in read_jsonl(path):
        if not isinstance(row, dict):
            raise EvalsuiteError(f"{path}:{line}: expected a JSON object per line")
        field = "completion" if "completion" in row else "solution" if "solution" in row else None
        # an instruct (or EvalPlus direct-completion) run's rows hold the whole program made from the answer
        whole = field == "completion" and (row.get("prompt_style") == "instruct" or row.get("whole_program") is True)
        kind = "solution" if whole else field
        if "task_id" not in row or kind is None or field is None:
            missing = ["task_id"] if "task_id" not in row else []
            missing += [] if kind else ["completion (human-eval) or solution (EvalPlus)"]
            raise EvalsuiteError(f"{path}:{line}: missing field(s) {', '.join(missing)}")
        if "completion" in row and "solution" in row:
            raise EvalsuiteError(f"{path}:{line}: has both completion and solution; keep one")
        if kinds and kind not in kinds:
            raise EvalsuiteError(f"{path}:{line}: a {kind} row in a file of {kinds.pop()} rows; one kind per file")
        kinds.add(kind)
        task_id, completion = row["task_id"], row[field]
        if not isinstance(task_id, str):
            raise EvalsuiteError(f"{path}:{line}: task_id must be a string, got {type(task_id).__name__}")
        if not isinstance(completion, str):
            raise EvalsuiteError(f"{path}:{line}: {field} must be a string, got {type(completion).__name__}")
        for name, text in (("task_id", task_id), (field, completion)):
            at = first_lone_surrogate(text)
            if at is not None:
                raise EvalsuiteError(f"{path}:{line}: {name} is not valid Unicode (lone surrogate escape "
                                     f"\\u{ord(text[at]):04x} at character {at}); nothing was run")
        if task_id not in known_task_ids:
            raise EvalsuiteError(f"{path}:{line}: task_id {task_id!r} is not a problem of task {task_name!r}")
        sample = storable(dict(row))  # display-only fields; the code and the task id hold no surrogate
        sample["completion"], sample["kind"] = completion, kind
        given = row.get("completion_id")
        if labelled is not None and labelled != (given is not None):
            raise EvalsuiteError(f"{path}:{line}: completion_id on some rows only; give it on every row or on none")
        labelled = given is not None
        if labelled:
            if type(given) is not int or given < 0:
                raise EvalsuiteError(f"{path}:{line}: completion_id must be a non-negative integer, got {given!r}")
            if (task_id, given) in seen:
                raise EvalsuiteError(f"{path}:{line}: {task_id} completion {given} appears twice (first on line "
                                     f"{seen[task_id, given]}); each completion once")
            seen[task_id, given] = line
            sample["completion_id"] = given
        else:
            sample["completion_id"] = next_id.get(task_id, 0)
            next_id[task_id] = sample["completion_id"] + 1
        samples.append(sample)
    if not samples:
        raise EvalsuiteError(f"{path}: no samples")
    return samples
