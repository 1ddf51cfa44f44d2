"""A model's shape read from its config: one reader for the batcher and the memory planner.

Why one: the two read key/value heads by different rules, so the same model got two KV-cache sizes. The rule
here: Falcon's new decoder architecture (40B, 180B) counts ``num_kv_heads``; else an explicit
``num_key_value_heads`` (or ``n_head_kv``) counts; else ``multi_query`` means one head; else every attention
head has its own key/value head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def text_config(config: Any) -> Any:
    """The language model's part of a (possibly multimodal) config."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _first_int(config: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


@dataclass(frozen=True)
class ConfigShape:
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    num_layers: int | None  # None: the config does not say (the planner counts blocks)
    intermediate_size: int
    vocab_size: int

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """Bytes of key/value cache one token takes over all layers."""
        return 2 * (self.num_layers or 1) * self.num_kv_heads * self.head_dim * dtype_bytes


def kv_heads(config: Any, heads: int) -> int:
    """Key/value heads per layer, by the rule in the module docstring."""
    falcon_kv = _first_int(config, "num_kv_heads")
    if getattr(config, "new_decoder_architecture", False) and falcon_kv:
        return falcon_kv
    explicit = _first_int(config, "num_key_value_heads", "n_head_kv")
    if explicit:
        return explicit
    return 1 if getattr(config, "multi_query", False) else heads


def config_shape(config: Any) -> ConfigShape:
    """The sizes the KV cache and activations depend on, from ``config`` (its text part)."""
    text = text_config(config)
    hidden = _first_int(text, "hidden_size", "n_embd", "d_model") or 1
    heads = _first_int(text, "num_attention_heads", "n_head") or 1
    return ConfigShape(
        hidden_size=hidden, num_attention_heads=heads, num_kv_heads=kv_heads(text, heads),
        head_dim=_first_int(text, "head_dim") or hidden // heads,
        num_layers=_first_int(text, "num_hidden_layers", "n_layer", "num_layers"),
        intermediate_size=_first_int(text, "intermediate_size", "n_inner", "ffn_dim") or 4 * hidden,
        vocab_size=_first_int(text, "vocab_size") or 0)
