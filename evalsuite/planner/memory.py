"""Model sizes from a config alone: parameters, bytes per precision, KV cache and activation budgets.

Nothing here touches real weights. Parameters are counted on a model built on the ``meta`` device
(``accelerate.init_empty_weights``), so the count is exact for any architecture transformers knows, ties
included; a local checkpoint's safetensors headers add what is stored on disk and in which dtype.
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.models.shape import config_shape
from evalsuite.models.shape import text_config as text_of

BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1, "nf4": 0.5}
_SAFETENSORS_DTYPES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                       "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
_SAFETENSORS_NAMES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16", "F64": "float64", "I8": "int8",
                      "U8": "uint8"}
# bitsandbytes stores one fp32 absmax per 64-value block for nf4 (no double quantisation) and one fp32
# scale per output row for int8; both are small but not nothing for the planner's arithmetic.
NF4_BYTES_PER_PARAM = 0.5 + 4 / 64
INT8_BYTES_PER_PARAM = 1.0


@dataclass(frozen=True)
class ModelShape:
    """What the planner needs to know about a model, all in parameters (not bytes)."""

    model_type: str
    num_params: int
    quantizable_params: int  # nn.Linear weights bitsandbytes would quantise (all but the output head)
    block_params: int  # one transformer block: the unit a device map never splits
    num_blocks: int
    outside_blocks_params: int  # embeddings, final norm, output head
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    max_positions: int | None
    checkpoint_dtype: str | None  # dtype the weights are stored in (safetensors headers or config)
    checkpoint_bytes: int | None  # bytes on disk when a local checkpoint exists
    block_class: str | None
    architecture: str = ""  # the model's class (Gemma3ForCausalLM): what the engine's layouts are matched on

    def weight_bytes(self, precision: str) -> int:
        """Bytes of all weights loaded in ``precision`` (bf16, fp32, int8, nf4 as bitsandbytes does it)."""
        if precision == "int8":
            rest = self.num_params - self.quantizable_params
            return int(self.quantizable_params * INT8_BYTES_PER_PARAM + rest * 2)
        if precision == "nf4":
            rest = self.num_params - self.quantizable_params
            return int(self.quantizable_params * NF4_BYTES_PER_PARAM + rest * 2)
        return int(self.num_params * BYTES[precision])

    def bytes_per_precision(self) -> dict[str, int]:
        return {p: self.weight_bytes(p) for p in ("float32", "bfloat16", "int8", "nf4")}

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """Keys and values of one token across all layers."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * dtype_bytes

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Budget:
    """Memory set aside on the GPU before any weight is placed: the ladder fits weights into the rest."""

    batch_size: int
    seq_len: int  # prompt + new tokens: what the KV cache must hold per sequence
    prompt_len: int
    kv_cache: int
    activations: int
    margin: int  # allocator fragmentation, cuBLAS workspaces
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total(self) -> int:
        return self.kv_cache + self.activations + self.margin

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["total"] = self.total
        return data


def runtime_budget(shape: ModelShape, batch_size: int, seq_len: int, prompt_len: int | None = None,
                   dtype_bytes: int = 2) -> Budget:
    """KV cache for ``batch_size`` sequences of ``seq_len`` tokens plus the prefill's peak activations.

    The prefill of ``prompt_len`` tokens is the activation peak: hidden states and MLP intermediates of
    every prompt token, attention scores (eager attention materialises heads x prompt x prompt, in fp32
    for softmax) and the last position's logits in fp32. Decoding one token needs far less.
    """
    prompt_len = min(prompt_len or seq_len, seq_len)
    kv = shape.kv_bytes_per_token(dtype_bytes) * batch_size * seq_len
    tokens = batch_size * prompt_len
    hidden = tokens * shape.hidden_size * dtype_bytes * 4
    mlp = tokens * shape.intermediate_size * dtype_bytes * 2
    scores = batch_size * shape.num_attention_heads * prompt_len * prompt_len * 4
    logits = batch_size * shape.vocab_size * 4 * 2
    activations = hidden + mlp + scores + logits
    margin = 256 * 1024**2
    return Budget(batch_size=batch_size, seq_len=seq_len, prompt_len=prompt_len, kv_cache=kv,
                  activations=activations, margin=margin)


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a ``.safetensors`` file: tensor names, dtypes and shapes, no data read."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        return json.loads(handle.read(length))


