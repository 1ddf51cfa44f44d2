"""MBPP+ (EvalPlus, Liu et al. 2023, https://arxiv.org/abs/2305.01210): sanitized MBPP with many more tests.

Loaded from the hub copy the EvalPlus authors publish, https://huggingface.co/datasets/evalplus/mbppplus (split
``test``; fields ``task_id``, ``code``, ``prompt``, ``source_file``, ``test_imports``, ``test_list``, ``test``).
Its ``test`` field is a script: helper ``assertion(out, exp, atol)``, ``inputs`` and ``results`` lists, and a
loop calling the function by name, ``assertion(fn(*inp), exp, 0)``; it holds the base tests and the extra ones.

Protocol of bigcode-evaluation-harness (``bigcode_eval/tasks/mbppplus.py``, EvalPlus's own MBPP+ prompt is the
same): MBPP's docstring prompt built from ``prompt`` and ``test_list[0]``, MBPP's stop sequences, and the program
prompt + completion checked by ``test`` alone, as bigcode's ``get_reference`` gives it (``test_imports`` are not
run: a completion that uses ``math`` without importing it fails there, and here; the twenty-third session's parity
round found it passing). The function's name is the one the tests call that the canonical ``code`` defines.
Problem ids are ``Mbpp/<task_id>``.
"""

from __future__ import annotations

from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.builtin.task_mbpp import STOP_SEQUENCES
from evalsuite.tasks.dataset_tasks import DatasetSpec, DatasetTask
from evalsuite.tasks.datasets_loader import HubSource

HUB_ID = "evalplus/mbppplus"
# "Upload README.md with huggingface_hub": data/test-00000-of-00001-d5781c9c51e02795.parquet and the README that
# declares it as the test split.
REVISION = "9a36f31e81d5e1670b68e6de8ef23da0c4e1abb5"

SPEC = DatasetSpec(
    name="mbpp-plus",
    description="EvalPlus MBPP+: sanitized MBPP problems with many more tests (test split)",
    hub=HubSource(HUB_ID, REVISION, split="test"),
    prompt_template='"""\n{prompt}\n{test_list[0]}\n"""\n',
    stop_sequences=STOP_SEQUENCES,
    test_field="test",
    test_style="script",
    solution_field="code",
    id_prefix="Mbpp/",
    citation="Liu et al. 2023 (arXiv:2305.01210); bigcode-evaluation-harness bigcode_eval/tasks/mbppplus.py",
    problem_count=378,  # the release v0.2.0's problems, as this revision holds them
)


@hookimpl
def evalsuite_register_tasks():
    return [DatasetTask(SPEC)]
