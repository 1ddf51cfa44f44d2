"""What a run will apply to a model, without loading its weights: ``evalsuite models NAME``.

It goes through the same functions the hf backend uses at load time (config, tokenizer, dtype choice,
:func:`~evalsuite.generation.hf.tokenizer_fixes.prepare_codec`, the prompt-style decision), so what it prints
is what the run record will say, not the registry's intentions.
"""

from __future__ import annotations

from typing import Any

from evalsuite.models.options import LoadingOptions
from evalsuite.models.registry import ModelSpec


def run_settings(spec: ModelSpec, loading: LoadingOptions, prompt_style: str = "auto") -> dict[str, Any]:
    """The dtype, tokenizer policy, fixes and prompt style a run of ``spec`` would use on this machine."""
    from evalsuite.generation.hf.loading import config_dtype, config_summary, pick_device, pick_dtype, revision_of
    from evalsuite.protocol.prompting import decide_style

    config, tokenizer, spec, codec = _read(spec, loading)
    device = pick_device(loading)
    dtype = pick_dtype(spec, loading, device, config_dtype(config))
    decision = decide_style(prompt_style, codec.chat_template)
    token = tokenizer.convert_ids_to_tokens
    return {
        "model": spec.name, "location": spec.location, "family": spec.family, "revision": revision_of(spec, config),
        "device": str(device), "dtype": dtype + ("" if device.type != "cuda" else " (the memory planner may "
                                                  "choose another precision: see `evalsuite plan`)"),
        "config": config_summary(config),
        "pad": {"id": codec.pad_id, "token": token(codec.pad_id)},
        "bos": {"id": codec.bos_id if codec.add_bos else None,
                "token": token(codec.bos_id) if codec.add_bos and codec.bos_id is not None else None,
                "source": codec.bos_source},
        "eos": {"ids": sorted(codec.eos_ids), "tokens": [token(i) for i in sorted(codec.eos_ids)]},
        "prompt_style": decision.to_dict(),
        "extra_stop_sequences": list(spec.extra_stop_sequences),
        "tokenizer_fixes": list(codec.fixes),
    }


def chat_template_of(spec: ModelSpec, loading: LoadingOptions) -> str | None:
    """The chat template a run of ``spec`` would apply (after the tokenizer fixes), its weights unread."""
    return _read(spec, loading)[3].chat_template


def _read(spec: ModelSpec, loading: LoadingOptions) -> tuple[Any, Any, ModelSpec, Any]:
    """Config, tokenizer, the spec as found and the codec, as the hf backend reads them at load time."""
    from evalsuite.generation.hf.loading import generation_config_of, load_config_and_tokenizer
    from evalsuite.generation.hf.tokenizer_fixes import prepare_codec

    config, tokenizer, spec = load_config_and_tokenizer(spec, bool(loading.trust_remote_code or
                                                                   spec.trust_remote_code))
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    rows = getattr(text, "vocab_size", None)
    codec = prepare_codec(tokenizer, spec, rows if isinstance(rows, int) else None, generation_config_of(spec, config))
    return config, tokenizer, spec, codec
