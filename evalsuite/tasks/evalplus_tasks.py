"""HumanEval+ and MBPP+ as ``evalplus.evaluate`` scores them (EvalPlus 0.3.1): each sample gets two verdicts,
``base`` (the original inputs) and ``plus`` (base and the extra inputs), from expected outputs computed from the
ground truth; the run's pass@k is the plus one (EvalPlus's "+" figure), the base one is reported beside it.

Chosen with ``--preset evalplus`` (its ``evaluation: evalplus``), which replaces the tasks ``humaneval-plus`` and
``mbpp-plus`` (bigcode's protocol: the hub copy's ``test`` code) by these, under the same names. The data is an
EvalPlus data file in the release's format (``task_id``, ``prompt``, ``entry_point``, ``canonical_solution``,
``base_input``, ``plus_input``, ``atol``, ``contract``): by default the versions from the evalplus repository's
history in ``evalsuite/tasks/builtin/data/`` (its README says what differs from the releases), or a file given with
``--task-data humaneval-plus=FILE`` (e.g. the release's own ``HumanEvalPlus-v0.1.10.jsonl.gz``).

The file is read as JSON, not through ``datasets``: Arrow gives a column one type, so mixed inputs such as
``[1, 2.5]`` would come back as floats, and ``1`` vs ``1.0`` decides verdicts here (``is_floats``). MBPP+ inputs are
then turned into tuples, sets and complex numbers as ``evalplus.data.mbpp.mbpp_deserialize_inputs`` does.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES, IOTest, Problem, Task

DATA_DIR = Path(__file__).resolve().parent / "builtin" / "data"
FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input", "atol")
# evalplus/eval/_special_oracle.py: the MBPP problems whose expected output is only "not None"
MBPP_OUTPUT_NOT_NONE_TASKS = ("check_str", "text_match_three", "text_starta_endb")
EVALUATIONS = ("evalplus",)  # a preset's ``evaluation``; tasks without one keep their own



@functools.cache
def _shipped_data_sha256(path: Path) -> str:
    """The sha256 a file shipped with evalsuite loads as (its text, gz or not): read once a process."""
    raw = path.read_bytes()
    return hashlib.sha256(gzip.decompress(raw) if path.suffix == ".gz" else raw).hexdigest()

class EvalPlusTask(Task):
    """``humaneval-plus`` or ``mbpp-plus`` from an EvalPlus data file, checked by :mod:`sandbox.differential`."""

    def __init__(self, name: str, dataset: str, default_file: Path, description: str,
                 stop_sequences: Sequence[str] = DEFAULT_STOP_SEQUENCES, data_path: Path | None = None):
        super().__init__(name=name, description=description, stop_sequences=stop_sequences)
        self.dataset = dataset
        self.default_file = default_file
        self.data_path = data_path  # --task-data NAME=FILE
        self._tests: dict[str, IOTest] = {}
        self._provenance: dict[str, Any] = {}
        self.source = str(data_path or default_file)

    # -- data ----------------------------------------------------------------------------------------
    def own_data_sha256(self) -> str | None:
        return _shipped_data_sha256(Path(self.default_file))

    def load_problems(self) -> list[Problem]:
        path = Path(self.data_path or self.default_file)
        raw = path.read_bytes()
        text = gzip.decompress(raw) if path.suffix == ".gz" else raw
        self.dataset_sha256 = hashlib.sha256(text).hexdigest()
        self.source = str(path)
        self._provenance = {"file": str(path), "sha256": self.dataset_sha256, "format": "EvalPlus data file",
                            "evaluation": "evalplus 0.3.1 evaluate (base and plus inputs)"}
        problems = []
        for line_number, line in enumerate(text.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [f for f in FIELDS if f not in row]
            if missing:
                raise EvalsuiteError(f"{path}:{line_number}: not an EvalPlus data row (missing {', '.join(missing)})")
            problems.append(self.problem_from_row(row))
        return problems

    def problem_from_row(self, row: dict[str, Any]) -> Problem:
        task_id, entry_point = str(row["task_id"]), str(row["entry_point"])
        base, plus = row["base_input"], row["plus_input"]
        if self.dataset == "mbpp":
            base, plus = mbpp_deserialize_inputs(task_id, base), mbpp_deserialize_inputs(task_id, plus)
        self._tests[task_id] = IOTest(self.dataset, row["prompt"] + row["canonical_solution"],
                                      {"base": base, "plus": plus}, float(row["atol"]),
                                      self.dataset == "mbpp" and entry_point in MBPP_OUTPUT_NOT_NONE_TASKS)
        return Problem(task_id=task_id, prompt=self.prompt_of(row), test="", entry_point=entry_point,
                       canonical_solution=row["canonical_solution"], extra={"evalplus_prompt": row["prompt"]})

    def prompt_of(self, row: dict[str, Any]) -> str:
        """HumanEval+: the prompt as is. MBPP+: the release's (v0.2.0) docstring of the description and the first
        test, rebuilt where the file holds the November 2023 form (the description in ``'''``, tests apart)."""
        prompt = row["prompt"]
        if self.dataset != "mbpp" or not prompt.startswith("'''"):
            return prompt
        text = prompt.strip().strip("'").strip()
        first = next((line.strip() for line in str(row.get("assertion", "")).splitlines() if line.strip()), "")
        return f'"""\n{text}\n{first}\n"""\n' if first else f'"""\n{text}\n"""\n'

    def io_test(self, problem: Problem) -> IOTest:
        self.problems()
        return self._tests[problem.task_id]

    def provenance(self) -> dict[str, Any]:
        self.problems()
        return dict(self._provenance)

    def canonical_completion(self, problem: Problem) -> str:
        return problem.canonical_solution or ""


def for_evaluation(task: Task, evaluation: str) -> Task:
    """The task a preset's ``evaluation`` asks for: ``evalplus`` swaps ``humaneval-plus`` and ``mbpp-plus`` for
    their :class:`EvalPlusTask` (keeping a ``--task-data`` file); every other task is kept."""
    if not evaluation:
        return task
    if evaluation not in EVALUATIONS:
        raise EvalsuiteError(f"unknown evaluation {evaluation!r}; known: {', '.join(EVALUATIONS)}")
    data_path = getattr(task, "data_path", None)
    if task.name == "humaneval-plus":
        return EvalPlusTask("humaneval-plus", "humaneval", DATA_DIR / "HumanEvalPlus-2023-04.jsonl.gz",
                            "EvalPlus HumanEval+ as evalplus.evaluate scores it (base and plus inputs)",
                            data_path=data_path)
    if task.name == "mbpp-plus":
        from evalsuite.tasks.builtin.task_mbpp import STOP_SEQUENCES

        return EvalPlusTask("mbpp-plus", "mbpp", DATA_DIR / "MbppPlus-2023-11.jsonl.gz",
                            "EvalPlus MBPP+ as evalplus.evaluate scores it (base and plus inputs)",
                            stop_sequences=STOP_SEQUENCES, data_path=data_path)
    return task


# -- evalplus/data/mbpp.py: mbpp_deserialize_inputs, the types JSON cannot hold --------------------------------
_TUPLE_ARGS = {2, 116, 132, 143, 222, 261, 273, 394, 399, 421, 424, 429, 470, 560, 579, 596, 616, 630, 726, 740,
               744, 809}
_TUPLES_IN_LISTS = {63, 64, 70, 94, 120, 237, 272, 299, 400, 409, 417, 438, 473, 614, 780}
_FIRST_LIST_OF_TUPLES = {75, 413, 444, 753}
_FIRST_ARG_TUPLE = {250, 405, 446, 617, 720, 763, 808}


def _all_tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_all_tuples(item) for item in value)
    return value


