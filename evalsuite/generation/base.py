"""The generation contract every backend implements (hf, openai, reference, ...).

The runner hands a backend a list of :class:`~evalsuite.records.GenerationRequest` and consumes
:class:`~evalsuite.records.Completion` objects as they are yielded, appending each to the run's JSONL at
once: a backend must yield completions as soon as they are final, not all at the end.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from evalsuite.records import Completion, GenerationRequest, SamplingParams

if TYPE_CHECKING:
    from evalsuite.protocol.prompting import PromptDecision


@dataclass(frozen=True)
class GenerationOptions:
    """How to run a model, as opposed to how to sample (``SamplingParams``). Mostly from CLI flags."""

    backend: str = "auto"  # "auto" -> registry entry or "hf"; "hf", "openai", "reference"
    device: str | None = None  # None: cuda if available else cpu
    dtype: str | None = None  # None: registry/plan decides; "float32", "bfloat16", "float16"
    batch_size: int | None = None  # None: chosen from free memory
    base_url: str | None = None  # openai backend
    api_key_env: str = "OPENAI_API_KEY"  # name of the variable holding the key; the key is never recorded
    concurrency: int = 8  # openai backend: requests in flight
    trust_remote_code: bool = False
    strategy: str | None = None  # memory planner: force a loading strategy
    gpu_memory: str | None = None  # memory planner: cap per GPU, e.g. "16GiB"
    cpu_memory: str | None = None
    offload_dir: str | None = None
    threads: int | None = None  # CPU generation threads; None: the cores not busy at start (devices.py)
    engine: str = "auto"  # "auto": fast engine where it applies; "transformers": plain generate; "evalsuite": the engine, CPU included
    max_new_tokens: int | None = None  # memory planner: tokens per sequence the KV cache must hold past the prompt
    max_retries: int = 6  # openai backend: retries of a request answered 429/5xx or not answered at all
    request_timeout_s: float = 600.0  # openai backend: seconds one HTTP request may take
    # openai backend: samples asked for in one request (its `n`). 1 gives every sample its own seed, so a
    # resumed run reproduces it on servers that honour `seed`; larger values share the prompt's prefill.
    samples_per_request: int = 1
    revision: str | None = None  # hub models: branch, tag or commit to load (--revision); None: the default branch

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Generator(ABC):
    """A loaded model that turns prompts into completions."""

    # Set by the runner around ``generate``: called with the number of tokens just decoded (running samples
    # included), so progress moves before the first completion is out. Backends that cannot see tokens as
    # they are decoded leave it alone.
    token_listener: Callable[[int], None] | None = None

    def expected_tokens_per_s(self) -> float | None:
        """A rough floor on the decoding rate here (batch 1, the planner's speed model), for the warning when
        a run is far slower than it should be; None where the backend cannot say (a server, the reference)."""
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

    def decide_prompt_style(self, requested: str) -> "PromptDecision":
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

    def close(self) -> None:
        """Free the model's memory."""
