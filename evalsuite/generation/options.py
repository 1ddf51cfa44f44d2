"""How to run a model, one dataclass per concern, as opposed to how to sample (``SamplingParams``).

Why split: the hf backend, the openai backend and the loader/planner each read their own options; one flat
bag let the planner read hf fields back with ``getattr``. The flags are generated from these fields
(:mod:`evalsuite.cli.option_groups`). :meth:`GenerationOptions.to_dict` stays flat, with the keys it always
had: it is part of each run's recorded options and of the resume key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from evalsuite.flags import flag
from evalsuite.models.options import LoadingOptions

ENGINES = ("auto", "transformers", "evalsuite")


@dataclass(frozen=True)
class HFOptions:
    """The hf backend: how batches are formed and decoded here."""

    batch_size: int | None = flag(None, "sequences generated together", default_text="chosen from free memory")
    threads: int | None = flag(None, "CPU threads for generation (recorded)",
                               default_text="the cores not busy when the run starts, at least 1")
    engine: str = flag("auto", "auto: evalsuite's engine where it applies (CUDA, a covered family), else plain "
                               "transformers generate; transformers: always plain generate; evalsuite: the engine "
                               "wherever it can run, the CPU included (slow there: for checks)", choices=ENGINES)
    batch_invariant: bool = flag(False, "engine: every decode step 256 rows wide and attention in one part, so a "
                                        "sample's tokens never depend on the rest of its batch: the same completions "
                                        "on one GPU and under torchrun (default: rare sampled tokens may differ)")


@dataclass(frozen=True)
class OpenAIOptions:
    """The openai backend: the OpenAI-compatible server and how it is asked."""

    base_url: str | None = flag(None, "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    api_key_env: str = flag("OPENAI_API_KEY", "environment variable holding the API key (the key is never recorded)")
    concurrency: int = flag(8, "openai backend: requests in flight")
    max_retries: int = flag(6, "openai backend: retries on 429/5xx, with exponential backoff")
    request_timeout_s: float = flag(600.0, "openai backend: seconds per request", name="--request-timeout")
    # Samples asked for in one request (its `n`). 1 gives every sample its own seed, so a resumed run
    # reproduces it on servers that honour `seed`; larger values share the prompt's prefill. Not a flag.
    samples_per_request: int = 1


@dataclass(frozen=True)
class GenerationOptions:
    """Which backend, and each concern's options."""

    backend: str = flag("auto", "hf: load the model here with transformers; openai: ask the OpenAI-compatible "
                                "server at --base-url; reference: the canonical solutions; auto: reference for "
                                "'reference', openai when --base-url is given, else hf; or a backend a plugin "
                                "registers")
    loading: LoadingOptions = field(default_factory=LoadingOptions)
    hf: HFOptions = field(default_factory=HFOptions)
    openai: OpenAIOptions = field(default_factory=OpenAIOptions)
    max_new_tokens: int | None = None  # the memory planner: tokens per sequence the KV cache must hold past the prompt

    def to_dict(self) -> dict[str, Any]:
        """Flat, as recorded before the split (same keys, same values: resume keys do not change)."""
        hf = asdict(self.hf)
        if not hf["batch_invariant"]:  # named only where set, so the keys of earlier runs stay as they were
            del hf["batch_invariant"]
        return {"backend": self.backend, **asdict(self.loading), **hf, **asdict(self.openai),
                "max_new_tokens": self.max_new_tokens}
