"""Loading a transformers checkpoint onto one device.

This is the single place that decides placement, so the memory planner can replace :func:`load_model`
(sharding, offload, quantisation) without touching the generation code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsuite.devices import check_device_present, cuda_index, parse_device, set_cpu_threads, use_expandable_segments
from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import GenerationOptions
from evalsuite.models.fingerprint import WEIGHT_SUFFIXES, local_revision
from evalsuite.models.options import LoadingOptions
from evalsuite.models.registry import ModelSpec, with_family
from evalsuite.planner.capacity import GpuCap

if TYPE_CHECKING:
    from evalsuite.planner.plan import Plan


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    spec: ModelSpec  # with family defaults filled in from the checkpoint's config
    device: Any  # torch.device of the inputs
    dtype: str
    revision: str | None
    placement: dict[str, Any] = field(default_factory=dict)  # as recorded: the strategy and the plan's JSON
    plan: Plan | None = None  # the memory planner's plan, where it placed the model
    batch_limit: int | None = None  # the loading plan's cap on batch width (DeepSpeed-Inference kernels)
    gpu_cap: GpuCap | None = None  # the --gpu-memory cap set for this load (the plan's), lifted by release()

    @property
    def strategy(self) -> str:
        """How the weights were placed: a planner strategy (gpu, cpu-offload, nf4...) or ``single-device``."""
        return self.plan.strategy if self.plan is not None else "single-device"

    @property
    def gpu_cap_bytes(self) -> int | None:
        return self.gpu_cap.cap_bytes if self.gpu_cap is not None else None

    def release(self) -> None:
        """Drop the weights and lift this load's allocator cap; the caller frees the memory
        (:func:`evalsuite.devices.release_device_memory`) once nothing else refers to it."""
        self.model = None
        if self.gpu_cap is not None:
            self.gpu_cap.release()
            self.gpu_cap = None


def pick_device(loading: LoadingOptions):
    """The device named by ``--device`` (checked, with a GPU index: ``cuda`` means the current GPU), else
    the first GPU, else the CPU."""
    import torch

    name = parse_device(loading.device) or ("cuda" if torch.cuda.is_available() else "cpu")
    check_device_present(name)
    return torch.device("cuda", cuda_index(name)) if name.startswith("cuda") else torch.device("cpu")


def pick_dtype(spec: ModelSpec, loading: LoadingOptions, device, config_dtype: Any) -> str:
    """User flag > (CPU: float32) > registry entry > the checkpoint's own dtype > bfloat16."""
    if loading.dtype:
        return loading.dtype
    if device.type == "cpu":
        return "float32"  # half precision on CPU is slow and, for float16, often unsupported
    if spec.dtype:
        return spec.dtype
    name = str(config_dtype).replace("torch.", "") if config_dtype is not None else ""
    return name if name in ("float16", "bfloat16", "float32") else "bfloat16"


def config_dtype(config: Any) -> Any:
    """The checkpoint's declared dtype (``dtype``; older configs ``torch_dtype``, read only where ``dtype``
    is absent since transformers 5 warns on every read of the old name)."""
    if "dtype" in getattr(config, "__dict__", {}) or hasattr(type(config), "dtype"):
        return getattr(config, "dtype", None)
    return getattr(config, "torch_dtype", None)


def revision_of(spec: ModelSpec, config: Any) -> str | None:
    """The hub commit sha, or a local checkpoint's content fingerprint."""
    if spec.source == "local":
        return local_revision(Path(spec.location))
    return getattr(config, "_commit_hash", None)


def pretrained_args(spec: ModelSpec) -> tuple[str, dict[str, Any]]:
    """What ``from_pretrained`` takes for ``spec``: a GGUF file loads from its folder with ``gguf_file``
    (transformers dequantizes it to float; needs the ``gguf`` package); a hub model at ``--revision`` gets
    ``revision``."""
    if spec.gguf_file:
        return str(Path(spec.location).parent), {"gguf_file": spec.gguf_file}
    return spec.location, ({"revision": spec.revision} if spec.revision else {})


def load_config_and_tokenizer(spec: ModelSpec, trust: bool) -> tuple[Any, Any, ModelSpec]:
    """Config and tokenizer (no weights), with the family's defaults filled in from the config."""
    location, extra = pretrained_args(spec)
    if spec.gguf_file:
        try:
            import gguf  # noqa: F401
        except ImportError:
            raise EvalsuiteError(f"{spec.location}: GGUF checkpoints need the 'gguf' package (pip install gguf)") \
                from None
        from evalsuite.generation.hf.gguf_files import gguf_parsed_once

        with gguf_parsed_once():
            return _config_and_tokenizer(spec, trust, location, extra)
    return _config_and_tokenizer(spec, trust, location, extra)


