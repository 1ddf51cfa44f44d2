"""The ``hf`` backend: a transformers causal LM generating batches of left-padded prompts.

Batches hold rows of similar prompt length (see :mod:`evalsuite.generation.hf.batching`); each row's
completions are yielded the moment the row ends, not when its batch does (see
:mod:`evalsuite.generation.hf.streaming`). Sampling goes through the counter-based
:class:`~evalsuite.engine.sampling.SeededSampler`, so a sample's text does not depend on which other
rows share its batch. On CUDA out-of-memory the batch is halved and the rows not yet yielded are
retried; completions already yielded are never redone. Where the fast engine (``evalsuite.engine``)
applies, it takes the whole workload instead, through the same
:class:`~evalsuite.generation.hf.tokenizer_fixes.PromptCodec`.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

from evalsuite.devices import free_accelerator_memory, release_device_memory
from evalsuite.engine.sampling import SeededSampler, row_seeds
from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import GenerationOptions, Generator
from evalsuite.generation.hf.batching import CPU_BATCH_SIZE, Row, auto_batch_size, make_rows
from evalsuite.generation.hf.engine_bridge import EngineStatus, HFEngineBridge, engine_for
from evalsuite.generation.hf.loading import (
    LoadedModel,
    config_summary,
    load_model,
    model_context_length,
    output_embedding_rows,
)
from evalsuite.generation.hf.stopping import MaskIdsFrom, StopTracker
from evalsuite.generation.hf.streaming import BatchDone, RowEnded, StreamedCall, TokensDecoded
from evalsuite.generation.hf.tokenizer_fixes import PromptCodec, prepare_codec
from evalsuite.models.registry import ModelSpec
from evalsuite.records import Completion, GenerationRequest, SamplingParams
from evalsuite.tasks.task import truncate_at_stop

# Settings a checkpoint's generation_config.json may carry that would change what greedy/seeded decoding
# picks; they are reset so that the sampling parameters of the run are the only ones in force.
_NEUTRAL_GENERATION = dict(do_sample=False, num_beams=1, repetition_penalty=1.0, no_repeat_ngram_size=0,
                           min_new_tokens=0, length_penalty=1.0, encoder_repetition_penalty=1.0)

class HFGenerator(Generator):
    def __init__(self, loaded: LoadedModel, options: GenerationOptions):
        self.loaded = loaded
        self.options = options
        self.model = loaded.model
        self.embedding_rows = output_embedding_rows(self.model)
        self.codec: PromptCodec = prepare_codec(loaded.tokenizer, loaded.spec, self.embedding_rows,
                                                self.model.generation_config)
        self.ignored_generation_config = _non_neutral(self.model.generation_config)
        # generate() fills every unset setting from model.generation_config: make it neutral, once.
        self.model.generation_config = self._generation_config(max_new_tokens=None)
        self.context_length = model_context_length(self.model.config)
        self.batch_size: int | None = options.hf.batch_size
        self.oom_halvings = 0
        self._context_warned = False  # the context-cut warning is said once a model
        self._max_length_warned = False  # so is the --max-length one
        self.engine_status = EngineStatus()  # decided at the first generate call (engine_bridge.engine_for)

    @classmethod
    def load(cls, spec: ModelSpec, options: GenerationOptions) -> HFGenerator:
        loaded = load_model(spec, options)
        try:
            return cls(loaded, options)
        except BaseException:
            loaded.release()  # the caller frees the memory once this traceback is gone
            raise

    # -- the contract ----------------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> Iterator[Completion]:
        self._warn_context_cut(requests, params)
        bridge = self._fast_engine()
        if bridge is not None:
            bridge.engine.token_listener = self.token_listener
            requests = yield from bridge.generate(requests, params)  # what the engine could not finish
            if bridge.failure is not None:  # plain generate makes the rest of this run
                self.engine_status.stop(bridge.failure)
        rows = make_rows(requests, params, self.codec.encode_request)
        if not rows:
            return
        self._check_context(rows, params)
        size = self.batch_size or self._auto_batch_size(rows, params)
        if self.loaded.batch_limit:
            size = min(size, self.loaded.batch_limit)
        pending = deque(rows)
        while pending:
            batch = [pending.popleft() for _ in range(min(size, len(pending)))]
            ended: set[int] = set()  # rows of this batch already yielded
            try:
                yield from self._generate_batch(batch, params, ended)
            except torch.OutOfMemoryError:
                pending.extendleft(reversed([row for i, row in enumerate(batch) if i not in ended]))
                free_accelerator_memory()
                if size == 1:
                    raise EvalsuiteError(f"model {self.loaded.spec.name!r} runs out of memory even at batch size "
                                         "1; use a smaller --max-new-tokens or a loading plan that offloads") \
                        from None
                size //= 2
                self.oom_halvings += 1
                print(f"out of memory: batch size halved to {size}", file=sys.stderr)
                continue
            self.batch_size = size  # the size that worked is kept for the next call

    def describe(self) -> dict[str, Any]:
        spec = self.loaded.spec
        return {
            "backend": "hf",
            "model": spec.name,
            "location": spec.location,
            "source": spec.source,
            "family": spec.family,
            "revision": self.loaded.revision,
            "requested_revision": spec.revision,  # --revision (branch, tag or commit), None: the default branch
            "dtype": self.loaded.dtype,
            "device": str(self.loaded.device),
            "placement": self.loaded.placement,
            "engine": self._engine_description(),
            "engine_fallback": self.engine_status.fallback,  # why plain generate ran instead of the engine
            "engine_retries": self.engine_status.retry_log(),  # the engine's out-of-memory retries, in order
            "gpu_peak_reserved_gib": _peak_reserved_gib(self.loaded.device),
            "cpu_threads": torch.get_num_threads() if self.loaded.device.type == "cpu" else None,
            "batch_size": self.batch_size if self.batch_size is not None else "auto",
            "oom_halvings": self.oom_halvings,
            "trust_remote_code": bool(self.options.loading.trust_remote_code or spec.trust_remote_code),
            "config": config_summary(self.model.config),
            "tokenizer": {"class": type(self.loaded.tokenizer).__name__, **self.codec.describe()},
            "tokenizer_fixes": list(self.codec.fixes),
            "ignored_generation_config": self.ignored_generation_config,
        }

    def expected_tokens_per_s(self, rows: int = 1) -> float | None:
        if self.loaded.device.type != "cpu":
            return None
        from evalsuite.planner.memory import shape_from_model
        from evalsuite.planner.speed import SPEED

        shape = shape_from_model(self.model, self.model.config)  # what the planner reads, text config included
        batch = max(1, min(rows, self.batch_size or CPU_BATCH_SIZE))  # a step makes one token of each row
        step = SPEED.cpu_step(shape.weight_bytes(self.loaded.dtype), shape.num_params, shape.num_layers, batch,
                              torch.get_num_threads())
        return batch / step

    def weights_identity(self) -> str | None:
        return self.loaded.dtype

    def chat_template(self) -> str | None:
        return self.codec.chat_template

    def opens_code_fence(self) -> bool:
        return True  # the chat prompt ends with the response prefix's opened ```python block

    def identity(self) -> dict[str, Any]:
        """What decides this model's completions beyond the run's settings: the checkpoint's bytes (hub
        commit or local content fingerprint), the tokenizer policy, the engine and the library versions."""
        import transformers

        engine = "evalsuite" if self._fast_engine() is not None else "transformers"
        identity: dict[str, Any] = {
            "revision": self.loaded.revision, "tokenizer_policy": self.codec.policy(), "engine": engine,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
        if engine == "evalsuite" and self.options.hf.batch_invariant:  # other sampled tokens: another run (named
            identity["batch_invariant"] = True  # only where set, so the folders of earlier runs stay as they were)
        remote = remote_code_classes(self.model, self.loaded.tokenizer)
        if remote:  # the checkpoint's own modeling code ran (--trust-remote-code), not transformers' class for its
            identity["remote_code"] = remote  # model type: another implementation, another run (named only then)
        return identity

    def _engine_description(self) -> Any:
        bridge = self.engine_status.bridge
        return {"name": "evalsuite", **bridge.describe()} if bridge is not None else "transformers"

    def close(self) -> None:
        """Release everything this generator put on a device, so that the next model of the command plans and
        loads as if it were alone: the engine (its fused weights; its KV cache and CUDA graphs live only while
        a generate call runs), the model, the allocator's cached blocks and cuBLAS workspaces, and the
        ``--gpu-memory`` cap set for this load. Idempotent."""
        self.engine_status.close()
        self.token_listener = None  # the run's progress callback: nothing of the run outlives it here
        self.model = None
        self.loaded.release()
        release_device_memory()
        device = self.loaded.device
        if getattr(device, "type", None) == "cuda" and torch.cuda.is_initialized():
            torch.cuda.reset_peak_memory_stats(device)  # the next model's peak is its own

    # -- internals ---------------------------------------------------------------------------------
    def _fast_engine(self) -> HFEngineBridge | None:
        """The seam to the fast decoding engine (``evalsuite.engine``): it takes the whole workload where it
        applies (CUDA, a covered architecture) unless ``GenerationOptions.engine == "transformers"``;
        otherwise None and every batch goes through plain ``model.generate`` below."""
        return engine_for(self)

    def _auto_batch_size(self, rows: list[Row], params: SamplingParams) -> int:
        # the KV cache is kept in the compute dtype, which is the model's float dtype even when its
        # weights are int8/nf4 (loaded.dtype names the weights' precision)
        dtype_bytes = self.model.dtype.itemsize if self.model.dtype.is_floating_point else 2
        return auto_batch_size(self.model.config, self.loaded.device, dtype_bytes,
                               len(rows[0].prompt_ids), params.max_new_tokens, cap_bytes=self.loaded.gpu_cap_bytes)

    def _warn_context_cut(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> None:
        """Say once, before generating, when the model's context is shorter than a prompt plus its token budget:
        those samples stop at the context's end (their finish_reason says "length"), not at --max-new-tokens."""
        if (self._context_warned or self.context_length is None) and (
                self._max_length_warned or params.max_length is None):
            return
        lengths = [len(self.codec.encode_request(request)) for request in requests if request.sample_indices]
        over = [n for n in lengths if n >= params.max_length] if params.max_length is not None else []
        if over and not self._max_length_warned:
            self._max_length_warned = True
            print(f"warning: {len(over)} of {len(lengths)} prompts are --max-length {params.max_length} tokens or "
                  f"longer (the longest {max(over)}): their samples get one token each", file=sys.stderr)
        if self.context_length is None or self._context_warned:
            return
        cut = [n for n in lengths if n < self.context_length and params.new_tokens_for(n) > self.context_length - n]
        if cut:
            self._context_warned = True
            print(f"warning: {len(cut)} of {len(lengths)} prompts leave less room than --max-new-tokens "
                  f"{params.max_new_tokens} in {self.loaded.spec.name!r}'s context of {self.context_length} "
                  f"positions: their samples stop at the context's end (a prompt of {max(cut)} tokens leaves "
                  f"{self.context_length - max(cut)})", file=sys.stderr)

    def _check_context(self, rows: list[Row], params: SamplingParams) -> None:
        if self.context_length is None:
            return
        longest = rows[0]
        if len(longest.prompt_ids) >= self.context_length:
            raise EvalsuiteError(f"prompt of {longest.request.task_id} is {len(longest.prompt_ids)} tokens; model "
                                 f"{self.loaded.spec.name!r} takes at most {self.context_length}")

    def _generation_config(self, max_new_tokens: int | None) -> GenerationConfig:
        eos = sorted(self.codec.eos_ids)
        return GenerationConfig(max_new_tokens=max_new_tokens, pad_token_id=self.codec.pad_id,
                                eos_token_id=eos or None, bos_token_id=self.codec.bos_id, use_cache=True,
                                **_NEUTRAL_GENERATION)

    def _generate_batch(self, batch: list[Row], params: SamplingParams, ended: set[int]) -> Iterator[Completion]:
        """One ``generate`` call: yields each row's completions as the row ends (the others when the call returns),
        adding the row's index to ``ended``. Stopped (Ctrl-C, SIGTERM, SIGHUP, raised here or thrown in at a yield
        by the caller), it first yields every row that had ended, then re-raises."""
        device = self.loaded.device
        length = max(len(row.prompt_ids) for row in batch)
        input_ids = torch.full((len(batch), length), self.codec.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(batch), length), dtype=torch.long)
        for i, row in enumerate(batch):  # left padding: every prompt ends where generation starts
            input_ids[i, length - len(row.prompt_ids):] = torch.tensor(row.prompt_ids)
            attention_mask[i, length - len(row.prompt_ids):] = 1
        limits = [params.new_tokens_for(len(row.prompt_ids)) for row in batch]  # each row's own (--max-length)
        max_new = max(limits)
        if self.context_length is not None:
            max_new = max(1, min(max_new, self.context_length - length))

        processors = LogitsProcessorList()
        if self.embedding_rows is not None and self.codec.vocab_limit < self.embedding_rows:
            processors.append(MaskIdsFrom(self.codec.vocab_limit))
        if not params.greedy:
            seeds = torch.cat([row_seeds(params.seed, row.request.task_id, row.sample_indices) for row in batch])
            processors.append(SeededSampler(seeds.to(device), params, prompt_length=length))
        tracker = StopTracker(self.codec, [row.prompt_ids for row in batch],
                              [row.request.stop_sequences for row in batch], prompt_length=length,
                              limits=limits if min(limits) < max_new else None)

        # Thread-local state the call needs in the thread that decodes: inference mode, the current CUDA device.
        cuda_device = device if device.type == "cuda" else None  # the model's GPU, not the process's current one

        def call() -> torch.Tensor:
            if cuda_device is not None:
                torch.cuda.set_device(cuda_device)
            with torch.inference_mode():
                return self.model.generate(input_ids=input_ids.to(device), attention_mask=attention_mask.to(device),
                                           generation_config=self._generation_config(max_new),
                                           logits_processor=processors,
                                           stopping_criteria=StoppingCriteriaList([tracker]))

        ready: deque[Completion] = deque()  # completions of ended rows, not yielded yet

        def row_ended(index: int, generated: list[int]) -> None:
            if index not in ended:
                ended.add(index)
                ready.extend(self._completions(batch[index], generated, tracker.ended_at[index],
                                               tracker.reason[index]))

        # Rows are saved as they end on the CPU, where one batch can take minutes; a GPU decodes where it always has.
        streamed = StreamedCall(call, tracker.cancel, threaded=device.type == "cpu")
        tracker.on_tokens = lambda count: streamed.post(TokensDecoded(count))
        tracker.on_row_end = lambda index, generated: streamed.post(RowEnded(index, generated))
        with streamed:
            try:
                for event in streamed.events():
                    if isinstance(event, TokensDecoded):
                        if self.token_listener is not None:
                            self.token_listener(event.count)
                    elif isinstance(event, RowEnded):
                        row_ended(event.index, event.generated)
                    elif isinstance(event, BatchDone):
                        output = event.output[:, length:].tolist()
                        for index in range(len(batch)):
                            row_ended(index, output[index])
                    while ready:
                        yield ready.popleft()
            except KeyboardInterrupt:  # the rows that had ended when the job was stopped are handed over first
                for event in streamed.stop():
                    row_ended(event.index, event.generated)
                while ready:
                    yield ready.popleft()
                raise

    def _completions(self, row: Row, generated: list[int], ended_at: int | None,
                     reason: str | None) -> list[Completion]:
        kept = generated[:ended_at] if ended_at is not None else generated
        text_ids = kept[:-1] if reason == "eos" else kept
        raw = self.codec.decode_continuation(row.prompt_ids, text_ids)
        text = truncate_at_stop(raw, row.request.stop_sequences)
        finish = "stop" if len(text) < len(raw) else (reason or "length")
        return [Completion(task_id=row.request.task_id, sample_index=index, text=text, finish_reason=finish,
                           num_tokens=len(kept), raw_text=raw) for index in row.sample_indices]


