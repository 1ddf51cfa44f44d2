"""HumanEval+ (EvalPlus, Liu et al. 2023, https://arxiv.org/abs/2305.01210): HumanEval with many more tests.

Loaded from the hub copy the EvalPlus authors publish, https://huggingface.co/datasets/evalplus/humanevalplus
(split ``test``; fields ``task_id``, ``prompt``, ``canonical_solution``, ``entry_point``, ``test``). Its ``test``
defines ``check(candidate)`` over the base and extra inputs with their expected outputs, like HumanEval's, and
ends with ``check(<entry point>)``; evalsuite drops that call and makes it itself.

Protocol: HumanEval's (the prompt as is, the Codex stop sequences, prompt + completion checked by ``check``),
which is how EvalPlus and bigcode-evaluation-harness (``bigcode_eval/tasks/humanevalplus.py``) run it.
"""

from __future__ import annotations

from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.dataset_tasks import DatasetSpec, DatasetTask
from evalsuite.tasks.datasets_loader import HubSource

HUB_ID = "evalplus/humanevalplus"
# The repository's head when its README was last changed (2024-05-01): data/test-00000-of-00001-*.parquet.
REVISION = "d32357cf319e50e9c8d8dab5ea876c72b0fd321b"

SPEC = DatasetSpec(
    name="humaneval-plus",
    description="EvalPlus HumanEval+: the 164 HumanEval problems with many more tests",
    hub=HubSource(HUB_ID, REVISION, split="test"),
    prompt_template="{prompt}",
    test_field="test",
    test_style="check",
    entry_point_field="entry_point",
    solution_field="canonical_solution",
    citation="Liu et al. 2023 (arXiv:2305.01210); HumanEval's protocol (Chen et al. 2021)",
    problem_count=164,
)


@hookimpl
def evalsuite_register_tasks():
    return [DatasetTask(SPEC)]