def _config_and_tokenizer(spec: ModelSpec, trust: bool, location: str, extra: dict) -> tuple[Any, Any, ModelSpec]:
    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(location, trust_remote_code=trust, **extra)
    except Exception as exc:  # noqa: BLE001 - the user's file: a value of the wrong type is a TypeError, or
        # huggingface_hub's validation error; each was a traceback (the twenty-third session's red-team round)
        raise _load_error(spec, "config", exc) from exc
    check_config_sizes(spec, config)
    check_generation_config(spec, location, extra)
    spec = with_family(spec, getattr(config, "model_type", None))
    try:
        tokenizer = AutoTokenizer.from_pretrained(location, trust_remote_code=trust, **extra)
    except Exception as exc:  # noqa: BLE001 - the user's files: tokenizers' own Exception for a tokenizer.json
        # that is JSON but no tokenizer (a merge of tokens not in the vocabulary) was a traceback
        raise _load_error(spec, "tokenizer", exc) from exc
    if not getattr(tokenizer, "vocab_size", 1) or not tokenizer("def f(x):\n    return x\n")["input_ids"]:
        # transformers 5 makes an empty tokenizer of a folder without tokenizer files: every prompt was empty,
        # said only after the weights had loaded (the twenty-third session's red-team round)
        raise EvalsuiteError(f"cannot load the tokenizer of model {spec.name!r} from {spec.location}: it has no "
                             "vocabulary (no tokenizer.json, tokenizer_config.json or vocabulary files in the folder?)")
    return config, tokenizer, spec


# The sizes every causal LM's config names (transformers maps each family's own names onto these).
CONFIG_SIZES = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size",
                "num_key_value_heads", "max_position_embeddings")


def check_config_sizes(spec: ModelSpec, config: Any) -> None:
    """A size that is not a positive integer is refused before the weights load: ``n_embd: -64`` built the model
    until torch refused a negative dimension, in a traceback."""
    for name in CONFIG_SIZES:
        try:
            value = getattr(config, name, None)
        except Exception:  # noqa: BLE001 - a family's property over a bad value
            value = None
        if not isinstance(value, int) or isinstance(value, bool):  # absent, or a type transformers reports
            continue
        if value <= 0:
            raise EvalsuiteError(f"cannot load the config of model {spec.name!r} from {spec.location}: its "
                                 f"{name} is {value}, not a positive number")


GENERATION_CONFIG = "generation_config.json"


def check_generation_config(spec: ModelSpec, location: str, extra: dict) -> None:
    """A local checkpoint's generation_config.json that cannot be read is refused before the weights load:
    transformers drops it in silence (a trailing comma), and with it the extra end-of-sequence ids it names, so
    completions ran on past them (the twenty-fourth session's run-path round)."""
    from transformers import GenerationConfig

    path = Path(location) / GENERATION_CONFIG
    if spec.gguf_file or not os.path.lexists(path):
        return
    if not path.is_file():  # a dangling link (a snapshot copied without its blobs), a folder
        raise EvalsuiteError(f"cannot load the generation config of model {spec.name!r} from {spec.location}: "
                             f"{GENERATION_CONFIG} is not a readable file")
    try:
        config = GenerationConfig.from_pretrained(location, **extra)
    except Exception as exc:  # noqa: BLE001 - the user's file: transformers says OSError or ValueError
        raise _load_error(spec, "generation config", exc) from exc
    eos = config.eos_token_id
    ids = eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else []
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):  # "17" was dropped, not used
        raise EvalsuiteError(f"cannot load the generation config of model {spec.name!r} from {spec.location}: "
                             f"its eos_token_id is {eos!r}, not a token id or a list of them")


def generation_config_of(spec: ModelSpec, config: Any) -> Any | None:
    """The checkpoint's generation_config (its EOS ids matter), without loading weights."""
    from transformers import GenerationConfig

    location, extra = pretrained_args(spec)
    if not spec.gguf_file:
        try:
            return GenerationConfig.from_pretrained(location, **extra)
        except (OSError, ValueError):  # none there (load_config_and_tokenizer refused an unreadable one)
            pass
    try:
        return GenerationConfig.from_model_config(config)
    except (TypeError, ValueError, AttributeError):
        return None


