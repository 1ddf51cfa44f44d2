"""One decoder step for a batch of rows (one new token each), written once for every covered family.

It calls the loaded transformers model's own modules (embeddings, norms, projections, MLPs, LM head) and
so reads its weight tensors in place: no copy, and the same arithmetic as transformers for everything but
attention and the KV cache, which the engine owns. A family adapter says only how a block is wired:
- GPT-J: attention and MLP in parallel off one LayerNorm; partial, interleaved rotary (rotary_dim of each head);
- Llama: RMSNorm, attention then SwiGLU MLP, rotate-half rotary, grouped-query attention;
- BLOOM: ALiBi position bias (no rotary), LayerNorm after the embeddings, one fused QKV projection laid out
  [heads, 3, head_dim].
The prompt itself is run by the model's own forward (:meth:`FamilyAdapter.prefill`), once per prompt.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from evalsuite.engine.kernels import (ROTARY_HALF, ROTARY_INTERLEAVED, ROTARY_NONE, AttentionSpec,
                                      PositionTables)

# attend(layer_index, q [B, Hq, D], k [B, Hkv, D], v [B, Hkv, D]) -> [B, Hq * D]
Attend = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

_ROPE_TYPES_WITHOUT_RUNTIME_STATE = {"default", "linear", "llama3", "yarn"}


class FamilyAdapter:
    """Wiring of one model family. Subclasses fill ``spec`` and implement the per-block step."""

    architectures: tuple[str, ...] = ()
    spec: AttentionSpec

    def __init__(self, model):
        self.model = model
        self.config = model.config

    # --- what every family provides
    @classmethod
    def unsupported_reason(cls, model) -> str | None:
        return None

    @property
    def num_layers(self) -> int:
        raise NotImplementedError

    @property
    def max_positions(self) -> int | None:
        return getattr(self.config, "max_position_embeddings", None)

    def position_tables(self, max_positions: int, device, dtype) -> PositionTables:
        return PositionTables()

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def block(self, index: int, x: torch.Tensor, attend: Attend) -> torch.Tensor:
        raise NotImplementedError

    def head(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # --- shared
    def decode(self, tokens: torch.Tensor, attend: Attend) -> torch.Tensor:
        """tokens: [B] -> logits [B, vocab]."""
        x = self.embed(tokens)
        for index in range(self.num_layers):
            x = self.block(index, x, attend)
        return self.head(x)

    @torch.inference_mode()
    def prefill(self, prompt_ids: torch.Tensor) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Run the model's own forward on one prompt ([L] ids): last-position logits [vocab] and per layer
        (keys, values) as [kv_heads, L, head_dim], exactly as transformers caches them."""
        out = self.model(input_ids=prompt_ids[None, :], use_cache=True, logits_to_keep=1)
        return out.logits[0, -1], [(k[0], v[0]) for k, v in _cache_layers(out.past_key_values)]

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        return x.view(x.shape[0], heads, self.spec.head_dim)


def _cache_layers(cache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    if hasattr(cache, "layers"):  # transformers >= 4.56
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache))  # pragma: no cover - older transformers


class GPTJAdapter(FamilyAdapter):
    architectures = ("GPTJForCausalLM",)

    def __init__(self, model):
        super().__init__(model)
        cfg = self.config
        heads = cfg.n_head
        head_dim = cfg.n_embd // heads
        rotary_dim = cfg.rotary_dim or head_dim
        self.blocks = model.transformer.h
        self.spec = AttentionSpec(num_heads=heads, num_kv_heads=heads, head_dim=head_dim,
                                  scale=1.0 / math.sqrt(head_dim), rotary_style=ROTARY_INTERLEAVED,
                                  rotary_dim=rotary_dim)

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    @property
    def max_positions(self) -> int:
        return self.config.n_positions

    def position_tables(self, max_positions, device, dtype) -> PositionTables:
        # GPT-J keeps sin|cos per position in a buffer and casts it to the key dtype before use.
        sincos = self.blocks[0].attn.embed_positions[:max_positions].to(device=device, dtype=dtype)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        return PositionTables(cos=torch.repeat_interleave(cos, 2, dim=-1).contiguous(),
                              sin=torch.repeat_interleave(sin, 2, dim=-1).contiguous())

    def embed(self, tokens):
        return self.model.transformer.wte(tokens)

    def block(self, index, x, attend):
        block = self.blocks[index]
        attn = block.attn
        h = block.ln_1(x)
        heads = self.spec.num_heads
        a = attend(index, self._heads(attn.q_proj(h), heads), self._heads(attn.k_proj(h), heads),
                   self._heads(attn.v_proj(h), heads))
        return attn.out_proj(a) + block.mlp(h) + x

    def head(self, x):
        return self.model.lm_head(self.model.transformer.ln_f(x))


