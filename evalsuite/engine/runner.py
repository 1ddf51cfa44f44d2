"""Decode steps on the device: per-row state kept on the GPU, one CUDA graph per batch bucket.

Why graphs: one decode step of a 6B model is ~300 kernel launches (GPT-J, 11 a layer); launched from
Python they cost more than the step's arithmetic at small batch. Captured once per bucket (1, 2, 4, ... rows),
a step is one replay. The graph reads and updates the row state in place (token to feed, generated length,
cache slots, seed), so the host never has to send tokens back: it only copies each step's fed tokens to pinned
memory, asynchronously, and edits rows when samples start or finish.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, fields
from functools import partial

import torch

from evalsuite.engine.compile_ahead import CompileAhead, code_version, compile_kernels_ahead
from evalsuite.engine.host_values import to_device
from evalsuite.engine.kernels import (
    PositionTables,
    attention_block_n,
    balanced_work,
    decode_attention_reference,
    decode_attention_triton,
    fills_the_gpu,
    longest_rows_first,
    prefix_groups,
    rotary_and_store_reference,
    rotary_and_store_triton,
)
from evalsuite.engine.kv_cache import KVCache
from evalsuite.engine.models import GenericAdapter
from evalsuite.engine.sampling import choose_tokens
from evalsuite.records import SamplingParams

BUCKETS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024)
_COLUMNS = 6  # row, prompt slot, prompt length, block start, block size, sample index: what a (re)started row needs


def buckets_up_to(rows: int) -> list[int]:
    return sorted({b for b in BUCKETS if b < rows} | {rows})


def one_bucket_per_specialization(buckets: list[int]) -> list[int]:
    """The buckets whose steps reach every kernel specialization the others do, as far as a kernel's integer
    arguments are the batch times a constant: Triton specializes an integer on being 1 and on being a multiple
    of 16, and 16 divides ``batch * c`` exactly when it does for any other batch with as many factors of two
    (counted up to four). So: batch 1, and the first bucket of each count of twos (0-4)."""
    chosen: dict[object, int] = {}
    for batch in sorted(buckets):
        twos = min((batch & -batch).bit_length() - 1, 4)
        chosen.setdefault("one" if batch == 1 else twos, batch)
    return sorted(chosen.values())


@dataclass
class RowState:
    """Per-row device state; index = row ("lane") of the decode batch."""

    tok: torch.Tensor  # int64: token fed at the next step
    gen_len: torch.Tensor  # int32: generated tokens already cached (= index of ``tok`` among them)
    p_slot: torch.Tensor  # int32
    p_len: torch.Tensor  # int32
    g_slot: torch.Tensor  # int32: where the row's block of generated keys starts in the arena (kv_cache.py)
    g_size: torch.Tensor  # int32: its tokens; the row never writes past them
    seed: torch.Tensor  # int64

    def columns(self) -> list[torch.Tensor]:
        """Every per-row tensor (what moves with a row)."""
        return [getattr(self, f.name) for f in fields(self)]

    @classmethod
    def allocate(cls, rows: int, scratch_slot: int, device) -> RowState:
        i32 = dict(dtype=torch.int32, device=device)
        return cls(tok=torch.zeros(rows, dtype=torch.int64, device=device), gen_len=torch.zeros(rows, **i32),
                   p_slot=torch.zeros(rows, **i32), p_len=torch.zeros(rows, **i32),
                   g_slot=torch.full((rows,), scratch_slot, **i32), g_size=torch.ones(rows, **i32),
                   seed=torch.zeros(rows, dtype=torch.int64, device=device))


@dataclass
class _Staging:
    """Pinned host buffers for row edits, reused only once their copy to the device has finished."""

    host: list[torch.Tensor]
    device: torch.Tensor
    events: list = field(default_factory=list)
    turn: int = 0


class DecodeRunner:
    def __init__(self, adapter: GenericAdapter, cache: KVCache, tables: list[PositionTables], params: SamplingParams,
                 rows: int, *, seeds: torch.Tensor, first_tokens: torch.Tensor, vocab_limit: int | None,
                 use_graphs: bool, use_triton: bool, shared_prefix: int = 0, fixed_width: bool = False,
                 balance_attention: bool = True):
        """``fixed_width``: every step computes all ``rows`` (no smaller bucket) with attention in one part:
        a row's arithmetic is then the same whatever else is in the batch (EngineOptions.batch_invariant).
        ``balance_attention``: at batches that fill the GPU, long rows' keys read in several parts
        (kernels.balanced_work; EngineOptions.balance_attention)."""
        self.adapter = adapter
        self.spec = adapter.spec
        self.cache = cache
        self.tables = tables  # one per layer
        self.windows = adapter.windows  # sliding window per layer, 0: none
        self.params = params
        self.rows = rows
        self.device = cache.gen.device
        self.seeds = seeds  # [samples] int64, one per sample of the workload
        self.first_tokens = first_tokens  # [samples] int64, filled when the sample's prompt is prefilled
        self.vocab_limit = vocab_limit
        self.state = RowState.allocate(rows, cache.scratch_slot, self.device)
        self.use_triton = use_triton
        self.shared_prefix = shared_prefix  # most rows of one prompt (0: attention over prompts per row)
        self.fixed_width = fixed_width
        self.balance_attention = balance_attention
        self.buckets = [rows] if fixed_width else buckets_up_to(rows)
        self._graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.capture_s_by_bucket: dict[int, float] = {}
        self.warm_up_s = 0.0  # the eager steps before capture (kernel compilation or loading, library handles)
        self.compile_ahead: CompileAhead | None = None  # of warm_up_s: the step's kernels compiled side by side
        pin = self.device.type == "cuda"
        # a buffer is reused once the edit it carried reached the device; up to three edits a step (finished rows
        # reset, samples started, blocks moved), so eight keep the host from waiting on a step still running
        self._staging = _Staging(host=[torch.zeros(_COLUMNS * rows, dtype=torch.int64, pin_memory=pin)
                                       for _ in range(8)],
                                 device=torch.zeros(_COLUMNS * rows, dtype=torch.int64, device=self.device))
        self._staging.events = [None] * len(self._staging.host)
        if use_graphs:
            self._capture_all()

    # ------------------------------------------------------------------------------------------- step
    def _attend(self, meta):
        p_slot, p_len, g_slot, g_write, g_len, pos = meta
        spec, tables = self.spec, self.tables
        rotary_and_store = rotary_and_store_triton if self.use_triton else rotary_and_store_reference
        if self.use_triton:
            groups = prefix_groups(p_slot, p_len, self.cache.prompt.shape[2]) if self.shared_prefix else None
            order = longest_rows_first(p_len, g_len, bool(self.shared_prefix))
            # long rows in parts only over shared prompts (kernels.balanced_work): with each row's own prompt in
            # its keys (GQA models) the parts cost more than they balance (SmolLM2 sampled on the H200: 3.20
            # against 2.63 ms a step); a batch-invariant run keeps every row in one part: its arithmetic its own
            work = None
            if (self.balance_attention and self.shared_prefix and not self.fixed_width
                    and fills_the_gpu(p_len.shape[0], spec.num_heads, self.device)):
                work = balanced_work(p_len, g_len, bool(self.shared_prefix), order,
                                     attention_block_n(spec.head_dim, balanced=True))
            attention = partial(decode_attention_triton, shared_prefix=self.shared_prefix, groups=groups,
                                row_order=order, split=1 if self.fixed_width else None, work=work)
        else:
            attention = decode_attention_reference

        def attend(index, q, k, v):
            kp, vp, kg, vg = self.cache.layer(index)
            layer_tables = tables[index]
            q = rotary_and_store(q, k, v, kg, vg, pos, g_slot, g_write, spec, layer_tables)
            out = attention(q, kp, vp, kg, vg, p_slot, p_len, g_slot, g_len, spec, layer_tables,
                            self.windows[index])
            return out.reshape(out.shape[0], -1)

        return attend

    def _step(self, batch: int) -> None:
        st = self.state
        gen_len, g_size = st.gen_len[:batch], st.g_size[:batch]
        g_len = gen_len + 1
        pos = st.p_len[:batch] + gen_len
        # a row writes its key at index gen_len of its block; the host gives a running row a larger block before
        # the step where its block is full (engine._Loop._make_room); a row past its sample's end stays at its
        # block's last key
        write = torch.minimum(gen_len, g_size - 1)
        meta = (st.p_slot[:batch], st.p_len[:batch], st.g_slot[:batch], write, g_len, pos)
        logits = self.adapter.decode(st.tok[:batch], pos, self._attend(meta))
        if self.vocab_limit is not None:
            logits[:, self.vocab_limit:] = float("-inf")
        next_tokens = choose_tokens(logits, st.seed[:batch], g_len.long(), self.params)
        st.tok[:batch].copy_(next_tokens)
        # a full block's row counts all its keys (it moves to a larger block before its next write); rows that
        # already finished may run a step or two more before the host frees them and stay at that count; idle rows
        # (empty prompt) stay at one key of the scratch slot instead of reading a growing one
        advanced = torch.minimum(g_len, g_size)
        st.gen_len[:batch].copy_(torch.where(st.p_len[:batch] > 0, advanced, 0))

    def _capture_all(self) -> None:
        torch.cuda.synchronize(self.device)
        started = time.perf_counter()
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm-up outside capture: kernel compilation, library handles
            if self.use_triton:
                self.compile_ahead = self._compile_kernels_ahead()
            for batch in (max(self.buckets), min(self.buckets)):
                self._step(batch)
        torch.cuda.current_stream(self.device).wait_stream(side)
        torch.cuda.synchronize(self.device)
        self.warm_up_s = round(time.perf_counter() - started, 4)
        # a capture stream of the model's own GPU: torch.cuda.graph's default one is made once per process, on the
        # GPU current then, and capturing on it switches to that GPU (a second model of one command, placed on
        # another GPU, captured empty graphs and fell back to plain generate)
        capture = torch.cuda.Stream(self.device)
        for batch in sorted(self.buckets, reverse=True):  # largest first, so smaller ones reuse its memory
            started = time.perf_counter()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool, stream=capture):
                self._step(batch)
            self._graphs[batch] = graph
            self.capture_s_by_bucket[batch] = round(time.perf_counter() - started, 4)
        self.reset_rows(range(self.rows))
        torch.cuda.synchronize(self.device)

    def _compile_kernels_ahead(self) -> CompileAhead | None:
        """A step of each kind of bucket once, dry (compile_ahead.py): its kernels not yet compiled are compiled side by
        side instead of one after another at their first launches. A dry step writes the rows' next tokens and
        lengths from outputs its skipped kernels never wrote (the sampler's: any int64 at all), so the row state is
        put back after each one, before the next step looks its tokens up. The only cache entry a dry step can
        write is the scratch slot's first key (every row starts there, with no prompt), which the eager steps
        after it write again from real values."""
        saved = [column.clone() for column in self.state.columns()]

        def dry_steps() -> None:
            for batch in one_bucket_per_specialization(self.buckets):
                self._step(batch)
                for column, before in zip(self.state.columns(), saved):
                    column.copy_(before)

        return compile_kernels_ahead(dry_steps, self._kernel_signature())

    def _kernel_signature(self) -> str:
        """What decides the kernel specializations this runner's steps launch (compile_ahead.py's listing key):
        the model's shape and dtypes, the rows, how tokens are chosen, the attention's options, and the code."""
        weight = next(self.adapter.model.parameters())
        params = self.params
        facts = [self.adapter.config.to_json_string(), str(weight.dtype), str(self.cache.gen.dtype), self.rows,
                 self.buckets, params.greedy, params.top_k, params.top_p < 1.0, self.vocab_limit, self.windows,
                 repr(self.spec), self.shared_prefix, self.fixed_width, self.adapter.fuse, code_version(),
                 torch.__version__, torch.cuda.get_device_capability(self.device)]
        return hashlib.sha256(repr(facts).encode()).hexdigest()[:32]

    def step(self, batch: int) -> None:
        graph = self._graphs.get(batch)
        if graph is not None:
            graph.replay()
        else:
            self._step(batch)

    def bucket_for(self, rows: int) -> int:
        return next(b for b in self.buckets if b >= rows)

    # ------------------------------------------------------------------------------------- row edits
    def start_rows(self, rows: list[int], p_slots: list[int], p_lens: list[int], g_slots: list[int],
                   g_sizes: list[int], samples: list[int]) -> None:
        """Make ``rows`` begin the given samples: first token (sampled at prefill), seed, cache slots."""
        if not rows:
            return
        dev = self._stage([rows, p_slots, p_lens, g_slots, g_sizes, samples])
        index = dev[0]
        st = self.state
        st.p_slot[index] = dev[1].to(torch.int32)
        st.p_len[index] = dev[2].to(torch.int32)
        st.g_slot[index] = dev[3].to(torch.int32)
        st.g_size[index] = dev[4].to(torch.int32)
        st.gen_len.index_fill_(0, index, 0)  # not ``[index] = 0``: a host scalar is a copy the host waits for
        st.seed[index] = self.seeds[dev[5]]
        st.tok[index] = self.first_tokens[dev[5]]

    def move_blocks(self, rows: list[int], g_slots: list[int], g_sizes: list[int]) -> None:
        """Running ``rows`` continue in larger blocks (their keys already copied there)."""
        if not rows:
            return
        dev = self._stage([rows, g_slots, g_sizes])
        st = self.state
        st.g_slot[dev[0]] = dev[1].to(torch.int32)
        st.g_size[dev[0]] = dev[2].to(torch.int32)

    def _stage(self, columns: list[list[int]]) -> torch.Tensor:
        """The columns on the device ([len(columns), n] int64), through a pinned buffer not in use."""
        n = len(columns[0])
        staging = self._staging
        slot = staging.turn
        staging.turn = (slot + 1) % len(staging.host)
        if staging.events[slot] is not None:
            staging.events[slot].synchronize()
        width = len(columns)
        host = staging.host[slot][:width * n]
        host.view(width, n).copy_(torch.as_tensor(columns, dtype=torch.int64))
        dev = staging.device[:width * n]
        dev.copy_(host, non_blocking=True)
        if self.device.type == "cuda":
            event = torch.cuda.Event()
            event.record()
            staging.events[slot] = event
        return dev.view(width, n)

    def reset_rows(self, rows) -> None:
        """Idle rows compute on the scratch slot and a zero-length prompt; their output is ignored."""
        rows = list(rows)
        self.start_rows(rows, [0] * len(rows), [0] * len(rows), [self.cache.scratch_slot] * len(rows),
                        [1] * len(rows), [0] * len(rows))

    def compact(self, keep: list[int]) -> None:
        """Move rows ``keep`` (old row indices, in order) to rows 0..len(keep)-1."""
        n = len(keep)
        index = to_device(keep, self.device)
        st = self.state
        for column in st.columns():
            column[:n].copy_(column.index_select(0, index))