def _load_error(spec: ModelSpec, what: str, exc: Exception) -> EvalsuiteError:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    first_line = (" ".join(lines[:2]) if lines[0].endswith(":") and len(lines) > 1 else lines[0]) if lines \
        else type(exc).__name__
    hint = ""
    if spec.source == "hub":
        hint = " (not an alias in the registry nor a local directory, and the hub could not provide it)"
    if "trust_remote_code" in str(exc) or "contains custom code" in str(exc):  # transformers' words for auto_map
        first_line = ("it needs its repository's own Python code, which evalsuite runs only with "
                      "--trust-remote-code (read that code first)")
    return EvalsuiteError(f"cannot load the {what} of model {spec.name!r} from {spec.location}{hint}: "
                          f"{first_line}")


def _weights_errors() -> tuple[type[Exception], ...]:
    """What loading weights may raise that :func:`_weights_error` looks at."""
    return (*unreadable_checkpoint_errors(), RuntimeError)


def _weights_error(spec: ModelSpec, exc: Exception) -> Exception:
    """The one line for weights that cannot be read, or whose shapes are not the ones ``config.json`` gives (a
    config and weights of two models: transformers' RuntimeError, a user's error); any other RuntimeError is a
    crash and goes on as it is."""
    if not isinstance(exc, RuntimeError) or isinstance(exc, unreadable_checkpoint_errors()):
        return _load_error(spec, "weights", exc)
    text = str(exc)
    if "size mismatch" not in text and "ignore_mismatched_sizes" not in text:
        return exc
    return EvalsuiteError(f"cannot load the weights of model {spec.name!r} from {spec.location}: their shapes are not "
                          "the ones its config.json gives (weights and config of two different models?)")


def unreadable_checkpoint_errors() -> tuple[type[Exception], ...]:
    """What reading a checkpoint's weights raises when the files themselves are bad (a cut download, a corrupt
    header, a pickle that is not one): a user's error, one line and exit 2, not a crash with a traceback."""
    import pickle

    errors: list[type[Exception]] = [OSError, ValueError, pickle.UnpicklingError]
    try:
        from safetensors import SafetensorError
    except ImportError:
        pass
    else:
        errors.append(SafetensorError)
    return tuple(errors)


def check_hub_reachable(spec: ModelSpec) -> None:
    """Fail in a second with one clear line, not after a minute of retries, when a hub model is neither
    cached nor reachable (a typo in a model name lands here too)."""
    if spec.source not in ("hub", "alias"):
        return
    from huggingface_hub import constants, try_to_load_from_cache

    from evalsuite.hub import hub_host, hub_unreachable_reason

    if isinstance(try_to_load_from_cache(spec.location, "config.json", revision=spec.revision), str):
        return
    if spec.source == "alias":  # the name is known: what is missing is the checkpoint behind it
        what = (f"model {spec.name!r} is an alias of the hub model {spec.location!r}, which is not in the Hugging "
                "Face cache")
    else:
        what = (f"model {spec.name!r} is not an alias in evalsuite/configs/models.yaml, not a local directory, "
                f"and {spec.location!r} is not in the Hugging Face cache")
    if constants.HF_HUB_OFFLINE:
        raise EvalsuiteError(f"{what}, and HF_HUB_OFFLINE is set: download {spec.location!r} first "
                             "(`hf download` on a machine online) or unset HF_HUB_OFFLINE")
    reason = hub_unreachable_reason()
    if reason is not None:
        raise EvalsuiteError(f"{what}, and the hub ({hub_host()}) cannot be reached: {reason}; check the name "
                             "(`evalsuite models` lists aliases) or download the model first")


def load_model(spec: ModelSpec, options: GenerationOptions) -> LoadedModel:
    """Load tokenizer and weights onto one device, with ``trust_remote_code`` only when opted in."""
    from evalsuite.generation.hf.gguf_files import gguf_bar_as_transformers_says, gguf_parsed_once

    if not spec.gguf_file:
        return _load_model(spec, options)
    with gguf_parsed_once(), gguf_bar_as_transformers_says():
        return _load_model(spec, options)


