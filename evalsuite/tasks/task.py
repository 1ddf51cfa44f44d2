"""The task contract: a task is a dataset of problems plus the rules that turn a completion into a program.

Plugins subclass :class:`Task` (or instantiate it directly) and return instances from the
``evalsuite_register_tasks`` hook (see :mod:`evalsuite.hookspecs`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Codex-paper stop sequences for HumanEval-style function completion.
DEFAULT_STOP_SEQUENCES: tuple[str, ...] = ("\ndef", "\nclass", "\nif", "\nprint", "\n#")


@dataclass(frozen=True)
class Problem:
    """One benchmark problem: the model completes ``prompt``; ``test`` checks the result."""

    task_id: str
    prompt: str
    test: str
    entry_point: str
    canonical_solution: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class IOTest:
    """A problem checked by inputs and expected outputs (EvalPlus's differential testing) instead of test code."""

    dataset: str  # "humaneval" or "mbpp": which of EvalPlus's special oracles apply
    ground_truth: str  # the program whose outputs are expected (prompt + canonical solution)
    sets: dict[str, Sequence[Sequence[Any]]]  # "base", "plus" -> inputs (argument lists), in order
    atol: float
    output_not_none: bool = False  # EvalPlus compares only ``output is not None`` (three MBPP problems)


@dataclass(frozen=True)
class Program:
    """What the sandbox runs for one sample.

    ``candidate`` is untrusted (prompt + completion) and runs alone in a jailed process. The rest is
    trusted and runs in the checker, another process: ``prelude`` (definitions the test may use, such as
    the prompt's helper functions: the test sees these, never the candidate's versions of them), ``test``
    (compiled once per ``problem_key``) and ``check``, the statement that runs the tests. ``entry_point`` is
    the candidate's function the test calls (through the call channel); by default read from ``check(name)``.
    ``wrapper``: the function the task wrapped module-level asserts or a script in (bigcode's MBPP program runs them
    as module code): they name the entry point at each call, so a candidate that rebinds the name is called as
    rebound; empty where the test binds it once, as ``check(entry_point)`` does. ``whole_program``: the candidate
    replaces the prompt (an instruct answer, EvalPlus's ``solution``), so the prelude's definitions reach the test
    only where the candidate defined the same names (the peer's test sees only the program's).
    """

    problem_key: str
    candidate: str
    test: str
    check: str
    prelude: str = ""
    entry_point: str = ""
    wrapper: str = ""
    whole_program: bool = False


def truncate_at_stop(text: str, stop_sequences: Sequence[str]) -> str:
    """Cut ``text`` at the earliest occurrence of any stop sequence."""
    cut = len(text)
    for stop in stop_sequences:
        if stop:
            at = text.find(stop)
            if at != -1 and at < cut:
                cut = at
    return text[:cut]


def problems_sha256(problems: Sequence[Problem]) -> str:
    """A content hash for datasets defined in code (file-backed tasks record the file's own sha256)."""
    blob = json.dumps([[p.task_id, p.prompt, p.test, p.entry_point, p.canonical_solution] for p in problems],
                      ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


class Task:
    """A benchmark. Override what differs; the defaults implement HumanEval's protocol."""

    name: str = "unnamed"
    description: str = ""
    problem_count: int | None = None  # how many problems the task's own data holds, where that is known
    stop_sequences: tuple[str, ...] = DEFAULT_STOP_SEQUENCES
    # the plugin that registered it ("builtin:task_humaneval", "spec:...", "dir:...", "entrypoint:..."; the
    # registry sets it): a plugin's own Python code may decide its prompts, which the run's key then names
    registered_by: str = ""

    def __init__(self, name: str | None = None, problems: Sequence[Problem] | None = None,
                 description: str | None = None, dataset_sha256: str = "",
                 stop_sequences: Sequence[str] | None = None, source: str = ""):
        if name is not None:
            self.name = name
        if description is not None:
            self.description = description
        if stop_sequences is not None:
            self.stop_sequences = tuple(stop_sequences)
        self._problems = list(problems) if problems is not None else None
        self.dataset_sha256 = dataset_sha256
        self.source = source  # where the dataset came from, for the run record

    # -- dataset -----------------------------------------------------------------------------------
    def load_problems(self) -> list[Problem]:
        """Read the dataset. Subclasses with lazy data override this; it is called once."""
        raise NotImplementedError(f"task {self.name!r} has no problems")

    def own_data_sha256(self) -> str | None:
        """The sha256 of the data the task ships or pins, where it can be known here; None otherwise. A run whose
        ``dataset_sha256`` differs (a --task-data copy with other rows) is labelled other data in every view."""
        return None

    def runs_on_other_data(self) -> bool:
        """Whether the data loaded is not the task's own, as far as can be known: another sha256 than
        :meth:`own_data_sha256`, or more problems than the benchmark has (fewer: a part of it, labelled partial)."""
        if self.problem_count is not None and len(self.problems()) > self.problem_count:
            return True
        own = self.own_data_sha256()
        return own is not None and bool(self.dataset_sha256) and self.dataset_sha256 != own

    def problems(self) -> list[Problem]:
        if self._problems is None:
            self._problems = list(self.load_problems())
        if not self.dataset_sha256:
            self.dataset_sha256 = problems_sha256(self._problems)
        return self._problems

    def provenance(self) -> dict[str, Any]:
        """Where the data came from, for the run record (hub id and revision, local files); {} if nothing to add."""
        return {}

    # -- prompting and post-processing -------------------------------------------------------------
    def format_prompt(self, problem: Problem) -> str:
        """The exact text given to the model. HumanEval: the prompt as is."""
        return problem.prompt

    @property
    def prompt_template(self) -> str:
        """A description of :meth:`format_prompt`, recorded in the run record."""
        return "{prompt}"

    def postprocess(self, problem: Problem, completion: str) -> str:
        """Clean a raw completion before execution: cut at the task's stop sequences."""
        return truncate_at_stop(completion, self.stop_sequences)

    # -- execution ---------------------------------------------------------------------------------
    def build_program(self, problem: Problem, completion: str) -> Program:
        """HumanEval's rule: prompt + completion, then the test code, then ``check(entry_point)``."""
        return Program(
            problem_key=f"{self.name}/{problem.task_id}",
            candidate=problem.prompt + completion,
            test=problem.test,
            check=f"check({problem.entry_point})",
            prelude=problem.prompt,
            entry_point=problem.entry_point,
        )

    def io_test(self, problem: Problem) -> IOTest | None:
        """The problem's inputs and expected outputs where it is checked EvalPlus's way; None: by its test code."""
        return None

    def canonical_completion(self, problem: Problem) -> str:
        """The canonical solution in the form this task's completions take (the body that follows the prompt)."""
        return problem.canonical_solution or ""

    def build_solution_program(self, problem: Problem, solution: str) -> Program:
        """An instruct-style answer is a whole program (EvalPlus runs the sanitized solution alone): it
        replaces prompt + completion; the trusted test and check stay the task's, and the prompt's definitions
        reach the test only where the program defines them too."""
        return dataclasses.replace(self.build_program(problem, ""), candidate=solution, whole_program=True)

    def __repr__(self) -> str:
        return f"<Task {self.name}>"