def checkpoint_summary(model_dir: Path) -> tuple[str | None, int | None, int | None]:
    """(dominant dtype, bytes, parameter count) of the safetensors files in ``model_dir``; Nones if none."""
    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        return None, None, None
    by_dtype: dict[str, int] = {}
    numel_total = 0
    for file in files:
        for name, info in read_safetensors_header(file).items():
            if name == "__metadata__":
                continue
            numel = 1
            for dim in info["shape"]:
                numel *= dim
            numel_total += numel
            by_dtype[info["dtype"]] = by_dtype.get(info["dtype"], 0) + numel * _SAFETENSORS_DTYPES.get(info["dtype"], 2)
    dominant = max(by_dtype, key=lambda name: by_dtype[name])
    return _SAFETENSORS_NAMES.get(dominant, dominant.lower()), sum(by_dtype.values()), numel_total


def empty_model(config: Any, trust_remote_code: bool = False):
    """The model built on the meta device: exact structure, no memory."""
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    with init_empty_weights(include_buffers=False):
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=trust_remote_code)
    model.tie_weights()  # from_config leaves tied embeddings untied on meta; checkpoints store them once
    return model


def _blocks(model: Any, block_classes: tuple[str, ...]) -> list[Any]:
    blocks = [m for m in model.modules() if type(m).__name__ in block_classes]
    if blocks:
        return blocks
    # Unknown family: the largest ModuleList is the stack of blocks in every causal LM transformers ships.
    import torch

    lists: list[torch.nn.ModuleList] = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList)]
    return list(max(lists, key=len)) if lists else []  # type: ignore[arg-type]  # ModuleList has __len__


def _config_value(config: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def shape_from_model(model: Any, config: Any, block_classes: tuple[str, ...] = (),
                     model_dir: Path | None = None) -> ModelShape:
    """Count parameters of a (meta or real) model; tied weights count once, as they are stored once."""
    import torch

    seen: set[int] = set()
    total = 0
    for param in model.parameters():  # parameters() already deduplicates tied weights
        if id(param) in seen:
            continue
        seen.add(id(param))
        total += param.numel()
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    output_weight = id(output.weight) if output is not None else None
    quantizable = sum(m.weight.numel() for m in model.modules()
                      if isinstance(m, torch.nn.Linear) and id(m.weight) != output_weight)
    blocks = _blocks(model, block_classes)
    block_params = max((sum(p.numel() for p in b.parameters()) for b in blocks), default=total)
    in_blocks = sum(sum(p.numel() for p in b.parameters()) for b in blocks)
    text_config = text_of(config)
    sizes = config_shape(config)
    ckpt_dtype, ckpt_bytes, _ = checkpoint_summary(model_dir) if model_dir else (None, None, None)
    if ckpt_dtype is None:
        declared = _config_value(text_config, "dtype", "torch_dtype")
        ckpt_dtype = str(declared).replace("torch.", "") if declared is not None else None
    return ModelShape(
        model_type=str(getattr(config, "model_type", "unknown")),
        num_params=int(total), quantizable_params=int(quantizable), block_params=int(block_params),
        num_blocks=len(blocks), outside_blocks_params=int(total - in_blocks),
        num_layers=sizes.num_layers or len(blocks),
        hidden_size=sizes.hidden_size, num_attention_heads=sizes.num_attention_heads,
        num_kv_heads=sizes.num_kv_heads, head_dim=sizes.head_dim,
        vocab_size=sizes.vocab_size, intermediate_size=sizes.intermediate_size,
        max_positions=_config_value(text_config, "max_position_embeddings", "n_positions", "seq_length"),
        checkpoint_dtype=ckpt_dtype, checkpoint_bytes=ckpt_bytes,
        block_class=type(blocks[0]).__name__ if blocks else None, architecture=type(model).__name__,
    )


def shape_from_config(config: Any, block_classes: tuple[str, ...] = (), model_dir: Path | None = None,
                      trust_remote_code: bool = False) -> ModelShape:
    """Sizes of the model ``config`` describes, built on the meta device (seconds, even for 176B)."""
    return shape_from_model(empty_model(config, trust_remote_code), config, block_classes, model_dir)