def _load_model(spec: ModelSpec, options: GenerationOptions) -> LoadedModel:
    import torch

    from evalsuite.models.weights import load_causal_lm

    check_hub_reachable(spec)
    loading = options.loading
    trust = bool(loading.trust_remote_code or spec.trust_remote_code)
    planned = loading.planned
    check_gguf_placement(spec, loading)
    before = local_revision(Path(spec.location)) if spec.source == "local" else None  # the files as found
    config, tokenizer, spec = load_config_and_tokenizer(spec, trust)
    device = pick_device(loading)
    if device.type == "cuda":
        use_expandable_segments()
        from evalsuite.engine.kernels import hash_triton_in_background, triton_usable

        if triton_usable(device):
            hash_triton_in_background()  # while the weights load
    else:
        set_cpu_threads(options.hf.threads)
    dtype = pick_dtype(spec, loading, device, config_dtype(config))
    if not spec.gguf_file and (device.type == "cuda" or planned):
        # The memory planner places the model (one GPU, several, 8/4-bit, offload, CPU) and records why.
        from evalsuite.planner import load_planned
        from evalsuite.planner.strategies import strategy_named

        try:
            model, plan = load_planned(spec.location, spec, loading, batch_size=options.hf.batch_size,
                                         max_new_tokens=options.max_new_tokens)  # spec.revision
        except _weights_errors() as exc:
            raise _weights_error(spec, exc) from exc
        on_gpu = strategy_named(plan.strategy).needs_gpu
        device = torch.device("cuda", plan.main_gpu) if on_gpu else torch.device("cpu")
        return LoadedModel(model=model, tokenizer=tokenizer, spec=spec, device=device, dtype=plan.dtype,
                           revision=settled_revision(spec, config, before),
                           placement={"strategy": plan.strategy, "plan": plan.to_json()}, plan=plan,
                           batch_limit=plan.batch_limit, gpu_cap=plan.gpu_cap)
    location, extra = pretrained_args(spec)
    try:
        model = load_causal_lm(location, config=config, dtype=getattr(torch, dtype), trust_remote_code=trust,
                               **extra)
    except _weights_errors() as exc:
        raise _weights_error(spec, exc) from exc
    model.to(device).eval()
    placement = {"strategy": "single-device", "device": str(device)}
    if spec.gguf_file:
        placement["gguf_file"] = spec.gguf_file
    return LoadedModel(model=model, tokenizer=tokenizer, spec=spec, device=device, dtype=dtype,
                       revision=settled_revision(spec, config, before), placement=placement)


def check_gguf_placement(spec: ModelSpec, loading: Any) -> None:
    """A GGUF checkpoint is not placed by the planner: its placement flags are refused (run and plan alike)."""
    if spec.gguf_file and loading.planned:
        raise EvalsuiteError(f"{spec.name}: a GGUF checkpoint loads whole onto one device; --strategy, "
                             "--gpu-memory, --cpu-memory and --offload-dir do not apply")


def settled_revision(spec: ModelSpec, config: Any, before: str | None) -> str | None:
    """The checkpoint's revision once its weights are in memory, the same as before they were read: a local
    folder whose files changed during the load (a trainer writing ``ckpt/latest``) would have the new files'
    fingerprint name a run made with the old weights (or a mix). Refused in one line; the rerun loads settled files."""
    after = revision_of(spec, config)
    if before is not None and after != before:
        raise EvalsuiteError(f"{spec.name}: the checkpoint's files changed while it loaded ({before} before, {after} "
                             "after): its results could not be told apart from the new files'; rerun once they are "
                             "settled")
    return after


def output_embedding_rows(model: Any) -> int | None:
    """How many ids the model can emit (rows of its output embedding), or None where it has no such layer.

    Read from the parameter's full shape: under ZeRO-3 a parameter outside a forward is an empty shell
    (``weight.shape`` is ``(0,)``) and DeepSpeed keeps the real shape in ``ds_shape``. Reading the shell gave
    0 rows: every id was masked and no end-of-sequence id was left, so ZeRO-Inference runs decoded garbage."""
    embedding = model.get_output_embeddings()
    if embedding is None:
        return None
    shape = getattr(embedding.weight, "ds_shape", None) or embedding.weight.shape
    if len(shape) != 2 or int(shape[0]) <= 0:
        raise EvalsuiteError(f"the output embedding's weight has shape {tuple(shape)}: cannot tell the vocabulary")
    return int(shape[0])


def model_context_length(config: Any) -> int | None:
    """Longest sequence the model's position scheme supports (None: no fixed limit, e.g. ALiBi)."""
    for name in ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def config_summary(config: Any) -> dict[str, Any]:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    keys = ("model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
    return {k: getattr(text, k, None) for k in keys if getattr(text, k, None) is not None}


__all__ = ["LoadedModel", "load_model", "pick_device", "pick_dtype", "local_revision", "model_context_length",
           "config_summary", "config_dtype", "load_config_and_tokenizer", "generation_config_of", "revision_of",
           "WEIGHT_SUFFIXES"]
