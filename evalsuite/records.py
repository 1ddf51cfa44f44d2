"""Small records passed between the pipeline's stages (generate -> execute -> score -> report).

Every stage reads and writes these, so a newcomer can follow one sample from prompt to verdict.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.flags import flag

# vLLM's sampling epsilon: a temperature below it is no distribution float32 can hold (1e-300 rounds to 0)
MIN_TEMPERATURE = 1e-5


@dataclass(frozen=True)
class SamplingParams:
    """How completions are sampled. ``temperature == 0`` means greedy decoding.

    Checked once, here, whoever builds it (``run``'s flags, generated from these fields; a preset; the Python
    API): a value that cannot be sampled is refused in one line before anything loads."""

    n: int = flag(1, "samples per problem")
    temperature: float = flag(0.0, "0 means greedy", default_text="0, greedy")
    top_p: float = flag(1.0, "nucleus sampling: keep the smallest set of tokens whose probability reaches P, "
                             "0 < P <= 1", default_text="1.0: off")
    top_k: int = flag(0, "sample among the K most likely tokens", default_text="0: off")
    max_new_tokens: int = flag(512, "tokens generated per completion at most")
    seed: int = flag(0, "sampling seed; each sample's stream is derived from it, the problem and the sample index")
    # Prompt plus generation at most this many tokens (bigcode-evaluation-harness's ``max_length_generation``,
    # ``model.generate(max_length=...)``): each sample's budget is the smaller of ``max_new_tokens`` and this
    # less its prompt's tokens (at least one token). None: ``max_new_tokens`` alone.
    max_length: int | None = flag(None, "prompt plus completion at most this many tokens, per sample (bigcode's "
                                        "max_length_generation)", default_text="off")

    def __post_init__(self) -> None:
        for name in ("n", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise EvalsuiteError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.top_k < 0:
            raise EvalsuiteError(f"--top-k must be >= 0 (0: no top-k), got {self.top_k}")
        if not 0 < self.top_p <= 1 or not 0 <= self.temperature < math.inf:  # NaN fails both comparisons
            raise EvalsuiteError(f"--temperature must be a finite number >= 0 (got {self.temperature!r}) and --top-p "
                                 f"in (0, 1] (got {self.top_p!r})")
        if 0 < self.temperature < MIN_TEMPERATURE:  # logits / T overflow float32: every sample degenerate
            raise EvalsuiteError(f"--temperature {self.temperature:g} is too small to sample with (logits over it "
                                 f"overflow float32; the least is {MIN_TEMPERATURE:g}): use 0 for greedy decoding")
        if self.max_length is not None and self.max_length < 2:
            raise EvalsuiteError("--max-length must be >= 2 (prompt plus completion tokens)")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def new_tokens_for(self, prompt_tokens: int) -> int:
        """The most tokens one sample of a ``prompt_tokens``-token prompt may generate."""
        if self.max_length is None:
            return self.max_new_tokens
        return max(1, min(self.max_new_tokens, self.max_length - prompt_tokens))

    def describe(self) -> str:
        """How a run page names the sampling: ``n=20, T=0.8, top_p=0.95, max_new_tokens=512, seed=0``."""
        return (f"n={self.n}, T={self.temperature:g}, top_p={self.top_p:g}, max_new_tokens={self.max_new_tokens}, "
                f"seed={self.seed}")

    @classmethod
    def from_dict(cls, data: Any) -> SamplingParams:
        """Back from :meth:`to_dict` (a record, a leaderboard's run summary); keys it does not know are ignored."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if data.get(name) is not None}
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        values = asdict(self)
        if values["max_length"] is None:  # named only where set, so the keys of earlier runs stay as they were
            del values["max_length"]
        return values


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt and which of its samples to produce.

    ``sample_indices`` may be a subset of ``range(n)`` when a run resumes. A sample's randomness is a pure
    function of (seed, task_id, sample_index), so the subset produced later equals what a fresh run makes.
    """

    task_id: str
    prompt: str
    sample_indices: tuple[int, ...]
    stop_sequences: tuple[str, ...] = ()
    # Read only by the built-in ``reference`` backend, which answers with the known-good solution.
    canonical_solution: str | None = None
    # "base": ``prompt`` is continued as is; "instruct": ``prompt`` is the task's text, asked through the
    # model's chat template (see evalsuite.protocol.prompting), and the answer is a whole program.
    prompt_style: str = "base"


@dataclass(frozen=True)
class Completion:
    """One generated sample, as the model produced it (already truncated at the first stop sequence)."""

    task_id: str
    sample_index: int
    text: str
    finish_reason: str = "stop"  # "stop" (stop sequence), "eos", "length"
    num_tokens: int = 0
    # The decoded text of every generated token kept (before the cut at a stop sequence), as the model wrote
    # it; None where the backend has nothing more than ``text``.
    raw_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "completion_id": self.sample_index,
            "completion": self.text,
            "finish_reason": self.finish_reason,
            "num_tokens": self.num_tokens,
            "raw_completion": self.text if self.raw_text is None else self.raw_text,
        }


@dataclass(frozen=True)
class SetVerdict:
    """EvalPlus's verdict on one input set (``base`` or ``plus``) of a sample, as ``evalplus.evaluate`` words it."""

    status: str  # "pass", "fail" or "timeout"
    reason: str = ""  # why not a pass: the sandbox's fixed vocabulary
    failed_input: int | None = None  # the input that decided a fail (EvalPlus's "fail tests" name it)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "failed_input": self.failed_input}


@dataclass(frozen=True)
class SampleResult:
    """The sandbox's verdict on one completion."""

    task_id: str
    completion_id: int
    passed: bool
    result: str  # "passed", "failed: <short reason>", "timed out"
    duration_s: float
    flags: tuple[str, ...] = field(default_factory=tuple)  # hack detections, e.g. ("non_plain_value",)
    # The candidate's own exception text (truncated). The sample wrote it: it is never part of the verdict.
    sample_error: str = ""
    # The trusted checker's account of the first failure (empty unless failed): "statement" (the test's source
    # line), and where it called the candidate, "call" (the arguments) and "returned" (the value, or "raised X").
    failure_detail: dict[str, str] = field(default_factory=dict)
    # EvalPlus-style tasks: each input set's verdict ("base", "plus"); ``passed`` is then EvalPlus's plus verdict
    # (every set passed). Empty for tasks checked by test code.
    sets: dict[str, SetVerdict] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """"passed", "failed" or "timed out": a timeout is its own verdict, counted apart from failures."""
        if self.passed:
            return "passed"
        return "timed out" if self.result == "timed out" else "failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "completion_id": self.completion_id,
            "passed": self.passed,
            "status": self.status,
            "result": self.result,
            "duration_s": round(self.duration_s, 6),
            "flags": list(self.flags),
            "sample_error": self.sample_error,
            "failure_detail": dict(self.failure_detail),
            **({"sets": {name: verdict.to_json() for name, verdict in self.sets.items()}} if self.sets else {}),
        }