def _non_neutral(generation_config: Any) -> dict[str, Any]:
    """The checkpoint's generation settings that we override (recorded so nobody wonders)."""
    if generation_config is None:
        return {}
    defaults = GenerationConfig().to_dict()
    watched = ("do_sample", "temperature", "top_p", "top_k", "num_beams", "repetition_penalty",
               "no_repeat_ngram_size", "min_length", "min_new_tokens", "length_penalty")
    current = generation_config.to_dict()
    return {k: current[k] for k in watched if k in current and current[k] != defaults.get(k)}


def _peak_reserved_gib(device: Any) -> float | None:
    """The most GPU memory this process's allocator held at once (weights, cache, workspaces): what a
    ``--gpu-memory`` cap bounds."""
    if getattr(device, "type", None) != "cuda":
        return None
    return round(torch.cuda.max_memory_reserved(device) / 2**30, 3)


def remote_code_classes(model: Any, tokenizer: Any) -> dict[str, str]:
    """The model's and tokenizer's classes where either came from the checkpoint's own code (transformers loads
    it as ``transformers_modules.*`` under ``trust_remote_code``); empty where transformers' own classes ran."""
    out = {}
    for role, obj in (("model", model), ("tokenizer", tokenizer)):
        cls = type(obj)
        if cls.__module__.startswith("transformers_modules"):
            out[role] = f"{cls.__module__}.{cls.__qualname__}"
    return out