class LlamaAdapter(FamilyAdapter):
    architectures = ("LlamaForCausalLM",)

    def __init__(self, model):
        super().__init__(model)
        cfg = self.config
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.layers = model.model.layers
        self.spec = AttentionSpec(num_heads=cfg.num_attention_heads, num_kv_heads=cfg.num_key_value_heads,
                                  head_dim=head_dim, scale=head_dim ** -0.5, rotary_style=ROTARY_HALF,
                                  rotary_dim=head_dim)

    @classmethod
    def unsupported_reason(cls, model):
        rope = getattr(model.config, "rope_parameters", None) or getattr(model.config, "rope_scaling", None) or {}
        rope_type = rope.get("rope_type", rope.get("type", "default")) if isinstance(rope, dict) else "default"
        if rope_type not in _ROPE_TYPES_WITHOUT_RUNTIME_STATE:
            return f"rope type {rope_type!r} changes with sequence length"
        if getattr(model.config, "pretraining_tp", 1) > 1:
            return "pretraining_tp > 1"
        return None

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def position_tables(self, max_positions, device, dtype) -> PositionTables:
        # The model's own rotary module, so any static rope scaling (linear, llama3, yarn) is included.
        positions = torch.arange(max_positions, device=device)[None, :]
        probe = torch.empty(1, dtype=dtype, device=device)
        cos, sin = self.model.model.rotary_emb(probe, positions)
        return PositionTables(cos=cos[0].to(dtype).contiguous(), sin=sin[0].to(dtype).contiguous())

    def embed(self, tokens):
        return self.model.model.embed_tokens(tokens)

    def block(self, index, x, attend):
        layer = self.layers[index]
        sa = layer.self_attn
        h = layer.input_layernorm(x)
        a = attend(index, self._heads(sa.q_proj(h), self.spec.num_heads),
                   self._heads(sa.k_proj(h), self.spec.num_kv_heads),
                   self._heads(sa.v_proj(h), self.spec.num_kv_heads))
        x = x + sa.o_proj(a)
        return x + layer.mlp(layer.post_attention_layernorm(x))

    def head(self, x):
        return self.model.lm_head(self.model.model.norm(x))


class BloomAdapter(FamilyAdapter):
    architectures = ("BloomForCausalLM",)

    def __init__(self, model):
        super().__init__(model)
        cfg = self.config
        heads = cfg.n_head
        head_dim = cfg.hidden_size // heads
        self.blocks = model.transformer.h
        self.spec = AttentionSpec(num_heads=heads, num_kv_heads=heads, head_dim=head_dim,
                                  scale=1.0 / math.sqrt(head_dim), rotary_style=ROTARY_NONE, alibi=True,
                                  round_scores=True)

    @classmethod
    def unsupported_reason(cls, model):
        if getattr(model.config, "pretraining_tp", 1) > 1 and getattr(model.config, "slow_but_exact", False):
            return "pretraining_tp > 1 with slow_but_exact"
        return None

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    @property
    def max_positions(self) -> int | None:
        return None  # ALiBi has no position table

    def position_tables(self, max_positions, device, dtype) -> PositionTables:
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor

        # transformers' own slopes: the bias it builds for positions (0, 1) is (0, slope) per head
        alibi = build_alibi_tensor(torch.ones(1, 2, device=device), self.spec.num_heads, torch.float32)
        return PositionTables(alibi_slopes=alibi[:, 0, 1].contiguous())

    def embed(self, tokens):
        transformer = self.model.transformer
        return transformer.word_embeddings_layernorm(transformer.word_embeddings(tokens))

    def block(self, index, x, attend):
        block = self.blocks[index]
        sa = block.self_attention
        ln = block.input_layernorm(x)
        residual = ln if block.apply_residual_connection_post_layernorm else x
        fused = sa.query_key_value(ln).view(x.shape[0], self.spec.num_heads, 3, self.spec.head_dim)
        a = attend(index, fused[:, :, 0], fused[:, :, 1], fused[:, :, 2])
        x1 = residual + sa.dense(a)
        ln2 = block.post_attention_layernorm(x1)
        residual = ln2 if block.apply_residual_connection_post_layernorm else x1
        return block.mlp(ln2[:, None], residual[:, None])[:, 0]

    def head(self, x):
        return self.model.lm_head(self.model.transformer.ln_f(x))


ADAPTERS: tuple[type[FamilyAdapter], ...] = (GPTJAdapter, LlamaAdapter, BloomAdapter)


def adapter_class(model) -> type[FamilyAdapter] | None:
    name = type(model).__name__
    for cls in ADAPTERS:
        if name in cls.architectures:
            return cls
    return None