def mbpp_deserialize_inputs(task_id: str, inputs: list) -> list:
    """EvalPlus 0.3.1's ``mbpp_deserialize_inputs``, rule for rule (tests compare it with the package's own)."""
    number = int(task_id.split("/")[-1])
    if number in _TUPLE_ARGS:
        return [[tuple(lst) for lst in inp] for inp in inputs]
    if number in _TUPLES_IN_LISTS:
        return [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]
    if number in _FIRST_LIST_OF_TUPLES:
        return [[[tuple(lst) for lst in inp[0]]] + [inp[1]] for inp in inputs]
    if number in (106, 750):
        return [[inp[0]] + [tuple(inp[1])] for inp in inputs]
    if number == 115:
        return [[[set(item) if isinstance(item, list) and len(item) else {} for item in inp[0]]] for inp in inputs]
    if number == 124:
        return [(float(inp[0]), complex(inp[1])) for inp in inputs]
    if number in _FIRST_ARG_TUPLE:
        return [[tuple(inp[0])] + [inp[1]] for inp in inputs]
    if number in (259, 401, 445):
        modified = [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]
        return [[tuple(lst) for lst in inp] for inp in modified]
    if number == 278:
        modified = [[[tuple(item) if isinstance(item, list) else item for item in inp[0]]] for inp in inputs]
        return [[tuple(lst) for lst in inp] for inp in modified]
    if number == 307:
        return [[tuple(inp[0])] + [inp[1], inp[2]] for inp in inputs]
    if number == 722:
        return [[{key: tuple(value) for key, value in inp[0].items()}] + inp[1:] for inp in inputs]
    if number == 252:
        return [[complex(inp[0])] for inp in inputs]
    if number in (580, 615, 791):
        return [_all_tuples(inp) for inp in inputs]
    return inputs
