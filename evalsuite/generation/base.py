"""The generation contract every backend implements (hf, openai, reference, ...).

The runner hands a backend a list of :class:`~evalsuite.records.GenerationRequest` and consumes
:class:`~evalsuite.records.Completion` objects as they are yielded, appending each to the run's JSONL at
once: a backend must yield completions as soon as they are final, not all at the end.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from evalsuite.generation.options import GenerationOptions  # noqa: F401 - where callers have always found it
from evalsuite.records import Completion, GenerationRequest, SamplingParams

if TYPE_CHECKING:
    from evalsuite.protocol.prompting import PromptDecision


class Generator(ABC):
    """A loaded model that turns prompts into completions."""

    # Set by the runner around ``generate``: called with the number of tokens just decoded (running samples
    # included), so progress moves before the first completion is out. Backends that cannot see tokens as
    # they are decoded leave it alone.
    token_listener: Callable[[int], None] | None = None

    def expected_tokens_per_s(self, rows: int = 1) -> float | None:
        """The decoding rate the planner's speed model expects here with ``rows`` samples to make (batched as the
        backend batches them): with the default 1, a rough floor, for the warning when a run is far slower than
        it should be; with the command's samples, the plan line's estimate. None where the backend cannot say
        (a server, the reference)."""
        return None

    @abstractmethod
    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> Iterator[Completion]:
        """Yield one Completion per (request, sample_index), in any order, as each becomes final.

        Each completion's text is the continuation only (decoded from generated token ids), truncated
        before the first stop sequence of its request.
        """

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the run record needs to reproduce this model: backend, model id, revision, dtype, device,
        loading plan, tokenizer fixes applied. Never secrets."""

    def weights_identity(self) -> str | None:
        """The precision the weights were loaded in ("bfloat16", "int8", "nf4"...), where it changes the
        completions; part of the run's identity, so a run never resumes from another precision's samples."""
        return None

    def chat_template(self) -> str | None:
        """The model's chat template where the backend can see it (hf: the tokenizer's)."""
        return None

    def decide_prompt_style(self, requested: str) -> PromptDecision:
        """Which prompt style this model gets for ``requested`` ("auto", "base", "instruct"), and why."""
        from evalsuite.protocol.prompting import decide_style

        return decide_style(requested, self.chat_template())

    def opens_code_fence(self) -> bool:
        """Whether an instruct prompt ends inside an opened ```python block (the response prefix is part of
        the prompt), so the answer starts with code and ends at the closing fence."""
        return False

    def identity(self) -> dict[str, Any]:
        """What decides the completions beyond the run's settings (checkpoint bytes, tokenizer policy,
        engine, library versions); part of the run identity. Never secrets."""
        return {}

    def answers_identity(self, canonical_solutions: Sequence[str | None]) -> dict[str, Any]:
        """What of the run's problems beyond their prompts decides the completions (the reference model answers
        with their canonical solutions); part of the run identity. Most models: nothing."""
        return {}

    def close(self) -> None:  # noqa: B027 - a no-op where a backend holds nothing (a server)
        """Free the model's memory."""
