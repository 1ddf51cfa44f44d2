"""How the ``hf`` backend hands a workload to the engine, with its own prompt codec, so both paths see the
same prompt ids, mask the same ids, stop on the same EOS ids and build the same completion text.

In ``HFGenerator.generate`` (evalsuite/generation/hf.py), before batching::

    from evalsuite.engine.hf_bridge import engine_for
    engine = engine_for(self)
    if engine is not None:
        yield from engine.generate(requests, params)
        return
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from evalsuite.records import Completion, GenerationRequest, SamplingParams


class HFEngineBridge:
    """An :class:`~evalsuite.engine.Engine` fed through an HFGenerator's codec."""

    def __init__(self, generator: Any):
        from evalsuite.engine import Engine

        codec = generator.codec
        self.codec = codec
        self.engine = Engine(
            generator.model, generator.loaded.tokenizer, eos_token_ids=sorted(codec.eos_ids),
            decode_tokens=codec.decode,
            decode=lambda request, prompt_ids, ids: codec.decode_continuation(prompt_ids, ids),
            vocab_limit=codec.vocab_limit, context_length=generator.context_length)

    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> Iterator[Completion]:
        requests = [r for r in requests if r.sample_indices]
        prompt_ids = [self.codec.encode_request(r) for r in requests]
        yield from self.engine.generate(requests, params, prompt_ids=prompt_ids)

    def describe(self) -> dict[str, Any]:
        return self.engine.describe()


WHOLE_MODEL_PLACEMENTS = (None, "single-device", "gpu")  # placements whose modules hold plain, whole weights


def engine_for(generator: Any) -> HFEngineBridge | None:
    """The engine for this generator, built once; None where plain ``generate`` must run: the user chose
    ``--engine transformers``, or the model is not one the engine covers (architecture, quantized or
    offloaded weights, a device without CUDA... see ``Engine.unsupported_reason``). Why it does not run is
    kept in ``generator._engine_fallback`` (one line, written into the run record)."""
    from evalsuite.engine import Engine

    bridge = getattr(generator, "_engine_bridge", None)
    if bridge is not None:
        return bridge
    reason = fallback_reason(generator, Engine)
    generator._engine_fallback = reason
    if reason is not None:
        return None
    bridge = HFEngineBridge(generator)
    generator._engine_bridge = bridge
    return bridge


def fallback_reason(generator: Any, engine_cls) -> str | None:
    if getattr(generator.options, "engine", "auto") == "transformers":
        return "--engine transformers"
    strategy = generator.loaded.placement.get("strategy")
    if strategy not in WHOLE_MODEL_PLACEMENTS:
        # ZeRO-partitioned, kernel-injected, quantized or offloaded: the loader's runtime decodes
        return f"placement {strategy!r} does not hold whole weights on one device"
    if generator.model.device.type != "cuda":
        return f"the engine runs on CUDA; the model is on {generator.model.device.type}"
    return engine_cls.unsupported_reason(generator.model)
