"""The asking of a model: which prompt it sees, where its output stops, and what of its output is run.

Why here: the prompt protocol (:mod:`evalsuite.protocol.prompting`) says how a prompt is built; a run also
has to decide, once the model is known, which style applies, which stop sequences end a completion, and
how a raw output becomes the program the sandbox runs. ``run`` decides it; ``evaluate`` (EvalPlus
``solution`` rows) and the run page reuse the parts they need.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalsuite.protocol.extraction import extract_program, sanitize
from evalsuite.protocol.prompting import (
    INSTRUCT_STOP_SEQUENCES,
    PromptDecision,
    PromptProtocol,
    base_prompt,
    completion_for_original,
)
from evalsuite.tasks.task import Problem, Task


def merge_stops(first: Sequence[str], then: Sequence[str]) -> tuple[str, ...]:
    """``first`` then ``then``, without empties or repeats (order kept: it is part of the run's identity)."""
    merged: list[str] = []
    for stop in list(first) + list(then):
        if stop and stop not in merged:
            merged.append(stop)
    return tuple(merged)


def stop_sequences_for(task: Task, model_stops: Sequence[str]) -> tuple[str, ...]:
    return merge_stops(task.stop_sequences, model_stops)


class SolutionTask:
    """The task as the execution stage sees it when each completion is a whole program (instruct style):
    everything is the task's own, except that the program is the completion alone."""

    def __init__(self, task: Task):
        self._task = task

    def __getattr__(self, name: str) -> Any:
        return getattr(self._task, name)

    def build_program(self, problem: Problem, completion: str):
        return self._task.build_solution_program(problem, completion)

    def canonical_completion(self, problem: Problem) -> str:
        """The canonical solution as a whole program: what the prompt's completion by it makes."""
        return self._task.build_program(problem, self._task.canonical_completion(problem)).candidate


@dataclass(frozen=True)
class Asking:
    """How this run asks the model: the prompt style decided for it, base-style stripping, and whether an
    instruct prompt ends inside an opened code block."""

    style: str = "base"
    strip_prompt: bool = False
    opened_fence: bool = False
    direct_completion: bool = False  # base style as EvalPlus completes a model without a chat template
    # how a preset changed the asking beyond the style and stripping (EvalPlus's direct completion, a preset's
    # stop set), as the leaderboard keys it: None where the model is asked the task's own way
    protocol: str | None = None

    def prompt_for(self, task: Task, problem: Problem) -> str:
        text = task.format_prompt(problem)
        if self.style == "instruct":
            return text
        if self.direct_completion:  # evalplus/codegen.py: task["prompt"].strip() + "\n"
            return text.strip() + "\n"
        return base_prompt(text, self.strip_prompt)

    def completion_row(self, task: Task, problem: Problem, text: str, raw: str) -> dict[str, Any]:
        """``completion`` is what the sandbox runs after the task's prompt (base) or alone (instruct: the
        extracted program); ``raw_completion`` the model's untruncated output."""
        if self.style == "instruct":
            return {"completion": extract_program(raw, problem.entry_point, self.opened_fence),
                    "raw_completion": raw, "prompt_style": "instruct"}
        if self.direct_completion:  # evalplus/codegen.py: sanitize(prompt + impl, entrypoint), run alone
            return {"completion": sanitize(self.prompt_for(task, problem) + text, problem.entry_point),
                    "raw_completion": raw, "whole_program": True}
        formatted = task.format_prompt(problem)
        seen = base_prompt(formatted, self.strip_prompt)
        return {"completion": task.postprocess(problem, completion_for_original(formatted, seen, text)),
                "raw_completion": raw}

    def executed(self, task: Task) -> Any:
        """The task as the sandbox runs this run's completions (whole programs under instruct)."""
        return SolutionTask(task) if self.style == "instruct" or self.direct_completion else task


def decide_asking(decision: PromptDecision, opens_code_fence: bool, task: Task, model_stops: Sequence[str],
                  protocol: PromptProtocol) -> tuple[Asking, tuple[str, ...]]:
    """The asking and the stop sequences of one (model, task) run. Instruct: the preset's instruct stops, else
    the closing fence when the prompt opened one, then the model's; base: the task's, the model's, then the
    preset's."""
    if decision.style == "instruct":
        asking = Asking("instruct", opened_fence=opens_code_fence,
                        protocol=preset_stops_label(protocol.instruct_stops))
        fence = INSTRUCT_STOP_SEQUENCES if asking.opened_fence else ()
        return asking, merge_stops(protocol.instruct_stops or fence, model_stops)
    direct = protocol.direct_stops_for(task.name)
    if direct is not None:  # EvalPlus's stop set in place of the task's (evalplus/provider/utility.py)
        return (Asking("base", direct_completion=True, protocol=direct_completion_label(direct)),
                merge_stops(direct, model_stops))
    extra = protocol.stops_for(task.name)
    asking = Asking("base", strip_prompt=protocol.strip_prompt, protocol=preset_stops_label(extra))
    return asking, merge_stops(stop_sequences_for(task, model_stops), extra)


def direct_completion_label(stops: Sequence[str]) -> str:
    """EvalPlus's direct completion with its stop set ``stops``, as the leaderboard names it."""
    return f"EvalPlus direct completion, {preset_stops_label(stops)}"


def preset_stops_label(stops: Sequence[str]) -> str | None:
    """A preset's own stop sequences as the leaderboard names them (``stops #1a2b3c4d``); None for none."""
    if not stops:
        return None
    return f"stops #{hashlib.sha256(json.dumps(list(stops)).encode('utf-8')).hexdigest()[:8]}"
