"""How a model is asked: the prompt protocol (style and whitespace), separate from what is asked (the task).

Two styles:

* ``base``: the task's prompt is continued as a completion (HumanEval's original protocol). With
  ``strip_prompt`` the model sees ``prompt.strip()`` (the bigcode-evaluation-harness default) and the
  completion is mapped back onto the original prompt.
* ``instruct``: the prompt is put in a chat turn through the tokenizer's own chat template, with an
  instruction and an assistant response prefix that opens a ```python block; the answer is a whole
  program, extracted by :mod:`evalsuite.protocol.extraction`.

The wording is EvalPlus's (``evalplus`` 0.3.1, ``evalplus/codegen.py::run_codegen``), and the chat text is
built the way ``evalplus/provider/utility.py::make_raw_chat_prompt`` builds it; ``tests/test_prompting.py``
checks both against the installed ``evalplus`` package. ``auto`` picks ``instruct`` when the tokenizer has
a chat template, ``base`` otherwise (EvalPlus's ``is_direct_completion`` rule).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from evalsuite.errors import EvalsuiteError

PROMPT_STYLES = ("auto", "base", "instruct")

# evalplus/codegen.py::run_codegen (EvalPlus 0.3.1), the default (non-EvalPerf) instruction and response.
INSTRUCTION_PREFIX = ("Please provide a self-contained Python script that solves the following problem in a "
                      "markdown code block:")
RESPONSE_PREFIX = ("Below is a Python script with a self-contained function that solves the problem and passes "
                   "corresponding tests:")
# EvalPlus splits the rendered template at a marker placed where the assistant's code would start.
_SPLITTER = "-[[]]-this-is-really-our-highest-priority-[[]]-"
# The response prefix leaves a ```python block open, so the code ends at the closing fence: EvalPlus stops
# its hf decoder at "\n```\n" (evalplus/provider/hf.py); we stop at "\n```" (also catches a fence at EOF).
INSTRUCT_STOP_SEQUENCES: tuple[str, ...] = ("\n```",)


@dataclass(frozen=True)
class PromptProtocol:
    """The prompt settings of a run: part of its identity and of its leaderboard key."""

    style: str = "auto"  # "auto", "base" or "instruct"
    strip_prompt: bool = False  # base style: feed prompt.strip() (bigcode-evaluation-harness)
    # strip_prompt for these tasks only (a preset's list: bigcode strips HumanEval's prompts, never MBPP's); ()
    # for every task
    strip_tasks: tuple[str, ...] = ()
    # base style: stop sequences a preset adds to a task's own, per task name (bigcode's HumanEval stop words)
    task_stops: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # instruct style: a preset's stop strings in place of INSTRUCT_STOP_SEQUENCES (the evalplus preset: EvalPlus's
    # own set, so that its answers end where EvalPlus's do)
    instruct_stops: tuple[str, ...] = ()
    # base style, the evalplus preset: EvalPlus's direct completion (evalplus/provider/hf.py and codegen.py), per
    # task name its stop set, which replaces the task's own; the prompt is stripped and ends in one newline, and
    # prompt + completion, sanitized, is the program that runs
    direct_stops: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def stops_for(self, task_name: str) -> tuple[str, ...]:
        return next((stops for name, stops in self.task_stops if name == task_name), ())

    def direct_stops_for(self, task_name: str) -> tuple[str, ...] | None:
        """EvalPlus's direct-completion stop set for this task, or None where the task is completed as usual."""
        return next((stops for name, stops in self.direct_stops if name == task_name), None)

    def for_task(self, task_name: str) -> PromptProtocol:
        """The protocol as one task's run applies it: ``strip_prompt`` resolved for that task (so a run's
        record and key say ``strip_prompt: false`` where a preset strips other tasks only)."""
        if not self.strip_tasks:
            return self
        return replace(self, strip_prompt=self.strip_prompt and task_name in self.strip_tasks, strip_tasks=())

    def __post_init__(self) -> None:
        if self.style not in PROMPT_STYLES:
            raise EvalsuiteError(f"--prompt-style must be one of {', '.join(PROMPT_STYLES)}, got {self.style!r}")


@dataclass(frozen=True)
class PromptDecision:
    """The style a run actually uses for one model, and why (recorded in record.json)."""

    requested: str
    style: str  # "base" or "instruct"
    reason: str
    chat_template_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "style": self.style, "reason": self.reason,
                "chat_template_sha256": self.chat_template_sha256}


def template_sha256(template: str | None) -> str | None:
    return hashlib.sha256(template.encode("utf-8")).hexdigest() if template else None


