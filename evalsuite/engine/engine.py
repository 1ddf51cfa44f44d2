"""The sampling engine behind the ``hf`` backend: many samples per prompt, fast, same tokens as transformers.

What makes it faster than ``model.generate`` (measured in benchmarks/bench_generate.py):
- the prompt is run once and its keys and values stored once for all of its samples (kv_cache.py), and
  prompts admitted together share one forward of the model (packed; each attends to its own tokens only,
  packed_attention.py);
- a finished sample leaves its row at once and a waiting one takes it (scheduler.py), so no row decodes
  padding, and the batch is as large as free memory allows;
- each decode step is one CUDA graph replay, with attention reading only the valid cache entries
  (runner.py, kernels.py);
- the host never waits on the device within a step: tokens come back asynchronously, one step behind.
Sampling is :func:`evalsuite.engine.sampling.choose_tokens`, with each sample's seed and step, so a
sample is the same whichever path, batch or row produced it.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import torch

from evalsuite.devices import allocatable_bytes
from evalsuite.engine.compile_ahead import CompileAhead
from evalsuite.engine.kernels import triton_usable
from evalsuite.engine.kv_cache import (
    FIRST_BLOCK,
    GiB,
    KVCache,
    SlotPool,
    TokenArena,
    kv_bytes_per_token,
    plan_cache,
)
from evalsuite.engine.models import GenericAdapter, layout_for
from evalsuite.engine.runner import DecodeRunner
from evalsuite.engine.sampling import choose_tokens, row_seeds
from evalsuite.engine.scheduler import Decode, FinishRule, PromptJob, RowTable, SampleJob, TokenBook, waiting_queue
from evalsuite.engine.step_cost import StepCost
from evalsuite.errors import EvalsuiteError
from evalsuite.records import Completion, GenerationRequest, SamplingParams

_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Prompts run through the model several at a time (Engine.prefill): at most this many tokens a forward, in at
# most a sixty-fourth of the free device memory (taken from the KV cache's budget); on the CPU, in 1 GiB.
MAX_PACK_TOKENS = 8192
PACK_ROOM_SHARE = 64
CPU_PACK_ROOM_BYTES = 1 << 30
GROWTH_HORIZON_STEPS = 32  # admission leaves free what running samples take from the arena within these steps


def workspace_margin_bytes(weight_bytes: int) -> int:
    """cuBLAS workspaces, Triton's scratch and allocator rounding: 64 MiB, plus a thirty-second of the weights
    up to 320 MiB more (larger models take larger matrix-product workspaces and rounding)."""
    return 64 * 2**20 + min(320 * 2**20, weight_bytes // 32)


@dataclass(frozen=True)
class EngineOptions:
    max_rows: int = 512  # largest decode batch; fewer when memory does not allow
    memory_fraction: float = 0.92  # of the free device memory that cache and workspace may take
    cuda_graphs: bool | None = None  # None: on for CUDA
    in_flight: int = 1  # decode steps queued on the device beyond the one being read back
    stop_check_every: int = 8
    # attention over a prompt computed once per block of its rows (Triton only; see kernels.py); below this
    # many samples per prompt, per row. Only for multi-head attention: measured on the reference GPU
    # (docs/benchmarks.md) it gains 13% on GPT-J-6B (MHA) but loses 10-26% on GQA models (Mistral-7B,
    # Qwen2.5-1.5B), whose few KV heads make reading the prompt per row cheap.
    shared_prefix_min_samples: int = 4
    shared_prefix_mha_only: bool = True
    # projections that read one input as one matrix product (models.py, Layout.fused; the model's weights
    # become views into one tensor per layer)
    fuse_projections: bool = True
    # prompts through the model several in one forward (Engine.prefill), where the family allows
    pack_prompts: bool = True
    # the model's --gpu-memory cap (its loading plan's): cache, workspace and fused weights are sized within it
    gpu_cap_bytes: int | None = None
    # Every decode step as wide as ``invariant_rows`` (idle rows padded) and attention over a row's keys in
    # one part, so a sample's tokens do not depend on which other samples share its batch: matrix-product
    # kernels and attention's split are chosen by the batch's size, and their rounding differs between choices.
    # The same completions on one GPU and under data parallel (2,559 of 2,560 without it).
    batch_invariant: bool = False
    invariant_rows: int = 256
    # at batches that fill the GPU, over prompts shared by many rows, rows much longer than the batch's mean read
    # their own keys in several parts (kernels.balanced_work): the attention no longer ends on its longest rows
    balance_attention: bool = True
    # at most this many bytes of KV cache (prompts and arena); None: what the device's free memory allows
    cache_budget_bytes: int | None = None
    first_block: int = FIRST_BLOCK  # tokens of a sample's first block in the arena (kv_cache.py), doubled as it grows


@dataclass
class EngineStats:
    steps: int = 0
    row_steps: int = 0  # sum of batch sizes over steps (includes idle rows of a bucket)
    tokens: int = 0
    prefills: int = 0
    rows: int = 0
    capture_s: float = 0.0
    capture_s_by_bucket: dict[int, float] = field(default_factory=dict)  # each CUDA graph's capture
    warm_up_s: float = 0.0  # of capture_s: the eager steps before the graphs (kernels compiled or loaded)
    compile_ahead: CompileAhead | None = None  # of warm_up_s: the step's new kernels, compiled side by side
    cache_gib: float = 0.0
    shared_prefix: bool = False
    # where the host's time went (the per-step budget of benchmarks/bench_generate.py): prompts through the
    # model's forward, waiting for the device's tokens (the device is the bottleneck while this grows), and
    # the whole decode loop (what is left is host work: admission, launches, finish checks, detokenizing)
    prefill_s: float = 0.0
    prefill_forwards: int = 0
    # keys and values each step had to read at least (its busy rows' generated ones, each of their prompts' once),
    # summed over steps: with the weights, the step's memory floor (benchmarks/bench_generate.py)
    context_tokens: int = 0
    wait_s: float = 0.0
    loop_s: float = 0.0
    # the arena (kv_cache.py): blocks doubled (in place, or moved: their keys copied to a new block), and samples
    # evicted for room (each starts again; its tokens so far are dropped and counted here, not in ``tokens``)
    grown: int = 0
    moves: int = 0
    evictions: int = 0
    evicted_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Engine:
    """Generation for one loaded transformers model. Use :meth:`supports` first; anything it declines goes
    through plain ``model.generate``."""

    @staticmethod
    def unsupported_reason(model) -> str | None:
        if layout_for(model) is None:
            return f"architecture {type(model).__name__} is not covered by the engine"
        if _quantized(model):
            return "quantized weights"
        devices = {p.device for p in model.parameters()}
        if len(devices) != 1 or next(iter(devices)).type == "meta":
            return "weights spread over several devices or offloaded"
        dtypes = {p.dtype for p in model.parameters()}
        if len(dtypes) != 1 or next(iter(dtypes)) not in _DTYPES:
            return f"parameter dtypes {sorted(map(str, dtypes))}"
        return GenericAdapter.unsupported_reason(model)

    @classmethod
    def supports(cls, model) -> bool:
        return cls.unsupported_reason(model) is None

    def __init__(self, model, tokenizer=None, *, eos_token_ids: Sequence[int] | None = None,
                 decode_tokens: Callable[[Sequence[int]], str] | None = None, decode: Decode | None = None,
                 vocab_limit: int | None = None, context_length: int | None = None,
                 options: EngineOptions = EngineOptions()):
        """``decode_tokens(ids)``: plain text of token ids (scanned for stop sequences).
        ``decode(request, prompt_ids, generated_ids)``: the completion text (before stop truncation), as the
        caller's plain path builds it; default ``decode_tokens(generated_ids)``.
        ``vocab_limit``: ids from here on are never generated (embedding rows past the tokenizer's vocabulary).
        ``context_length``: positions the model takes; each sample's limit is cut to fit after its prompt."""
        reason = self.unsupported_reason(model)
        if reason:
            raise EvalsuiteError(f"the sampling engine cannot run this model: {reason}")
        self.model = model.eval()
        self.adapter = GenericAdapter(model, fuse=options.fuse_projections, cap_bytes=options.gpu_cap_bytes)
        self.tokenizer = tokenizer
        self.options = options
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.use_triton = triton_usable(self.device)
        self.use_graphs = self.device.type == "cuda" if options.cuda_graphs is None else options.cuda_graphs
        self.eos_ids = frozenset(eos_token_ids if eos_token_ids is not None else _eos_ids(model, tokenizer))
        if decode_tokens is None:
            if tokenizer is None:
                raise EvalsuiteError("the sampling engine needs a tokenizer or a decode function")
            decode_tokens = lambda ids: tokenizer.decode(ids, skip_special_tokens=True)  # noqa: E731
        self.decode_tokens = decode_tokens
        self.decode = decode or (lambda request, prompt_ids, ids: decode_tokens(ids))
        rows = model.get_output_embeddings().weight.shape[0]
        self.vocab_limit = vocab_limit if vocab_limit is not None and vocab_limit < rows else None
        self.context_length = context_length or self.adapter.max_positions
        self.stats = EngineStats()
        self.pack_tokens = 0  # set per generate call, from the memory left (see _plan)
        self.token_listener: Callable[[int], None] | None = None  # told how many tokens each read-back brought
        self.fault = InjectedFault.from_environment()
        self.fault.at_setup()

    # ----------------------------------------------------------------------------------------- public
    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams, *,
                 prompt_ids: Sequence[Sequence[int]] | None = None, ignore_eos: bool = False,
                 forced_lengths: Callable[[str, int], int | None] | None = None) -> Iterator[Completion]:
        """Yield one Completion per (request, sample index) as soon as it is final.

        ``prompt_ids``: the token ids of each request's prompt, as the caller's tokenizer settings produce them
        (default: ``tokenizer(prompt).input_ids``). ``ignore_eos``: generate exactly ``max_new_tokens``.
        ``forced_lengths(task_id, sample_index)``: benchmarks only, end that sample after that many tokens
        as if the model had emitted end-of-sequence.
        """
        if not requests:
            return
        if prompt_ids is None:
            if self.tokenizer is None:
                raise EvalsuiteError("the sampling engine needs prompt token ids or a tokenizer")
            prompt_ids = [self.tokenizer(r.prompt).input_ids for r in requests]
        requests = list(requests)
        self.stats = EngineStats()
        fan_out: dict[str, tuple[int, ...]] = {}
        if params.greedy and forced_lengths is None:  # every sample of a prompt is the same text: decode it once
            fan_out = {r.task_id: r.sample_indices for r in requests if len(r.sample_indices) > 1}
            requests = [replace(r, sample_indices=r.sample_indices[:1]) for r in requests]
        # The current CUDA device is the model's for the whole call: CUDA graphs capture on it, Triton launches on
        # it and the KV budget reads its free memory. The planner may place a model on another GPU than the
        # current one (the freest; --device cuda:N), and a graph captured on the wrong device is empty.
        on_device = torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()
        with torch.inference_mode(), on_device:
            for completion in self._generate(requests, [list(ids) for ids in prompt_ids], params, ignore_eos,
                                             forced_lengths):
                for index in fan_out.get(completion.task_id, (completion.sample_index,)):
                    yield replace(completion, sample_index=index)

    def close(self) -> None:
        """Drop every reference this engine holds to device memory (the model, the adapter and its fused weight
        copies) or to its caller (tokenizer, listener); the KV cache, workspaces and CUDA graphs (their private
        pool) belong to one :meth:`generate` call and are gone when it ends or is closed."""
        self.model = self.adapter = self.tokenizer = self.token_listener = None  # type: ignore[assignment]

    def describe(self) -> dict[str, Any]:
        return {"engine": "evalsuite", "family": self.adapter.family,
                "attention": "triton" if self.use_triton else "torch", "cuda_graphs": self.use_graphs,
                "fused_projections": self.adapter.fuse, "fuse_skipped": self.adapter.fuse_skipped,
                "rows": self.stats.rows, "cache_gib": round(self.stats.cache_gib, 3),
                # one-time work of the last generate call (kernel warm-up, graph capture): its first call in a
                # process also pays the process's lazy CUDA set-up, which a later model's does not
                "setup_s": round(self.stats.capture_s, 3),
                **({"compile_ahead": asdict(ahead)} if (ahead := self.stats.compile_ahead) else {}),
                "steps": self.stats.steps, "prefill_s": round(self.stats.prefill_s, 3),
                "wait_s": round(self.stats.wait_s, 3), "loop_s": round(self.stats.loop_s, 3),
                **({"step_cost": asdict(cost)} if (cost := self.step_cost()) else {}),
                **({"batch_invariant_rows": self.options.invariant_rows} if self.options.batch_invariant else {})}

    def step_cost(self) -> StepCost | None:
        """The last generate call's mean decode step (None before any step)."""
        stats = self.stats
        if not stats.steps or self.model is None:
            return None
        parameters = list(self.model.parameters())  # a tied weight once
        count = sum(p.numel() for p in parameters)
        per_token = kv_bytes_per_token(self.adapter.spec, self.adapter.num_layers, self.dtype)
        return StepCost(steps=stats.steps, decode_ms=round(1000 * (stats.loop_s - stats.prefill_s) / stats.steps, 4),
                        weight_bytes=sum(p.numel() * p.element_size() for p in parameters),
                        kv_bytes=per_token * stats.context_tokens / stats.steps,
                        flops=2.0 * count * stats.row_steps / stats.steps)

    # ------------------------------------------------------------------------------------------ setup
    def _jobs(self, requests, prompt_ids, params, forced_lengths) -> list[PromptJob]:
        jobs, index = [], 0
        for request, ids in zip(requests, prompt_ids):
            if not ids:
                raise EvalsuiteError(f"{request.task_id}: empty prompt")
            prompt = PromptJob(request=request, ids=ids, first_sample=index)
            room = params.new_tokens_for(len(ids))
            if self.context_length is not None:
                if len(ids) >= self.context_length:
                    raise EvalsuiteError(f"prompt of {request.task_id} is {len(ids)} tokens; the model takes at "
                                         f"most {self.context_length}")
                room = min(room, self.context_length - len(ids))
            for sample_index in request.sample_indices:
                limit, forced = room, False
                if forced_lengths is not None:
                    forced_limit = forced_lengths(request.task_id, sample_index)
                    if forced_limit is not None:
                        limit, forced = max(1, min(limit, forced_limit)), True
                prompt.samples.append(SampleJob(index=index, prompt=prompt, sample_index=sample_index,
                                                limit=limit, forced_end=forced))
                index += 1
            prompt.unfinished = len(prompt.samples)
            if prompt.samples:
                jobs.append(prompt)
        return jobs

    def _plan(self, prompts: list[PromptJob], params: SamplingParams):
        spec = self.adapter.spec
        prompt_capacity = max(len(p.ids) for p in prompts)
        gen_capacity = max(1, max(s.limit for p in prompts for s in p.samples))
        samples = sum(len(p.samples) for p in prompts)
        per_prompt = max(len(p.samples) for p in prompts)
        per_token = kv_bytes_per_token(spec, self.adapter.num_layers, self.dtype)
        row_limit = self.options.invariant_rows if self.options.batch_invariant else self.options.max_rows
        max_rows = min(row_limit, samples)
        if self.device.type != "cuda":
            self.pack_tokens = self.pack_length(CPU_PACK_ROOM_BYTES, prompt_capacity)
            # host memory is not measured: the arena takes what a full capacity per row would (largest blocks are
            # powers of two, up to twice the capacity: a full largest block per row could be twice that)
            return plan_cache(budget_bytes=self.options.cache_budget_bytes or 1 << 62, bytes_per_token=per_token,
                              prompt_capacity=prompt_capacity,
                              gen_capacity=gen_capacity, num_prompts=len(prompts), samples_per_prompt=per_prompt,
                              max_rows=max_rows, first_block=self.options.first_block,
                              row_limit=gen_capacity)
        torch.cuda.empty_cache()
        free = allocatable_bytes(self.device, self.options.gpu_cap_bytes)  # within the model's --gpu-memory cap
        self.pack_tokens = self.pack_length(free // PACK_ROOM_SHARE, prompt_capacity)
        budget = (int(free * self.options.memory_fraction)
                  - self.workspace_bytes(self.decode_width(max_rows), prompt_capacity)
                  - (self.pack_scratch_bytes(self.pack_tokens) if self.pack_tokens > prompt_capacity else 0))
        if self.options.cache_budget_bytes is not None:
            budget = min(budget, self.options.cache_budget_bytes)
        plan = plan_cache(budget_bytes=budget, bytes_per_token=per_token, prompt_capacity=prompt_capacity,
                          gen_capacity=gen_capacity, num_prompts=len(prompts), samples_per_prompt=per_prompt,
                          max_rows=max_rows, first_block=self.options.first_block)
        if plan.total_bytes > budget:  # not even one row fits: say so now, not at the first step
            raise torch.OutOfMemoryError(
                f"the engine's KV cache needs {plan.total_bytes / GiB:.2f} GiB at {plan.rows} row(s); "
                f"{max(budget, 0) / GiB:.2f} GiB of {free / GiB:.2f} GiB allocatable is left after the "
                f"{max_rows}-row workspace")
        return plan

    def decode_width(self, rows: int) -> int:
        """Rows every decode step computes: ``rows`` (fewer at the end, in buckets), or under
        ``batch_invariant`` always ``invariant_rows``, whatever the workload."""
        return self.options.invariant_rows if self.options.batch_invariant else rows

    def workspace_bytes(self, rows: int, prompt_length: int) -> int:
        """Device memory the engine needs beside its KV cache: per row, the logits and the sampler's float32
        scratch over the vocabulary and the step's activations (held by the CUDA graphs' pool); once, the
        prefill of the longest prompt through the model's own forward (eager attention scores in float32)
        and a margin for cuBLAS workspaces and allocator rounding."""
        config = self.model.config
        spec = self.adapter.spec
        hidden, intermediate, item = self._widths()
        per_row = config.vocab_size * 48 + 64 * hidden
        prefill = (prompt_length * (4 * hidden + 2 * intermediate) * item
                   + spec.num_heads * prompt_length * prompt_length * 4 + config.vocab_size * 4)
        weights = sum(p.numel() * p.element_size() for p in self.model.parameters())
        return rows * per_row + prefill + workspace_margin_bytes(weights)

    def _widths(self) -> tuple[int, int, int]:
        """Hidden width, MLP width and bytes per value: what the prefill's activations scale with."""
        config = self.model.config
        hidden = config.hidden_size
        intermediate = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * hidden
        return hidden, intermediate, self.dtype.itemsize

    def pack_scratch_bytes(self, tokens: int) -> int:
        """What one forward over ``tokens`` packed prompt tokens holds besides the weights: the keys and values
        transformers caches, activations (keys and values repeated to every head included), and the attention
        scores, their softmax and the mask over all tokens (float32 at most, as eager and float32 SDPA do)."""
        spec = self.adapter.spec
        hidden, intermediate, item = self._widths()
        per_token = (kv_bytes_per_token(spec, self.adapter.num_layers, self.dtype)
                     + (4 * hidden + 2 * intermediate + 2 * spec.num_heads * spec.head_dim) * item)
        return tokens * per_token + tokens * tokens * (spec.num_heads * 8 + 8)

    def pack_length(self, room_bytes: int, prompt_capacity: int) -> int:
        """The most prompt tokens one prefill forward takes: as many as fit ``room_bytes`` of scratch, at most
        :data:`MAX_PACK_TOKENS`, never fewer than the longest prompt (which runs alone)."""
        low, high = prompt_capacity, max(prompt_capacity, MAX_PACK_TOKENS)
        while low < high:
            middle = (low + high + 1) // 2
            if self.pack_scratch_bytes(middle) <= room_bytes:
                low = middle
            else:
                high = middle - 1
        return low

    # ------------------------------------------------------------------------------------------- loop
    def _generate(self, requests, prompt_ids, params, ignore_eos, forced_lengths) -> Iterator[Completion]:
        prompts = self._jobs(requests, prompt_ids, params, forced_lengths)
        if not prompts:
            return
        plan = self._plan(prompts, params)
        cache = KVCache(plan, self.adapter.spec, self.adapter.num_layers, self.dtype, self.device)
        # positions up to the prompt and a full largest block (where a finished row stays until the host frees it)
        tables = self.adapter.position_tables(plan.prompt_capacity + plan.top_block + 1, self.device, self.dtype)
        seeds = torch.cat([row_seeds(params.seed, p.request.task_id, [s.sample_index for s in p.samples])
                           for p in prompts]).to(self.device)
        first_tokens = torch.zeros(len(seeds), dtype=torch.int64, device=self.device)
        started = time.perf_counter()
        per_prompt = max(len(p.samples) for p in prompts)
        spec = self.adapter.spec
        worth_it = spec.num_kv_heads == spec.num_heads or not self.options.shared_prefix_mha_only
        shared = (per_prompt if self.use_triton and worth_it and per_prompt >= self.options.shared_prefix_min_samples
                  else 0)
        runner = DecodeRunner(self.adapter, cache, tables, params, self.decode_width(plan.rows), seeds=seeds,
                              first_tokens=first_tokens, vocab_limit=self.vocab_limit, use_graphs=self.use_graphs,
                              use_triton=self.use_triton, shared_prefix=shared,
                              fixed_width=self.options.batch_invariant,
                              balance_attention=self.options.balance_attention)
        self.stats = EngineStats(rows=plan.rows, capture_s=time.perf_counter() - started,
                                 capture_s_by_bucket=runner.capture_s_by_bucket, warm_up_s=runner.warm_up_s,
                                 compile_ahead=runner.compile_ahead,
                                 cache_gib=plan.total_bytes / GiB, shared_prefix=bool(shared))
        rule = FinishRule(eos_ids=self.eos_ids, ignore_eos=ignore_eos, decode=self.decode,
                          decode_tokens=self.decode_tokens, check_every=self.options.stop_check_every)
        loop = _Loop(self, runner, cache, prompts, rule, params)
        try:
            yield from loop.run()
        finally:
            del loop, runner, cache
            if self.device.type == "cuda":
                torch.cuda.empty_cache()

    def prefill(self, prompts: list[PromptJob], cache: KVCache, seeds, first_tokens, params) -> None:
        """Run the prompts (each already given its cache slot) through the model, in packs of up to
        ``pack_tokens`` tokens where the family allows, store their keys and values and sample each of their
        samples' first token."""
        started = time.perf_counter()
        for pack in self._packs(prompts):
            done = self.adapter.prefill([prompt.ids for prompt in pack])
            cache.store_prompts([prompt.slot for prompt in pack], done.layers, done.owners, done.positions)
            if self.vocab_limit is not None:
                done.logits[:, self.vocab_limit:] = float("-inf")
            for prompt, logits in zip(pack, done.logits):
                n, start = len(prompt.samples), prompt.first_sample
                first_tokens[start:start + n] = choose_tokens(logits[None].expand(n, -1), seeds[start:start + n],
                                                              0, params)
            self.stats.prefills += len(pack)
            self.stats.prefill_forwards += 1
        self.stats.prefill_s += time.perf_counter() - started

    @property
    def packs(self) -> bool:
        """Prompts share forwards unless asked not to, or under ``batch_invariant``: a packed forward's matrix
        products are as wide as its pack, so a prompt's keys and first token would depend on the prompts
        packed with it (under data parallel, on which rank it ran)."""
        return self.options.pack_prompts and not self.options.batch_invariant

    def packable(self, prompt: PromptJob) -> bool:
        """Whether ``prompt`` may share a prefill forward with others."""
        return self.packs and self.adapter.packs_prompts(len(prompt.ids))

    def _packs(self, prompts: list[PromptJob]) -> Iterator[list[PromptJob]]:
        """Consecutive prompts whose tokens add up to at most ``pack_tokens``; one by one where the family
        cannot share a forward between prompts."""
        pack: list[PromptJob] = []
        tokens = 0
        for prompt in prompts:
            if not self.packable(prompt):
                yield [prompt]
                continue
            if pack and tokens + len(prompt.ids) > self.pack_tokens:
                yield pack
                pack, tokens = [], 0
            pack.append(prompt)
            tokens += len(prompt.ids)
        if pack:
            yield pack


@dataclass
class _Launched:
    batch: int
    tokens: torch.Tensor  # pinned host copy of the tokens fed at this step
    samples: np.ndarray  # row -> the workload index of its sample at launch time (-1: idle)
    event: Any


class _Loop:
    """One generate call: admit samples into free rows, launch steps, read tokens back one step late."""

    def __init__(self, engine: Engine, runner: DecodeRunner, cache: KVCache, prompts, rule: FinishRule, params):
        self.engine, self.runner, self.cache, self.rule, self.params = engine, runner, cache, rule, params
        workload = [job for prompt in prompts for job in prompt.samples]
        self.rows = RowTable(runner.rows, len(workload))
        self.waiting = waiting_queue(prompts)
        self.not_prefilled = deque(prompts)  # in queue order: what a prefill may take ahead of need
        self.prompt_slots = SlotPool(cache.plan.prompt_slots)
        plan = cache.plan
        self.arena = TokenArena(plan.arena_tokens, plan.block, plan.top_block)
        # under a full capacity per row no sample ever waits for room (and admission never checks)
        self.arena_is_tight = plan.arena_tokens < plan.rows * plan.top_block
        self.launched = np.zeros(len(workload), dtype=np.int64)  # steps launched for each sample since it started
        self.block_size = np.zeros(len(workload), dtype=np.int64)
        self.cuda = engine.device.type == "cuda"
        ring = engine.options.in_flight + 2
        self.ring = [torch.zeros(runner.rows, dtype=torch.int64, pin_memory=self.cuda) for _ in range(ring)]
        self.turn = 0
        self.pending: deque[_Launched] = deque()
        self.finished: list[Completion] = []
        self.yielded = 0
        self.to_reset: set[int] = set()
        self.book = TokenBook(self.rows, workload, rule)

    def run(self) -> Iterator[Completion]:
        """The loop, timed while it runs (not while the caller handles what it yielded)."""
        stats = self.engine.stats
        inner = self._run(stats)
        try:
            while True:
                started = time.perf_counter()
                completion = next(inner, None)
                stats.loop_s += time.perf_counter() - started
                if completion is None:
                    return
                yield completion
        finally:
            inner.close()

    def _run(self, stats: EngineStats) -> Generator[Completion, None, None]:
        while True:
            self._admit()
            if self.rows.busy == 0:
                if not self.pending:
                    break
                self._read(self.pending.popleft())
            else:
                self._launch()
                stats.steps += 1
                while len(self.pending) > self.engine.options.in_flight or (
                        self.pending and self._done(self.pending[0])):
                    self._read(self.pending.popleft())
            if self.finished:
                finished, self.finished = self.finished, []
                for completion in finished:
                    yield completion
                    self.yielded += 1
                    self.engine.fault.after_completions(self.yielded)
        while self.pending:
            self._read(self.pending.popleft())
        yield from self.finished

    def _done(self, launched: _Launched) -> bool:
        return launched.event is None or launched.event.query()

    # -------------------------------------------------------------------------------------- admission
    def _admit(self) -> None:
        rows, p_slots, p_lens, g_slots, g_sizes, samples = [], [], [], [], [], []
        to_prefill: list[PromptJob] = []
        block = self.cache.plan.block
        reserve = self._growth_ahead() if self.arena_is_tight and self.waiting else 0
        while self.waiting and self.rows.has_free():
            if self.arena_is_tight and self.arena.free_tokens - block < reserve:
                break
            job: SampleJob = self.waiting[0]
            prompt = job.prompt
            start = self.arena.take()
            if start is None:
                break
            if prompt.slot < 0:
                if not len(self.prompt_slots):
                    self.arena.give(start)
                    break
                prompt.slot = self.prompt_slots.take()
                to_prefill.append(prompt)
            self.waiting.popleft()
            job.block_start = start
            self.launched[job.index], self.block_size[job.index] = 0, block
            row = self.rows.take(job)
            self.book.start(row)
            self.to_reset.discard(row)
            rows.append(row)
            p_slots.append(prompt.slot)
            p_lens.append(len(prompt.ids))
            g_slots.append(start)
            g_sizes.append(block)
            samples.append(job.index)
        if to_prefill:
            self._take_ahead(to_prefill)
            self.engine.prefill(to_prefill, self.cache, self.runner.seeds, self.runner.first_tokens, self.params)
        if self.to_reset:
            self.runner.reset_rows(sorted(self.to_reset))
            self.to_reset.clear()
        self.runner.start_rows(rows, p_slots, p_lens, g_slots, g_sizes, samples)

    def _take_ahead(self, to_prefill: list[PromptJob]) -> None:
        """Add to a prefill the next waiting prompts that free prompt slots and the pack's room allow, so that
        they share its forward. Without this, a prompt's prefill comes when its first sample is admitted: with
        many samples a prompt (GPT-J's realistic workload: 16 prompts x 200) that is one forward a prompt, each
        holding up the decode steps."""
        engine = self.engine
        if not engine.packs:
            return
        packs = list(engine._packs(to_prefill))
        tokens = sum(len(prompt.ids) for prompt in packs[-1])  # what the last pack holds: the rest is room
        while self.not_prefilled and len(self.prompt_slots):
            prompt = self.not_prefilled[0]
            if prompt.slot >= 0 or prompt.unfinished == 0:  # prefilled already (or done)
                self.not_prefilled.popleft()
                continue
            if tokens + len(prompt.ids) > engine.pack_tokens or not engine.packable(prompt):
                return
            self.not_prefilled.popleft()
            prompt.slot = self.prompt_slots.take()
            to_prefill.append(prompt)
            tokens += len(prompt.ids)

    # ----------------------------------------------------------------------------------------- launch
    def _launch(self) -> None:
        runner = self.runner
        batch = runner.bucket_for(self.rows.highest_busy() + 1)
        if not self.waiting and runner.bucket_for(self.rows.busy) < batch:
            keep = self.rows.compact_order()
            self.book.moved(keep)
            runner.compact(keep)
            runner.reset_rows(range(len(keep), batch))
            batch = runner.bucket_for(len(keep))
        self._make_room(batch)
        host = self.ring[self.turn]
        self.turn = (self.turn + 1) % len(self.ring)
        host[:batch].copy_(runner.state.tok[:batch], non_blocking=self.cuda)
        self.engine.fault.at_step(self.engine.stats.steps)
        runner.step(batch)
        event = None
        if self.cuda:
            event = torch.cuda.Event()
            event.record()
        samples = self.rows.index[:batch].copy()
        self.launched[samples[samples >= 0]] += 1
        self.pending.append(_Launched(batch, host, samples, event))
        stats = self.engine.stats
        stats.row_steps += batch

    def _make_room(self, batch: int) -> None:
        """Before a step: every running sample whose block is full moves to a block twice as large (the step
        writes its next key). Where none is left, the youngest running sample is evicted until one is."""
        busy = self.rows.running()  # all in the step's first ``batch`` rows
        full = busy[(self.launched[busy] >= self.block_size[busy]) & self._writing(busy)]
        if not full.size:
            return
        grown: list[SampleJob] = []
        for sample in full.tolist():
            job = self.book.jobs[sample]
            room = self._room_to_grow(job) if job.row >= 0 else None  # (evicted for an earlier one's room)
            if room is None:
                continue
            start, moved = room
            if moved:
                self.cache.move(job.block_start, start, int(self.launched[sample]))
                self.engine.stats.moves += 1
            job.block_start = start
            self.block_size[sample] *= 2
            self.engine.stats.grown += 1
            grown.append(job)
        grown = [job for job in grown if job.row >= 0]  # not evicted for a later one's room
        self.runner.move_blocks([job.row for job in grown], [job.block_start for job in grown],
                                [int(self.block_size[job.index]) for job in grown])

    def _writing(self, samples: np.ndarray) -> np.ndarray:
        """Which of ``samples`` still write keys: a sample writes key i at its step i + 1 and stops at its limit;
        past it (one step before the host reads its last token) its row stays at its last key
        (DecodeRunner._step)."""
        return self.launched[samples] < self.book.limit[samples] - 1

    def _room_to_grow(self, job: SampleJob) -> tuple[int, bool] | None:
        """:meth:`TokenArena.grow` for ``job``'s block, evicting the youngest running sample until there is
        room; None when ``job`` itself was the one evicted."""
        while (room := self.arena.grow(job.block_start)) is None:
            self._evict(self._youngest())
            if job.row < 0:
                return None
        return room

    def _growth_ahead(self) -> int:
        """Tokens the running samples take from the arena within :data:`GROWTH_HORIZON_STEPS` steps (each that
        fills its block by then takes one as large again): admission leaves them free, so that a sample
        admitted now does not make an older one evict the youngest a few steps later. 32 steps, in a replay of
        the realistic workload's schedule (benchmarks/bench_generate.py): at 512 rows no eviction and no
        admission held back; at 640 rows 546 evictions, against 953 with a quarter block per row kept free."""
        busy = self.rows.running()
        size = self.block_size[busy]
        soon = (size - self.launched[busy] < GROWTH_HORIZON_STEPS) & self._writing(busy)
        return int(size[soon].sum())

    def _youngest(self) -> SampleJob:
        """The running sample with the fewest steps (the least work lost when it starts again)."""
        busy = self.rows.running()
        return self.book.jobs[int(busy[int(np.argmin(self.launched[busy]))])]

    def _evict(self, job: SampleJob) -> None:
        """Take ``job`` off its row and give its block back; it waits first in line to start again from its
        first token (sampled at its prompt's prefill, still stored), with its own seed: the same sample."""
        stats = self.engine.stats
        stats.tokens -= int(self.book.length[job.row])  # read back already: counted, now dropped
        stats.evictions += 1
        stats.evicted_tokens += int(self.launched[job.index])
        row = self.rows.release(job)
        self.runner.reset_rows([row])
        self.arena.give(job.block_start)
        for launched in self.pending:  # tokens of steps already launched are not its new run's
            launched.samples[launched.samples == job.index] = -1
        job.tokens, job.checked, job.finish, job.num_tokens, job.block_start, job.row = [], 0, None, 0, -1, -1
        self.waiting.appendleft(job)  # admission starts its step count and block afresh

    # ------------------------------------------------------------------------------------------- read
    def _read(self, launched: _Launched) -> None:
        if launched.event is not None:
            waiting = time.perf_counter()
            launched.event.synchronize()
            self.engine.stats.wait_s += time.perf_counter() - waiting
        appended, context, flagged = self.book.append(launched.samples, launched.tokens[:launched.batch].numpy())
        stats = self.engine.stats
        stats.tokens += appended
        stats.context_tokens += context
        for job in flagged:
            if self.rule.after_token(job):
                self._finish(job)
            else:
                self.book.scanned(job)
        if self.engine.token_listener is not None and appended:
            self.engine.token_listener(appended)

    def _finish(self, job: SampleJob) -> None:
        self.book.finish(job)
        row = self.rows.release(job)
        self.to_reset.add(row)
        self.arena.give(job.block_start)
        prompt = job.prompt
        prompt.unfinished -= 1
        if prompt.unfinished == 0 and prompt.slot >= 0:
            self.prompt_slots.give(prompt.slot)
            prompt.slot = -1
        self.finished.append(self.rule.completion(job))


@dataclass
class InjectedFault:
    """A test hook: ``EVALSUITE_ENGINE_FAULT`` makes the engine fail as a real failure would, so the fallback
    (evalsuite/generation/hf/engine_bridge.py) is tested end to end on the CPU path. ``setup``: at set-up;
    ``step:N``: a RuntimeError at decode step N; ``after:K``: a RuntimeError once K completions are out;
    ``oom:N``: out of memory at step N, once per engine (the retry with fewer rows then runs clean)."""

    kind: str = ""
    step: int = -1
    fired: bool = False

    @classmethod
    def from_environment(cls) -> InjectedFault:
        import os

        value = os.environ.get("EVALSUITE_ENGINE_FAULT", "")
        kind, _, step = value.partition(":")
        if kind not in ("", "setup", "step", "oom", "after") or (kind != "setup" and kind and not step.isdigit()):
            raise EvalsuiteError(f"EVALSUITE_ENGINE_FAULT={value!r}: use setup, step:N, after:K or oom:N")
        return cls(kind, int(step) if step else -1)

    def at_setup(self) -> None:
        if self.kind == "setup":
            raise RuntimeError("injected engine fault at set-up (EVALSUITE_ENGINE_FAULT=setup)")

    def at_step(self, step: int) -> None:
        if self.kind == "after" or step != self.step or self.fired:
            return
        if self.kind == "oom":
            self.fired = True
            raise torch.OutOfMemoryError(f"injected out of memory at decode step {step} (EVALSUITE_ENGINE_FAULT)")
        if self.kind == "step":
            raise RuntimeError(f"injected engine fault at decode step {step} (EVALSUITE_ENGINE_FAULT)")

    def after_completions(self, count: int) -> None:
        if self.kind == "after" and count >= self.step:
            raise RuntimeError(f"injected engine fault after {count} completions (EVALSUITE_ENGINE_FAULT)")


def _quantized(model) -> bool:
    """True where the weights stay quantized in memory. GGUF checkpoints are dequantized on load into plain
    float tensors (transformers still marks them quantized), so they run like any other model."""
    config = getattr(model.config, "quantization_config", None)
    if not (getattr(model, "is_quantized", False) or config):
        return False
    method = config.get("quant_method") if isinstance(config, dict) else getattr(config, "quant_method", None)
    return str(getattr(method, "value", method)).lower() != "gguf"


def _eos_ids(model, tokenizer) -> list[int]:
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if ids is None:
        ids = getattr(model.config, "eos_token_id", None)
    if ids is None and tokenizer is not None:
        ids = tokenizer.eos_token_id
    if ids is None:
        return []
    return [ids] if isinstance(ids, int) else list(ids)
