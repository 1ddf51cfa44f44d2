"""How the ``hf`` backend hands a workload to the engine, with its own prompt codec, so both paths see the
same prompt ids, mask the same ids, stop on the same EOS ids and build the same completion text.

The engine never breaks a run that plain ``generate`` could finish: a failure at set-up means plain
generate runs from the start; out of memory mid-run retries the unfinished samples with half the rows
(a smaller KV cache and workspace); any other failure, or running out of memory at the smallest size,
hands the unfinished samples to plain generate. Completions already yielded are kept (the runner has saved
them), and every step is recorded (``engine_fallback``, ``engine_retries``) and printed as one line.

In ``HFGenerator.generate`` (evalsuite/generation/hf/generator.py), before batching::

    bridge = engine_for(self)
    if bridge is not None:
        requests = yield from bridge.generate(requests, params)   # what the engine could not finish
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalsuite.devices import free_accelerator_memory, is_out_of_memory
from evalsuite.errors import one_line
from evalsuite.records import Completion, GenerationRequest, SamplingParams

MIN_ROWS = 4  # below this many rows the engine gives way to plain generate, which pads but needs no cache plan


@dataclass
class EngineStatus:
    """Whether a generator decodes on the engine (decided once, at its first generate call) and, where it does
    not or stopped, why; its out-of-memory retries. Written into the run record by ``HFGenerator.describe``."""

    decided: bool = False
    bridge: HFEngineBridge | None = None  # None: plain transformers generate runs
    fallback: str | None = None  # why plain generate runs instead of the engine (one line)
    retries: list[str] = field(default_factory=list)  # "engine out of memory with R rows ...", in order

    def stop(self, failure: str) -> None:
        """The engine failed mid-run: plain generate makes the rest; its retries so far stay on record."""
        if self.bridge is not None:
            self.retries = list(self.bridge.retries)
        self.bridge, self.fallback = None, failure

    def retry_log(self) -> list[str]:
        return list(self.bridge.retries) if self.bridge is not None else list(self.retries)

    def close(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
        self.bridge = None


class HFEngineBridge:
    """An :class:`~evalsuite.engine.Engine` fed through an HFGenerator's codec."""

    def __init__(self, generator: Any):
        from evalsuite.engine import Engine, EngineOptions

        codec = generator.codec
        self.codec = codec
        on_cpu = generator.model.device.type != "cuda"
        cap = generator.loaded.gpu_cap
        invariant = generator.options.hf.batch_invariant
        options = (EngineOptions(max_rows=64, invariant_rows=64, batch_invariant=invariant) if on_cpu else
                   EngineOptions(gpu_cap_bytes=cap.cap_bytes if cap is not None else None, batch_invariant=invariant))
        self.engine = Engine(
            generator.model, generator.loaded.tokenizer, eos_token_ids=sorted(codec.eos_ids),
            decode_tokens=codec.decode,
            decode=lambda request, prompt_ids, ids: codec.decode_continuation(prompt_ids, ids),
            vocab_limit=codec.vocab_limit, context_length=generator.context_length, options=options)
        self.retries: list[str] = []  # "out of memory with R rows: retried with R/2", in order
        self.failure: str | None = None  # why plain generate took over mid-run, if it did

    def generate(self, requests: Sequence[GenerationRequest],
                 params: SamplingParams) -> Generator[Completion, None, list[GenerationRequest]]:
        """Yield the engine's completions; return the requests (their unfinished samples only) that plain
        generate must finish, empty when the engine finished everything."""
        made: dict[str, set[int]] = defaultdict(set)
        pending = [r for r in requests if r.sample_indices]
        while pending:
            prompt_ids = [self.codec.encode_request(r) for r in pending]
            try:
                for completion in self.engine.generate(pending, params, prompt_ids=prompt_ids):
                    made[completion.task_id].add(completion.sample_index)
                    yield completion
                return []
            except Exception as error:  # noqa: BLE001 - any engine failure: keep what was made, then go on
                out_of_memory, why = is_out_of_memory(error), one_line(error)
            # outside the handler: the failed call's frames (its cache and activations) are unreachable now
            pending = unfinished(requests, made)
            free_accelerator_memory()
            left = sum(len(r.sample_indices) for r in pending)
            rows = self.engine.stats.rows or min(self.engine.options.max_rows, left)
            done = sum(len(indices) for indices in made.values())
            if out_of_memory and rows // 2 >= MIN_ROWS:
                self.engine.options = replace(self.engine.options, max_rows=rows // 2,
                                              invariant_rows=min(rows // 2, self.engine.options.invariant_rows))
                invariance = (" (batch invariance no longer holds: the rest runs narrower steps)"
                              if self.engine.options.batch_invariant else "")
                self._note(self.retries, f"engine out of memory with {rows} rows after {done} completions ({why}): "
                                         f"retrying the rest with {rows // 2} rows{invariance}")
                continue
            self.failure = (f"engine failed mid-run after {done} completions ({why}); plain "
                            "transformers generate made the rest")
            self._note(None, self.failure)
            return pending
        return []

    def describe(self) -> dict[str, Any]:
        return self.engine.describe()

    def close(self) -> None:
        self.engine.close()

    @staticmethod
    def _note(log: list[str] | None, line: str) -> None:
        if log is not None:
            log.append(line)
        print(f"warning: {line}", file=sys.stderr)


def unfinished(requests: Sequence[GenerationRequest], made: dict[str, set[int]]) -> list[GenerationRequest]:
    """The requests with only the sample indices not yet made."""
    left = []
    for request in requests:
        indices = tuple(i for i in request.sample_indices if i not in made.get(request.task_id, ()))
        if indices:
            left.append(replace(request, sample_indices=indices))
    return left


WHOLE_MODEL_PLACEMENTS = ("single-device", "gpu")  # placements whose modules hold plain, whole weights


def engine_for(generator: Any) -> HFEngineBridge | None:
    """The engine for this generator, built once; None where plain ``generate`` must run: the user chose
    ``--engine transformers``, the model is not one the engine covers (architecture, quantized or
    offloaded weights, a device without CUDA... see ``Engine.unsupported_reason``), its set-up failed, or it
    failed earlier in this run. Why it does not run is kept in ``generator.engine_status`` (one line,
    written into the run record)."""
    from evalsuite.engine import Engine
    from evalsuite.engine.engine import InjectedFault

    status: EngineStatus = generator.engine_status
    if status.decided:
        return status.bridge
    bridge = None
    reason = fallback_reason(generator, Engine)
    if reason is None:
        InjectedFault.from_environment()  # a bad test-hook value is the caller's error, not an engine failure
        try:
            bridge = HFEngineBridge(generator)
        except Exception as error:  # noqa: BLE001 - set-up failed: plain generate runs the whole workload
            reason = f"engine set-up failed ({one_line(error)}); plain transformers generate ran"
        if bridge is None:  # outside the handler: what the failed set-up made is unreachable now
            free_accelerator_memory()
            HFEngineBridge._note(None, reason or "engine set-up failed")
    status.decided, status.fallback, status.bridge = True, reason, bridge
    return bridge


def fallback_reason(generator: Any, engine_cls) -> str | None:
    choice = generator.options.hf.engine
    if choice == "transformers":
        return "--engine transformers"
    loaded = generator.loaded
    if loaded.strategy not in WHOLE_MODEL_PLACEMENTS:
        # ZeRO-partitioned, kernel-injected, quantized or offloaded: the loader's runtime decodes
        return f"placement {loaded.strategy!r} does not hold whole weights on one device"
    if loaded.plan is not None and not loaded.plan.engine_room and choice != "evalsuite":
        return "the loading plan leaves no room for the engine's workspace beside the weights (see the plan's notes)"
    if generator.model.device.type != "cuda" and choice != "evalsuite":
        # measured on 2 CPU cores, SmolLM2-135M greedy, 1 thread: plain generate 12.5-13.5 tokens/s, the engine
        # 9.0-9.8 (docs/benchmarks.md); --engine evalsuite still runs it there
        return f"the engine runs on CUDA by default; on {generator.model.device.type} plain generate is faster"
    return engine_cls.unsupported_reason(generator.model)
