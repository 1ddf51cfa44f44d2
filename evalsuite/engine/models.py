"""One decoder step for a batch of rows (one new token each), written once for every covered family.

The step calls the loaded transformers model's own modules (embeddings, norms, projections, MLPs, LM head)
and so reads its weight tensors in place: no copy, and the same arithmetic as transformers for everything
but attention and the KV cache, which the engine owns. What differs between families is data, not code:
a :class:`Layout` per family says where the modules are and how a block is wired, and everything that
varies within a family (head counts, grouped- or multi-query attention, head size, attention scale,
partial rotary, sliding windows per layer, soft-capping) is read from the model's config and modules.

Block wirings (``Layout.wiring``), as transformers writes them:
- ``sequential``: x += attn(norm1(x)); x += mlp(norm2(x))                  (Llama, Mistral, Qwen2, Phi-3, ...)
- ``parallel_shared``: h = norm1(x); x = attn(h) + mlp(h) + x                 (GPT-J)
- ``parallel``: x = mlp(norm2(x)) + attn(norm1(x)) + x                       (GPT-NeoX with use_parallel_residual)
- ``sandwich``: x += norm2(attn(norm1(x))); x += norm4(mlp(norm3(x)))        (Gemma 2 and 3)
- ``bloom``: BLOOM's block, whose MLP adds the residual itself (optionally the post-LayerNorm one).

Fused query/key/value projections (``Layout.qkv_layout``): ``per_head`` is [heads, 3, head_dim] (BLOOM,
GPT-NeoX, GPT-BigCode without MQA); ``concat`` is [q | k | v] (Phi-3, GPT-BigCode with MQA).

Projections that read the same input (``Layout.fused``; GPT-J: q, k, v and the MLP's fc_in, all of ln_1's
output) run as one matrix product: at batch 1 one 235 MB product reads its weights at 2.6 TB/s where four
separate ones averaged 2.4, with 6 launches fewer per layer. Their weights are concatenated once into one
tensor per layer and each module's weight (and bias) becomes a view into it, so memory is not doubled and
the model's own forward (the prefill) runs unchanged; if the model's parameters are replaced afterwards
(``model.to(...)``), the next step fuses them again. Then the MLP runs from its own modules
(``Layout.mlp_steps``), its activation in one kernel where :mod:`evalsuite.engine.fused_ops` has one.
At one row (batch 1) of a bfloat16 or float16 model every plain ``nn.Linear`` product runs as
:mod:`evalsuite.engine.matvec`'s kernel, which reads weights faster than cuBLAS does at one row (GPT-J: it also
applies gelu_new to the fused product's fc_in part).

Where a model uses a feature the step does not implement, :meth:`GenericAdapter.unsupported_reason` says so
in one line and evalsuite runs plain transformers ``generate`` instead (the reason goes into the run record).
The prompts themselves are run by the model's own forward (:meth:`GenericAdapter.prefill`), several per forward.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from evalsuite.engine import packed_attention
from evalsuite.engine.fused_ops import add3_then_layer_norm, add_then_norm, fused_activation, silu_mul
from evalsuite.engine.host_values import to_device
from evalsuite.engine.kernels import ROTARY_HALF, ROTARY_INTERLEAVED, ROTARY_NONE, AttentionSpec, PositionTables
from evalsuite.engine.matvec import applies, linear, module_linear, one_row_linear
from evalsuite.engine.packed_attention import PackedBatches
from evalsuite.registry import Registry

# attend(layer_index, q [B, Hq, D], k [B, Hkv, D], v [B, Hkv, D]) -> [B, Hq * D]
Attend = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
ByConfig = Callable[[Any], str]  # a layout choice that depends on the config (e.g. GPT-NeoX's residual)

_STATIC_ROPE_TYPES = {"default", "linear", "llama3", "yarn"}  # tables that do not change with sequence length


@dataclass
class Prefill:
    """One forward over one or more prompts, one after another: their last positions' logits ([prompts, vocab])
    and per layer (keys, values) as [kv_heads, tokens, head_dim], exactly as transformers caches them. Where it
    packed several prompts, token i is at ``positions[i]`` of prompt ``owners[i]`` (both on the device); None
    for one prompt alone."""
    logits: torch.Tensor
    layers: list[tuple[torch.Tensor, torch.Tensor]]
    owners: torch.Tensor | None = None
    positions: torch.Tensor | None = None


@dataclass(frozen=True)
class Layout:
    """Where one family keeps its modules (attribute paths) and how its blocks are wired."""

    architectures: tuple[str, ...]
    backbone: str  # attribute of the *ForCausalLM holding embeddings, blocks and final norm
    embed: str
    layers: str
    final_norm: str
    positions: str = "rotary_module"  # rotary_module | gptj_buffer | alibi | learned (then ``pos_embed``)
    pos_embed: str | None = None
    embed_norm: str | None = None  # BLOOM: LayerNorm right after the embedding
    embed_scale: bool = False  # Gemma: embeddings times sqrt(hidden) in the model dtype
    attn: str = "self_attn"
    qkv: tuple[str, ...] = ("q_proj", "k_proj", "v_proj")  # one name: a fused projection
    qkv_layout: str | ByConfig = "split"  # split | per_head | concat
    out_proj: str = "o_proj"
    qk_norm: tuple[str, str] | None = None  # Gemma 3: RMSNorm over each head of q and k, before the rotary
    mlp: str = "mlp"
    wiring: str | ByConfig = "sequential"
    norms: tuple[str, ...] = ("input_layernorm", "post_attention_layernorm")  # in the order the wiring uses
    refuse: tuple[tuple[str, Callable[[Any], bool], str], ...] = ()  # (config attribute, refused when, reason)
    # Linear modules (paths from the block, q k v first) that read one input: run as one matrix product
    fused: tuple[str, ...] = ()
    # A gated MLP (down(act(gate(x)) * up(x))): its gate and up projections (paths from the block) as one matrix
    # product, then ``gated_mlp_tail`` (the MLP's activation and output projection) as the model's own modules
    fused_mlp: tuple[str, ...] = ()
    gated_mlp_tail: tuple[str, str] = ("act_fn", "down_proj")
    mlp_steps: tuple[str, str, str] | None = None  # (input projection, activation, output projection) in the MLP


# q, k and v read one input: one matrix product instead of three (fewer launches: small models are launch-bound;
# SmolLM2-135M's float32 step at 160 rows spent 3.0 of 5.2 ms in 211 small products, H200)
_QKV_FUSED = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")
_LLAMA_LIKE: dict[str, Any] = dict(backbone="model", embed="embed_tokens", layers="layers", final_norm="norm",
                                   fused=_QKV_FUSED, fused_mlp=("mlp.gate_proj", "mlp.up_proj"))
_SANDWICH_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm")

# The families the engine covers, by name; installed packages add layouts through the ``evalsuite.layouts``
# entry point group (a Layout naming its *ForCausalLM classes; see evalsuite/registry.py).
LAYOUTS: Registry[Layout] = Registry("layouts", "engine layout")
_BUILT_IN_LAYOUTS: dict[str, Layout] = {
    # Llama also covers CodeLlama, DeepSeek-Coder and SmolLM2; Mistral and Qwen2 add sliding windows (read
    # from the config per layer); Qwen2's q/k/v biases and StarCoder2's biases live in the Linear modules.
    "llama": Layout(("LlamaForCausalLM",), **_LLAMA_LIKE,
                    refuse=(("pretraining_tp", lambda v: (v or 1) > 1, "pretraining_tp > 1"),)),
    "mistral": Layout(("MistralForCausalLM",), **_LLAMA_LIKE),
    "qwen2": Layout(("Qwen2ForCausalLM",), **_LLAMA_LIKE),
    "starcoder2": Layout(("Starcoder2ForCausalLM",), **{**_LLAMA_LIKE, "fused_mlp": ()}),  # c_fc, act, c_proj
    "phi3": Layout(("Phi3ForCausalLM",), **{**_LLAMA_LIKE, "fused": (), "fused_mlp": ()},  # fused in the checkpoint
                   qkv=("qkv_proj",), qkv_layout="concat"),
    "gemma2": Layout(("Gemma2ForCausalLM",), **_LLAMA_LIKE, embed_scale=True, wiring="sandwich",
                     norms=_SANDWICH_NORMS),
    "gemma3": Layout(("Gemma3ForCausalLM",), **_LLAMA_LIKE, embed_scale=True, wiring="sandwich",
                     norms=_SANDWICH_NORMS, qk_norm=("q_norm", "k_norm"),
                     refuse=(("use_bidirectional_attention", lambda v: bool(v), "bidirectional attention"),)),
    "gpt_neox": Layout(("GPTNeoXForCausalLM",), backbone="gpt_neox", embed="embed_in", layers="layers",
                       final_norm="final_layer_norm", attn="attention",
                       qkv=("query_key_value",), qkv_layout="per_head", out_proj="dense",
                       wiring=lambda c: "parallel" if c.use_parallel_residual else "sequential"),
    "gptj": Layout(("GPTJForCausalLM",), backbone="transformer", embed="wte", layers="h", final_norm="ln_f",
                   positions="gptj_buffer", attn="attn", out_proj="out_proj", wiring="parallel_shared",
                   norms=("ln_1",), fused=("attn.q_proj", "attn.k_proj", "attn.v_proj", "mlp.fc_in"),
                   mlp_steps=("fc_in", "act", "fc_out")),
    "gpt_bigcode": Layout(("GPTBigCodeForCausalLM",), backbone="transformer", embed="wte", layers="h",
                          final_norm="ln_f", positions="learned", pos_embed="wpe", attn="attn", qkv=("c_attn",),
                          qkv_layout=lambda c: "concat" if c.multi_query else "per_head", out_proj="c_proj",
                          norms=("ln_1", "ln_2"),
                          refuse=(("add_cross_attention", lambda v: bool(v), "cross-attention"),)),
    "bloom": Layout(("BloomForCausalLM",), backbone="transformer", embed="word_embeddings", layers="h",
                    final_norm="ln_f", positions="alibi", embed_norm="word_embeddings_layernorm",
                    attn="self_attention", qkv=("query_key_value",), qkv_layout="per_head", out_proj="dense",
                    wiring="bloom",
                    refuse=(("slow_but_exact", lambda v: bool(v), "pretraining_tp > 1 with slow_but_exact"),)),
}


for _family, _layout in _BUILT_IN_LAYOUTS.items():
    LAYOUTS.register(_family, _layout)


def layout_for(model) -> tuple[str, Layout] | None:
    return layout_for_architecture(type(model).__name__)


def layout_for_architecture(name: str) -> tuple[str, Layout] | None:
    """The engine's layout for a model class (``Gemma3ForCausalLM``), matched on the class, never on
    ``config.model_type`` (Gemma 3's text config says ``gemma3_text``)."""
    for family, layout in LAYOUTS:
        if name in layout.architectures:
            return family, layout
    return None


def _get(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _rope_types(config) -> set[str]:
    """Every rope type the config names (Gemma 3 keeps one set of parameters per layer type)."""
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    entries = [rope]
    if isinstance(rope, dict) and rope and all(isinstance(v, dict) or v is None for v in rope.values()):
        entries = [v for v in rope.values() if v]
    types: set[str] = set()
    for entry in entries:
        if isinstance(entry, dict):
            types.add(str(entry.get("rope_type", entry.get("type", "default"))))
    return types or {"default"}


FUSE_MARGIN_BYTES = 64 * 2**20  # allocator rounding and the kernels' scratch while a block is fused


@dataclass
class FusedLinear:
    """Linear modules of one block that read the same input, as one weight [sum of outputs, in] (and bias);
    each module's own weight and bias are views into these."""

    weight: torch.Tensor
    bias: torch.Tensor | None
    sizes: tuple[int, ...]
    modules: tuple[torch.nn.Linear, ...]

    @classmethod
    def of(cls, modules: tuple[torch.nn.Linear, ...]) -> FusedLinear:
        weight = torch.cat([m.weight.detach() for m in modules], dim=0)
        bias = None
        if any(m.bias is not None for m in modules):
            bias = torch.cat([m.bias.detach() if m.bias is not None else
                              torch.zeros(m.weight.shape[0], dtype=weight.dtype, device=weight.device)
                              for m in modules])
        offset = 0
        for m in modules:
            rows = m.weight.shape[0]
            m.weight.data = weight[offset:offset + rows]
            if m.bias is not None and bias is not None:
                m.bias.data = bias[offset:offset + rows]
            offset += rows
        return cls(weight, bias, tuple(m.weight.shape[0] for m in modules), modules)

    def current(self) -> bool:
        """Whether every module still reads its weight from the fused tensor (``model.to`` replaces them)."""
        offset = 0
        base, step = self.weight.data_ptr(), self.weight.stride(0) * self.weight.element_size()
        for m, rows in zip(self.modules, self.sizes):
            if m.weight.data_ptr() != base + offset * step or m.weight.dtype != self.weight.dtype:
                return False
            offset += rows
        return True

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return linear(x, self.weight, self.bias).split(self.sizes, dim=-1)

    def with_gelu_new(self, x: torch.Tensor) -> tuple[torch.Tensor, ...] | None:
        """The outputs with ``gelu_new`` already applied to the last module's, where the one-row kernel applies
        (it does both in one launch); None elsewhere."""
        if not applies(x, self.weight, self.bias):
            return None
        return one_row_linear(x, self.weight, self.bias, gelu_from=sum(self.sizes[:-1])).split(self.sizes, dim=-1)


class GenericAdapter:
    """The decode step of any family in :data:`LAYOUTS`, reading the model's modules in place.
    ``fuse``: run :attr:`Layout.fused` projections as one matrix product (their weights become views)."""

    def __init__(self, model, fuse: bool = True, cap_bytes: int | None = None):
        found = layout_for(model)
        if found is None:
            raise ValueError(f"architecture {type(model).__name__} is not covered by the engine")
        self.family, self.layout = found
        self.model = model
        self.config = cfg = model.config
        lay = self.layout
        self.backbone = _get(model, lay.backbone)
        self.blocks = _get(self.backbone, lay.layers)
        self.wiring = lay.wiring(cfg) if callable(lay.wiring) else lay.wiring
        self.qkv_layout = lay.qkv_layout(cfg) if callable(lay.qkv_layout) else lay.qkv_layout
        attn = _get(self.blocks[0], lay.attn)
        heads = cfg.num_attention_heads
        head_dim = (getattr(attn, "head_dim", None) or getattr(attn, "head_size", None)
                    or getattr(cfg, "head_dim", None) or cfg.hidden_size // heads)
        kv_heads = getattr(attn, "kv_heads", None) or getattr(cfg, "num_key_value_heads", None) or heads
        scale = getattr(attn, "scaling", None)
        if scale is None:
            scale = 1.0 / math.sqrt(head_dim)
        rotary_style = {"rotary_module": ROTARY_HALF, "gptj_buffer": ROTARY_INTERLEAVED}.get(lay.positions,
                                                                                              ROTARY_NONE)
        rotary_dim = 0
        if lay.positions == "gptj_buffer":
            rotary_dim = cfg.rotary_dim or head_dim
        elif rotary_style == ROTARY_HALF:
            rotary_dim = self._rotary_dim(head_dim)
        softcap = getattr(cfg, "attn_logit_softcapping", None) or 0.0
        self.spec = AttentionSpec(num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, scale=float(scale),
                                  rotary_style=rotary_style, rotary_dim=rotary_dim, alibi=lay.positions == "alibi",
                                  round_scores=lay.positions == "alibi", softcap=float(softcap))
        self.windows = self._windows()
        self.final_softcap = getattr(cfg, "final_logit_softcapping", None)
        self.lm_head = model.get_output_embeddings()  # lm_head, embed_out (GPT-NeoX before transformers 5.x)...
        embed = _get(self.backbone, lay.embed)
        # newer transformers scale inside the embedding module (it has ``embed_scale``); older ones in forward
        self.embed_multiplier = cfg.hidden_size ** 0.5 if lay.embed_scale and not hasattr(embed, "embed_scale") \
            else None
        self.fuse = fuse and bool(lay.fused or lay.fused_mlp)
        self.fuse_skipped: str | None = None  # why the projections run unfused, where fusing was asked for
        self._fused: list[FusedLinear] = []  # per block, Layout.fused
        self._fused_mlp: list[FusedLinear] = []  # per block, Layout.fused_mlp
        self._activation = None
        self._gelu_in_product = False
        # for _side_by_side; made here, as no stream may be created while a CUDA graph is being captured
        self._side_stream: torch.cuda.Stream | None = None
        if self.device.type == "cuda":
            self._side_stream = torch.cuda.Stream(device=self.device)
        self.cap_bytes = cap_bytes  # the model's --gpu-memory cap: fusing makes copies only within it
        if self.fuse:
            self._fuse_all()
        if self.fuse and lay.mlp_steps is not None:
            act = _get(_get(self.blocks[0], lay.mlp), lay.mlp_steps[1])
            self._activation = fused_activation(act)
            # the one-row product can apply the activation itself where it is gelu_new on the last fused output
            self._gelu_in_product = (type(act).__name__ == "NewGELUActivation"
                                     and lay.fused[-1] == f"{lay.mlp}.{lay.mlp_steps[0]}")

    def _fuse_all(self) -> None:
        """Fuse block by block, handing each block's replaced weights back to the device before the next, so
        set-up needs one block's fused weights beyond the model, not all of them: GPT-J-6B in fp16 under a
        16 GiB cap had no room for the whole transient copy (6 GiB). Where even one block's copy does not fit,
        the projections stay unfused (slower, same tokens) and ``fuse_skipped`` says why."""
        lay = self.layout
        paths = [group for group in (lay.fused, lay.fused_mlp) if group]
        blocks = [[tuple(_get(block, path) for path in group) for group in paths] for block in self.blocks]
        first = blocks[0][0][0].weight
        device = first.device
        need = max(sum(m.weight.numel() + (m.bias.numel() if m.bias is not None else 0)
                       for group in groups for m in group) for groups in blocks) * first.element_size()
        if device.type == "cuda":
            from evalsuite.devices import allocatable_bytes

            torch.cuda.empty_cache()
            room = allocatable_bytes(device, self.cap_bytes)
            if room < need + FUSE_MARGIN_BYTES:
                return self._skip_fusing(f"no room to fuse the projections: one block's fused weights take "
                                         f"{need / 2**20:.0f} MiB, {room / 2**20:.0f} MiB allocatable")
        self._fused, self._fused_mlp = [], []
        done = 0
        try:
            for groups in blocks:
                made = [FusedLinear.of(group) for group in groups]
                if lay.fused:
                    self._fused.append(made.pop(0))
                if lay.fused_mlp:
                    self._fused_mlp.append(made.pop(0))
                done += 1
                if device.type == "cuda":
                    torch.cuda.empty_cache()
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            self._skip_fusing(f"out of memory fusing block {done} of {len(blocks)}")

    def _skip_fusing(self, reason: str) -> None:
        """Run every projection as the model's own module. Blocks fused so far keep their weights as views into
        the fused tensors, which the modules read as usual."""
        self.fuse, self._fused, self._fused_mlp, self.fuse_skipped = False, [], [], reason

    # --------------------------------------------------------------------------------- what it covers
    @staticmethod
    def unsupported_reason(model) -> str | None:
        found = layout_for(model)
        if found is None:
            return f"architecture {type(model).__name__} is not covered by the engine"
        family, layout = found
        config = model.config
        for attribute, refused, reason in layout.refuse:
            if refused(getattr(config, attribute, None)):
                return f"{family}: {reason}"
        dynamic = sorted(_rope_types(config) - _STATIC_ROPE_TYPES)
        if layout.positions == "rotary_module" and dynamic:
            return f"{family}: rope type {dynamic[0]!r} changes with sequence length"
        return None

    def _rotary_dim(self, head_dim: int) -> int:
        cos, _ = self._rotary(torch.arange(2), torch.float32, torch.device("cpu"), self._layer_types()[0])
        return cos.shape[-1]

    def _layer_types(self) -> list[str | None]:
        types = getattr(self.config, "layer_types", None)
        return list(types) if types else [None] * len(self.blocks)

    def _windows(self) -> tuple[int, ...]:
        """Sliding window per layer (0: the whole context), as transformers' masks apply it."""
        window = getattr(self.config, "sliding_window", None) or 0
        types = getattr(self.config, "layer_types", None)
        if types:
            return tuple(window if t == "sliding_attention" else 0 for t in types)
        return (window,) * len(self.blocks)

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    @property
    def max_positions(self) -> int | None:
        if self.layout.positions == "alibi":
            return None  # ALiBi has no position table
        cfg = self.config
        return getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)

    def describe(self) -> dict:
        return {"family": self.family, "wiring": self.wiring, "heads": self.spec.num_heads,
                "kv_heads": self.spec.num_kv_heads, "head_dim": self.spec.head_dim,
                "positions": self.layout.positions, "rotary_dim": self.spec.rotary_dim,
                "sliding_window_layers": sum(1 for w in self.windows if w),
                "fused_projections": [*self.layout.fused, *self.layout.fused_mlp] if self.fuse else []}

    # ------------------------------------------------------------------------------ position tables
    def _rotary(self, positions, dtype, device, layer_type):
        """cos, sin [len(positions), rotary_dim] from the model's own rotary module (so static rope scaling,
        partial rotary and per-layer-type bases are included)."""
        rotary = self.backbone.rotary_emb
        probe = torch.empty(1, dtype=dtype, device=device)
        pos = positions.to(device)[None, :]
        if layer_type is not None and "layer_type" in inspect.signature(rotary.forward).parameters:
            cos, sin = rotary(probe, pos, layer_type)
        elif layer_type == "sliding_attention" and hasattr(self.backbone, "rotary_emb_local"):
            cos, sin = self.backbone.rotary_emb_local(probe, pos)  # older Gemma 3: a second module
        else:
            cos, sin = rotary(probe, pos)
        return cos[0], sin[0]

    def position_tables(self, max_positions: int, device, dtype) -> list[PositionTables]:
        """One :class:`PositionTables` per layer (layers of one type share the object)."""
        positions = self.layout.positions
        if positions == "gptj_buffer":
            # GPT-J keeps sin|cos per position in a buffer and casts it to the key dtype before use: on each
            # attention module up to transformers 5.2x, on one rotary module of the backbone after.
            owner = _get(self.blocks[0], self.layout.attn)
            if not hasattr(owner, "embed_positions"):
                owner = self.backbone.rotary_emb
            sincos = owner.embed_positions[:max_positions].to(device=device, dtype=dtype)
            sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
            table = PositionTables(cos=torch.repeat_interleave(cos, 2, dim=-1).contiguous(),
                                   sin=torch.repeat_interleave(sin, 2, dim=-1).contiguous())
            return [table] * self.num_layers
        if positions == "alibi":
            from transformers.models.bloom.modeling_bloom import build_alibi_tensor

            # transformers' own slopes: the bias it builds for positions (0, 1) is (0, slope) per head
            alibi = build_alibi_tensor(torch.ones(1, 2, device=device), self.spec.num_heads, torch.float32)
            return [PositionTables(alibi_slopes=alibi[:, 0, 1].contiguous())] * self.num_layers
        if positions == "learned":
            return [PositionTables()] * self.num_layers
        by_type: dict = {}
        for layer_type in set(self._layer_types()):
            cos, sin = self._rotary(torch.arange(max_positions), dtype, device, layer_type)
            by_type[layer_type] = PositionTables(cos=cos.to(dtype).contiguous(), sin=sin.to(dtype).contiguous())
        return [by_type[t] for t in self._layer_types()]

    # -------------------------------------------------------------------------------------- the step
    def decode(self, tokens: torch.Tensor, positions: torch.Tensor, attend: Attend) -> torch.Tensor:
        """tokens, positions: [B] -> logits [B, vocab]."""
        if self.fuse and not all(fused[0].current() for fused in (self._fused, self._fused_mlp) if fused):
            self._fuse_all()
        x = self.embed(tokens, positions)
        if self.wiring == "sequential":
            return self._decode_sequential(x, attend)
        if self.wiring == "parallel_shared":
            return self._decode_parallel_shared(x, attend)
        for index in range(self.num_layers):
            x = self.block(index, x, attend)
        return self.head(x)

    def _decode_sequential(self, x: torch.Tensor, attend: Attend) -> torch.Tensor:
        """The sequential blocks with each residual add done with the norm that reads its sum (one kernel for
        a plain RMSNorm on CUDA: :func:`add_then_norm`): the same operations as :meth:`block`, in its order."""
        lay = self.layout
        pending: torch.Tensor | None = None  # the previous block's MLP output, not yet added to x
        for index, block in enumerate(self.blocks):  # not a slice: that builds a ModuleList every step
            first, second = (_get(block, name) for name in lay.norms)
            x, h = add_then_norm(x, pending, first)
            x, h = add_then_norm(x, self._attention(index, block, h, attend), second)
            pending = self._mlp(index, _get(block, lay.mlp), h)
        x, h = add_then_norm(x, pending, _get(self.backbone, lay.final_norm))
        return self._logits(h)

    def _decode_parallel_shared(self, x: torch.Tensor, attend: Attend) -> torch.Tensor:
        """GPT-J's blocks with each residual sum (attn + mlp + x) done with the norm that reads it: one kernel for
        a LayerNorm on CUDA (:func:`add3_then_layer_norm`), the same operations in the same order."""
        lay = self.layout
        pending: tuple[torch.Tensor, torch.Tensor] | None = None  # the previous block's attention and MLP outputs
        for index, block in enumerate(self.blocks):
            x, h = add3_then_layer_norm(x, pending, _get(block, lay.norms[0]))
            pending = self._parallel_branches(index, block, h, attend)
        x, h = add3_then_layer_norm(x, pending, _get(self.backbone, lay.final_norm))
        return self._logits(h)

    def _parallel_branches(self, index: int, block, h: torch.Tensor,
                           attend: Attend) -> tuple[torch.Tensor, torch.Tensor]:
        """A parallel_shared block's attention and MLP outputs, both read from the normed input ``h``."""
        mlp = _get(block, self.layout.mlp)
        if self.fuse and self.layout.mlp_steps is not None:
            outputs, activated = self._project(index, h, with_activation=self._gelu_in_product)
            if activated:  # one row on CUDA: the MLP's output product beside the attention
                return self._side_by_side(lambda: self._attention(index, block, h, attend, outputs),
                                          lambda: self._mlp_from(mlp, outputs, activated=True))
            return self._attention(index, block, h, attend, outputs), self._mlp_from(mlp, outputs, activated)
        return self._attention(index, block, h, attend), mlp(h)

    def _side_by_side(self, first: Callable[[], torch.Tensor],
                      second: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``first()`` on the current CUDA stream while ``second()`` runs on a side stream; both results, once both
        are done. At one row GPT-J's attention is a chain of short latency-bound kernels (rotary, attention, its
        merge: ~12 us a layer on an H100) and out_proj a small read, while fc_out reads 134 MB: side by side the
        read hides most of the chain (``benchmarks/profile_decode.py``). CUDA graphs capture both streams.
        Tensors stay safe to reuse: the side stream starts after everything the current one has queued, and the
        current one waits for it before anything after the block."""
        main, side = torch.cuda.current_stream(self.device), self._side_stream
        if side is None or side.device != main.device:  # the model moved after set-up: one after the other
            return first(), second()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            second_out = second()
        first_out = first()
        main.wait_stream(side)
        return first_out, second_out

    def embed(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        lay = self.layout
        x = _get(self.backbone, lay.embed)(tokens)
        if self.embed_multiplier is not None:
            x = x * torch.tensor(self.embed_multiplier, dtype=x.dtype)
        if lay.pos_embed is not None:
            x = x + _get(self.backbone, lay.pos_embed)(positions.long())
        if lay.embed_norm is not None:
            x = _get(self.backbone, lay.embed_norm)(x)
        return x

    def _qkv(self, attn, h: torch.Tensor):
        spec, lay = self.spec, self.layout
        batch, d = h.shape[0], spec.head_dim
        if len(lay.qkv) == 3:
            q, k, v = (module_linear(_get(attn, name), h) for name in lay.qkv)
            return (q.view(batch, spec.num_heads, d), k.view(batch, spec.num_kv_heads, d),
                    v.view(batch, spec.num_kv_heads, d))
        fused = module_linear(_get(attn, lay.qkv[0]), h)
        if self.qkv_layout == "per_head":
            fused = fused.view(batch, spec.num_heads, 3, d)
            return fused[:, :, 0], fused[:, :, 1], fused[:, :, 2]
        q_size, kv_size = spec.num_heads * d, spec.num_kv_heads * d
        q, k, v = fused.split((q_size, kv_size, kv_size), dim=-1)
        return (q.view(batch, spec.num_heads, d), k.view(batch, spec.num_kv_heads, d),
                v.view(batch, spec.num_kv_heads, d))

    def _attention(self, index: int, block, h: torch.Tensor, attend: Attend,
                   outputs: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """``outputs``: the fused projections' results for this block, by module path (q, k, v among them)."""
        attn = _get(block, self.layout.attn)
        if outputs is None and self.fuse and self._fused:
            outputs, _ = self._project(index, h)
        if outputs is not None:
            spec, batch, prefix = self.spec, h.shape[0], self.layout.attn + "."
            q, k, v = (outputs[prefix + name] for name in self.layout.qkv)
            q, k, v = (q.view(batch, spec.num_heads, spec.head_dim), k.view(batch, spec.num_kv_heads, spec.head_dim),
                       v.view(batch, spec.num_kv_heads, spec.head_dim))
        else:
            q, k, v = self._qkv(attn, h)
        if self.layout.qk_norm is not None:
            q = _get(attn, self.layout.qk_norm[0])(q)
            k = _get(attn, self.layout.qk_norm[1])(k)
        return module_linear(_get(attn, self.layout.out_proj), attend(index, q, k, v))

    def _project(self, index: int, h: torch.Tensor,
                 with_activation: bool = False) -> tuple[dict[str, torch.Tensor], bool]:
        """The fused projections' outputs by module path, and whether the MLP's activation is already applied to
        its input projection's (``with_activation``: asked of the product, which does it at one row)."""
        fused = self._fused[index]
        outputs = fused.with_gelu_new(h) if with_activation else None
        activated = outputs is not None
        return dict(zip(self.layout.fused, outputs if outputs is not None else fused(h))), activated

    def _mlp_from(self, mlp, outputs: dict[str, torch.Tensor], activated: bool = False) -> torch.Tensor:
        """The MLP after its input projection (done by the fused product): activation (unless ``activated``),
        output projection."""
        assert self.layout.mlp_steps is not None  # only layouts that fuse the MLP's input come here
        first, act, last = self.layout.mlp_steps
        hidden = outputs[f"{self.layout.mlp}.{first}"]
        if not activated:
            hidden = self._activation(hidden) if self._activation is not None else _get(mlp, act)(hidden)
        return module_linear(_get(mlp, last), hidden)

    def _mlp(self, index: int, mlp, h: torch.Tensor) -> torch.Tensor:
        """The block's MLP: a gated one with its gate and up projections as one product where they are fused."""
        if not (self.fuse and self._fused_mlp):
            return mlp(h)
        gate, up = self._fused_mlp[index](h)
        activation, down = self.layout.gated_mlp_tail
        return module_linear(_get(mlp, down), silu_mul(_get(mlp, activation), gate, up))

    def block(self, index: int, x: torch.Tensor, attend: Attend) -> torch.Tensor:
        """One block of a wiring without a loop of its own (sequential and parallel_shared blocks run in
        :meth:`_decode_sequential` and :meth:`_decode_parallel_shared`, which fuse each residual add with the
        norm after it)."""
        block = self.blocks[index]
        norms = [_get(block, name) for name in self.layout.norms]
        mlp = _get(block, self.layout.mlp)
        wiring = self.wiring
        if wiring == "parallel":
            a = self._attention(index, block, norms[0](x), attend)
            return mlp(norms[1](x)) + a + x
        if wiring == "sandwich":
            x = x + norms[1](self._attention(index, block, norms[0](x), attend))
            return x + norms[3](self._mlp(index, mlp, norms[2](x)))
        if wiring == "bloom":
            ln = block.input_layernorm(x)
            residual = ln if block.apply_residual_connection_post_layernorm else x
            x1 = residual + self._attention(index, block, ln, attend)
            ln2 = block.post_attention_layernorm(x1)
            residual = ln2 if block.apply_residual_connection_post_layernorm else x1
            return mlp(ln2[:, None], residual[:, None])[:, 0]
        raise ValueError(f"unknown block wiring {wiring!r}")

    def head(self, x: torch.Tensor) -> torch.Tensor:
        return self._logits(_get(self.backbone, self.layout.final_norm)(x))

    def _logits(self, normed: torch.Tensor) -> torch.Tensor:
        logits = module_linear(self.lm_head, normed)
        if self.final_softcap:
            logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        return logits

    # ------------------------------------------------------------------------------------- prefill
    @torch.inference_mode()
    def prefill(self, prompts: list[list[int]]) -> Prefill:
        """Run the model's own forward on ``prompts`` (token ids on the host), several in one forward where
        :meth:`packs_prompts` allows: the prompts one after another in one sequence, each with its own
        positions, each token seeing only its own prompt's earlier tokens (packed_attention.py under SDPA: each
        prompt's attention at its own length's cost; otherwise a dense mask over the pack). A small model spends
        ~40 ms of host time on a forward of any length, so 164 HumanEval prompts one by one took 6.3 s of a
        10.8 s greedy run (SmolLM2-135M, H100). Everything per token is built on the host and sent in one copy,
        so a pack's set-up does not grow with its number of prompts."""
        if len(prompts) == 1:
            ids = to_device(prompts[0], self.device)
            out = self.model(input_ids=ids[None, :], use_cache=True, logits_to_keep=1, **self._cache_kwargs())
            return Prefill(out.logits[0], [(k[0], v[0]) for k, v in _cache_layers(out.past_key_values)])
        lengths = [len(p) for p in prompts]
        starts = list(itertools.accumulate(lengths[:-1], initial=0))
        owner = np.repeat(np.arange(len(prompts)), lengths)
        positions = np.arange(len(owner)) - np.repeat(starts, lengths)
        ends = [a + n - 1 for a, n in zip(starts, lengths)]
        # one host-to-device copy: ids, positions, owners, then each prompt's last index
        packed = to_device([*itertools.chain.from_iterable(prompts), *positions.tolist(), *owner.tolist(), *ends],
                           self.device)
        total = len(owner)
        ids, positions_t, owner_t = packed[:total], packed[total:2 * total], packed[2 * total:3 * total]
        forward = dict(input_ids=ids[None, :], position_ids=positions_t[None, :], use_cache=True,
                       logits_to_keep=packed[3 * total:], **self._cache_kwargs())
        if packed_attention.usable(self.model):  # each prompt's attention at its own length's cost
            with packed_attention.in_use(self.model):
                out = self.model(**forward, **{packed_attention.KWARG: PackedBatches.of(lengths, self.device)})
        else:  # a dense mask: every pair of the pack computed, the other prompts' masked off
            visible = (owner_t[:, None] == owner_t[None, :]) & (positions_t[:, None] >= positions_t[None, :])
            dtype = self.model.get_input_embeddings().weight.dtype
            mask = torch.zeros(visible.shape, dtype=dtype, device=self.device).masked_fill_(~visible,
                                                                                            torch.finfo(dtype).min)
            out = self.model(**forward, attention_mask=mask[None, None])
        return Prefill(out.logits[0], [(k[0], v[0]) for k, v in _cache_layers(out.past_key_values)], owner_t,
                       positions_t)

    def packs_prompts(self, length: int) -> bool:
        """Whether a prompt of ``length`` tokens may share a forward with others (:meth:`prefill`): the
        family reads positions from ``position_ids`` and takes a 4-D additive mask (ALiBi is built from a 2-D
        one) with eager or SDPA attention, and no sliding window is shorter than the prompt (within it the
        window then masks nothing)."""
        windows = [w for w in self.windows if w]
        # the mask is a dense 4-D tensor: eager and SDPA attention take it, flash and flex attention do not
        dense_mask = getattr(self.config, "_attn_implementation", None) in (None, "eager", "sdpa")
        return dense_mask and self.layout.positions != "alibi" and (not windows or length <= min(windows))

    @property
    def device(self) -> torch.device:
        return self.model.get_input_embeddings().weight.device

    def _cache_kwargs(self) -> dict[str, Any]:
        if any(self.windows):  # a plain cache keeps every key (a sliding-window cache drops old ones)
            from transformers import DynamicCache

            # transformers 5.24 renamed the forward's ``past_key_values`` to ``cache`` (the old name warns)
            name = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
            return {name: DynamicCache()}
        return {}


def _cache_layers(cache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    if hasattr(cache, "self_attention_cache"):  # an encoder-decoder wrapper (GPT-BigCode)
        cache = cache.self_attention_cache
    if hasattr(cache, "layers"):  # transformers >= 4.56
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache))  # pragma: no cover - older transformers