def decide_style(requested: str, chat_template: str | None, can_chat: bool = False) -> PromptDecision:
    """``auto``: instruct exactly when the model has a chat template (``can_chat``: the backend can send a
    chat turn without a template of its own, e.g. a server's /v1/chat/completions)."""
    sha = template_sha256(chat_template)
    if requested == "base":
        return PromptDecision("base", "base", "requested", sha)
    if requested == "instruct":
        if not chat_template and not can_chat:
            raise EvalsuiteError("--prompt-style instruct needs a chat template, and this model's tokenizer has "
                                 "none; use --prompt-style base")
        return PromptDecision("instruct", "instruct", "requested", sha)
    if chat_template:
        return PromptDecision("auto", "instruct", "the tokenizer has a chat template", sha)
    return PromptDecision("auto", "base", "the tokenizer has no chat template", sha)


# -- base style ---------------------------------------------------------------------------------------

def base_prompt(prompt: str, strip: bool) -> str:
    """The text a base-style model continues. ``strip``: ``prompt.strip()``, leading whitespace too, as
    bigcode-evaluation-harness does (``bigcode_eval/tasks/humaneval.py::get_prompt``: ``doc["prompt"].strip()``;
    most HumanEval prompts after the first start with blank lines)."""
    return prompt.strip() if strip else prompt


def completion_for_original(prompt: str, seen: str, generated: str) -> str:
    """The completion relative to the ORIGINAL prompt when the model saw ``seen`` (a stripped prompt).

    If the model re-wrote the stripped whitespace, that part is dropped; if it wrote something else, the
    completion is its text as is (prompt + completion then differs from what it saw only in the prompt's
    trailing whitespace, which is the point of stripping).
    """
    if seen == prompt:
        return generated
    written = prompt[:len(prompt) - len(prompt.lstrip())] + seen + generated  # the stripped lead put back
    return written[len(prompt):] if written.startswith(prompt) else generated


# -- instruct style -----------------------------------------------------------------------------------

def instruction_text(task_prompt: str) -> str:
    """The user turn: EvalPlus's instruction and the task's prompt in a plain fence."""
    return f"{INSTRUCTION_PREFIX}\n```\n{task_prompt.strip()}\n```\n"


def response_text(marker: str) -> str:
    """The assistant turn EvalPlus renders: its response prefix, then an opened ```python block."""
    return f"{RESPONSE_PREFIX}\n```python\n{marker}\n```\n"


def chat_prompt(tokenizer: Any, task_prompt: str) -> str:
    """The exact text an instruct model continues: the template rendered with the user turn and the
    assistant's response prefix, cut where the assistant's code starts (EvalPlus's construction)."""
    if not getattr(tokenizer, "chat_template", None):
        raise EvalsuiteError("the instruct prompt style needs a chat template, and this tokenizer has none")
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": instruction_text(task_prompt)},
         {"role": "assistant", "content": response_text(_SPLITTER)}], tokenize=False)
    if _SPLITTER not in rendered:
        raise EvalsuiteError("the chat template drops the assistant's message; it cannot carry a response prefix")
    return rendered.split(_SPLITTER)[0]


def server_messages(task_prompt: str) -> list[dict[str, str]]:
    """The chat turn for an OpenAI-compatible server, which applies its own template and cannot be given a
    partial assistant turn portably: EvalPlus's openai provider message (evalplus/provider/openai.py)."""
    return [{"role": "user", "content": f"{INSTRUCTION_PREFIX}\n```python\n{task_prompt.strip()}\n```"}]


def end_of_turn_ids(tokenizer: Any) -> frozenset[int]:
    """The special tokens the chat template closes an assistant turn with (``<|im_end|>``,
    ``<end_of_turn>``, ``<|eot_id|>``...): rendered after a marker, the first special token past it."""
    if not getattr(tokenizer, "chat_template", None):
        return frozenset()
    marker = "evalsuite-end-of-turn-probe"
    try:
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": marker}], tokenize=False)
    except Exception:  # noqa: BLE001 - a template that cannot render this turn has no end marker to find
        return frozenset()
    tail = rendered.split(marker, 1)[-1] if marker in rendered else ""
    special = {int(i) for i in getattr(tokenizer, "all_special_ids", []) or []}
    special.update(int(i) for i, token in getattr(tokenizer, "added_tokens_decoder", {}).items()
                   if getattr(token, "special", False))
    for token_id in tokenizer(tail, add_special_tokens=False)["input_ids"]:
        if int(token_id) in special:
            return frozenset({int(token_id)})
    return frozenset()
