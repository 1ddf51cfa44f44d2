r'''MBPP (Austin et al. 2021, https://arxiv.org/abs/2108.07732): crowd-sourced basic Python problems.

Two tasks, the dataset's two configs on the hub, as the original authors publish them
(https://huggingface.co/datasets/google-research-datasets/mbpp):

* ``mbpp``: the ``full`` config's ``test`` split (500 problems; fields ``task_id``, ``text``, ``code``,
  ``test_list``, ``test_setup_code``, ``challenge_test_list``);
* ``mbpp-sanitized``: the ``sanitized`` config's ``test`` split (257 hand-verified problems; ``prompt`` instead
  of ``text``, ``test_imports`` instead of ``test_setup_code``).

Protocol as bigcode-evaluation-harness runs it (``bigcode_eval/tasks/mbpp.py``; EvalPlus builds MBPP+ prompts the
same way): the prompt is a docstring holding the description and the first test,
``'"""\n{text}\n{test_list[0]}\n"""\n'``; generation stops at ``"\nclass"``, ``"\nassert"``, ``'\n"""'``,
``"\nprint"``, ``"\nif"``, ``"\n<|/"`` or ``"\n```"``; the program is prompt + completion, and it passes when
every assert of ``test_list`` holds, after ``test_setup_code`` (or ``test_imports``) as in the original
evaluation. ``challenge_test_list`` is not run (nor is it by bigcode or EvalPlus). Problem ids are
``Mbpp/<task_id>``, as EvalPlus names them.

Under ``--preset bigcode`` the prompt is given as is (bigcode strips HumanEval's prompts, not MBPP's). bigcode runs
``test_list`` without ``test_setup_code``; of the 500 test problems only 367 has setup code, which uses the
solution's own class, so its canonical solution fails there and here alike (a completion that builds the trees the
asserts read passes there and not here: docs/sandbox.md, "Open"). Compared with bigcode's own code on the
real data: docs/benchmarks.md, "MBPP against the peers' own code".
'''

from __future__ import annotations

from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.dataset_tasks import DatasetSpec, DatasetTask
from evalsuite.tasks.datasets_loader import HubSource

HUB_ID = "google-research-datasets/mbpp"
# The commit "Convert dataset to Parquet (#4)": the full/ and sanitized/ parquet files, readable by datasets >= 4
# (earlier revisions hold a loading script, which datasets no longer runs).
REVISION = "4bb6404fdc6cacfda99d4ac4205087b89d32030c"
STOP_SEQUENCES = ("\nclass", "\nassert", '\n"""', "\nprint", "\nif", "\n<|/", "\n```")
CITATION = ("Austin et al. 2021 (arXiv:2108.07732); prompt and stop sequences of bigcode-evaluation-harness "
            "bigcode_eval/tasks/mbpp.py")


def mbpp_spec(config: str) -> DatasetSpec:
    full = config == "full"
    description_field = "text" if full else "prompt"
    return DatasetSpec(
        name="mbpp" if full else "mbpp-sanitized",
        description=("MBPP, full: 500 crowd-sourced basic Python problems (test split)" if full else
                     "MBPP, sanitized: 257 hand-verified basic Python problems (test split)"),
        hub=HubSource(HUB_ID, REVISION, config=config, split="test"),
        prompt_template='"""\n{' + description_field + '}\n{test_list[0]}\n"""\n',
        stop_sequences=STOP_SEQUENCES,
        test_field="test_list",
        test_style="asserts",
        setup_fields=("test_setup_code",) if full else ("test_imports",),
        solution_field="code",
        id_prefix="Mbpp/",
        citation=CITATION,
        problem_count=500 if full else 257,
    )


@hookimpl
def evalsuite_register_tasks():
    return [DatasetTask(mbpp_spec("full")), DatasetTask(mbpp_spec("sanitized"))]
