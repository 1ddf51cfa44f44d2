"""What a run is: the problems it covers, how the model was asked, and the identity whose hash names its folder.

Why one module: ``run`` and ``evaluate`` must say "which part of a task ran" the same way (the leaderboard
keeps a partial run apart from the whole by :func:`problem_set`), and a run folder is found again only if
its identity is rebuilt exactly as it was written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.protocol.prompting import INSTRUCTION_PREFIX, RESPONSE_PREFIX, PromptDecision, PromptProtocol
from evalsuite.records import SamplingParams
from evalsuite.reporting.model import ProblemSubset
from evalsuite.tasks.task import Problem, Task


def select_problems(task: Task, limit: int | None) -> list[Problem]:
    problems = task.problems()
    return problems[:limit] if limit else problems


def check_has_problems(task: Task) -> None:
    """A task whose data holds no problem (an empty file) is refused before any model loads: it would give a run
    with nothing scored, an ``n/a`` row and exit status 0."""
    if not task.problems():
        where = f" ({task.source})" if task.source else ""
        raise EvalsuiteError(f"task {task.name!r} has no problems{where}: its data is empty")


def problem_set(task: Task, problems: Sequence[Problem]) -> ProblemSubset | None:
    """None for the task's whole problem set; otherwise which part ran (a ``--limit`` smoke test, a samples
    file that covers only some problems, or ``--task-data`` holding fewer problems than the benchmark has): their
    count, the task's, and the sha256 of their ids in order."""
    total = len(task.problems())
    if task.problem_count is not None and total < task.problem_count:  # a copy holding a part of the benchmark
        total = task.problem_count
    if len(problems) == total:
        return None
    ids = json.dumps([p.task_id for p in problems]).encode()
    return ProblemSubset(len(problems), total, hashlib.sha256(ids).hexdigest())


def task_code_identity(task: Task, problems: Sequence[Problem]) -> dict[str, str] | None:
    """What a task plugin's own code decides of the completions: the prompts it formats for these problems. None
    for evalsuite's own tasks (the built-ins and the YAML specs, whose prompt template and data are keyed already),
    so their runs keep their keys. A Python plugin (``--task-dir``, an installed package) may build its prompts in
    code, in a subclass's ``format_prompt``, one set on an instance, or the problems' text itself under a
    ``dataset_sha256`` it declares: without this, an edited plugin resumed the earlier prompts' completions into
    the same run (red-team rounds 17-19). A plugin's ``postprocess`` needs no key: scoring makes each row's
    completion again from the model's output (:func:`evalsuite.runs.generate.load_completions`)."""
    if not isinstance(task, Task):
        return None
    origin = task.registered_by
    evalsuites_own = (origin.startswith(("builtin:", "spec:")) if origin
                      else type(task).__module__.split(".")[0] == "evalsuite")  # made outside the registry
    if evalsuites_own and "format_prompt" not in vars(task):
        return None
    prompts = json.dumps([task.format_prompt(p) for p in problems], ensure_ascii=False)
    return {"prompts_sha256": hashlib.sha256(prompts.encode("utf-8", "surrogatepass")).hexdigest()}


def prompt_settings(decision: PromptDecision, protocol: PromptProtocol, stops: Sequence[str]) -> dict[str, Any]:
    """How the model was asked, for the identity and the record."""
    settings: dict[str, Any] = {"style": decision.style, "requested": decision.requested,
                                "reason": decision.reason, "strip_prompt": False}
    if decision.style == "instruct":
        settings.update({"chat_template_sha256": decision.chat_template_sha256,
                         "instruction_prefix": INSTRUCTION_PREFIX, "response_prefix": RESPONSE_PREFIX,
                         "source": "EvalPlus 0.3.1: evalplus/codegen.py, evalplus/provider/utility.py"})
    else:
        settings["strip_prompt"] = protocol.strip_prompt
        if protocol.strip_prompt:  # prompt.strip() (rstrip in earlier versions): another run, never resumed
            settings["strip"] = "both ends"
    return settings


def run_identity(model_id: str, task: Task, problems: Sequence[Problem], stops: Sequence[str],
                 sampling: SamplingParams, weights: str | None = None,
                 prompt: dict[str, Any] | None = None, model: dict[str, Any] | None = None,
                 revision: str | None = None) -> dict[str, Any]:
    """Everything that determines the completions; its hash names the run directory.

    ``revision`` is the hub revision asked for with ``--revision`` (a branch or tag may move; what it
    resolved to is the loaded model's ``revision`` in ``model``), so another revision is another run.

    ``weights`` is the precision the model was loaded in, where the backend has one (bf16 and nf4 samples
    of one checkpoint are different runs). ``prompt`` is how the model was asked (style, stripping, chat
    template sha256); ``model`` what the backend says decides its output (checkpoint bytes, tokenizer policy,
    engine, library versions; :meth:`Generator.identity`)."""
    identity = {
        "model": model_id,
        "task": task.name,
        "dataset_sha256": task.dataset_sha256,
        "prompt_template": task.prompt_template,
        "problem_ids": [p.task_id for p in problems],
        "stop_sequences": list(stops),
        "sampling": sampling.to_dict(),
    }
    if revision is not None:
        identity["revision"] = revision
    if weights is not None:
        identity["weights"] = weights
    if prompt is not None:
        identity["prompt"] = {k: v for k, v in prompt.items() if k not in ("requested", "reason")}
    if model:
        identity["checkpoint"] = model
    code = task_code_identity(task, problems)
    if code is not None:
        identity["task_code"] = code
    return identity
