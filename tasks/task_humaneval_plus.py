"""HumanEval+ (EvalPlus): HumanEval's problems with many more test inputs.

EvalPlus ships its data as JSON lines with ``base_input`` and ``plus_input`` (lists of argument lists)
and ``atol``; expected outputs come from running the canonical solution on the same inputs inside the
sandbox. Give the file with ``--task-data humaneval-plus=PATH`` (``.jsonl`` or ``.jsonl.gz``).
"""

from __future__ import annotations

import json
from pathlib import Path

from evalsuite import hookimpl
from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import read_jsonl, sha256_file
from evalsuite.task import Problem, Task

REQUIRED_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution")

# Trusted test code: the reference solution runs in its own namespace, so a candidate that redefines
# helpers cannot change the expected outputs.
TEST_TEMPLATE = '''
import copy as _copy, json as _json, math as _math

_REF_NS = {{}}
exec(compile({reference!r}, "<reference>", "exec"), _REF_NS)
_REFERENCE = _REF_NS[{entry_point!r}]
_INPUTS = _json.loads({inputs!r})
_ATOL = {atol!r}


def _same(got, expected):
    if isinstance(expected, float) or (isinstance(got, float) and isinstance(expected, int)):
        return (isinstance(got, (int, float)) and not isinstance(got, bool)
                and _math.isclose(got, expected, rel_tol=0.0, abs_tol=max(_ATOL, 1e-6)))
    if isinstance(expected, (list, tuple)):
        return (type(got) is type(expected) and len(got) == len(expected)
                and all(_same(g, e) for g, e in zip(got, expected)))
    return type(got) is type(expected) and got == expected


def check(candidate):
    for args in _INPUTS:
        expected = _REFERENCE(*_copy.deepcopy(args))
        got = candidate(*_copy.deepcopy(args))
        assert _same(got, expected), "wrong output"
'''


def load_evalplus_file(path: Path) -> list[Problem]:
    problems = []
    for line, row in read_jsonl(path):
        missing = [key for key in REQUIRED_FIELDS if key not in row]
        if missing:
            raise EvalsuiteError(f"{path}:{line}: missing field(s) {', '.join(missing)}")
        inputs = list(row.get("base_input", [])) + list(row.get("plus_input", []))
        if not inputs:
            raise EvalsuiteError(f"{path}:{line}: no base_input or plus_input")
        test = TEST_TEMPLATE.format(reference=row["prompt"] + row["canonical_solution"],
                                    entry_point=row["entry_point"], inputs=json.dumps(inputs),
                                    atol=float(row.get("atol") or 0.0))
        problems.append(Problem(task_id=row["task_id"], prompt=row["prompt"], test=test,
                                entry_point=row["entry_point"], canonical_solution=row["canonical_solution"],
                                extra={"n_inputs": len(inputs)}))
    return problems


class HumanEvalPlus(Task):
    name = "humaneval-plus"
    description = "EvalPlus HumanEval+: HumanEval with extra tests (file given by --task-data humaneval-plus=PATH)"

    def __init__(self, data_path: str | Path | None = None):
        super().__init__()
        self.data_path = Path(data_path) if data_path else None

    def load_problems(self) -> list[Problem]:
        if self.data_path is None:
            raise EvalsuiteError("task humaneval-plus needs its data file: --task-data humaneval-plus=PATH "
                                 "(EvalPlus's HumanEvalPlus.jsonl.gz)")
        self.source = str(self.data_path)
        self.dataset_sha256 = sha256_file(self.data_path)
        return load_evalplus_file(self.data_path)


@hookimpl
def evalsuite_register_tasks():
    return [HumanEvalPlus()]
