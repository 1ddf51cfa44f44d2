"""The model registry: aliases and per-model generation fixes from ``evalsuite/configs/models.yaml``.

Why a registry: the details that silently wreck HumanEval numbers (a missing pad token, a BOS the model
never saw, a prompt whose trailing whitespace shifts tokenisation, stop markers a family emits) are
properties of a model family, so they live once in data, not in per-model scripts or CLI flags.

Family defaults are about the architecture and its vocabulary (dtype, blocks that must not be split, a
preferred pad token, end-of-file stop markers). Which BOS a prompt starts with is the tokenizer's own
business (its ``add_bos_token``); an alias may override it only with a cited ``reason``. Prompt
whitespace is a protocol setting (``--strip-prompt``), never a model's.

A name resolves, in order, as: an alias in the registry, a local directory (its ``config.json``
``model_type`` picks the family defaults), a local ``.gguf`` file (family from its metadata at load time),
a registered hub id, any other well-formed hub id.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from evalsuite.errors import EvalsuiteError

REGISTRY_FILE = "models.yaml"
BOS_POLICIES = ("auto", "add", "none")
DTYPES = ("float32", "float16", "bfloat16")
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from and which generation fixes it needs.

    ``extra_stop_sequences`` are NOT merged by the hf backend: the runner merges them with the task's stop
    sequences into each :class:`~evalsuite.records.GenerationRequest`, so one list decides everything.
    """

    name: str  # what the user typed
    source: str  # "alias", "local", "hub", "server" (openai backend) or "builtin" (reference)
    location: str  # what from_pretrained receives: a hub id or an absolute directory
    family: str | None = None  # config.json model_type whose defaults apply
    pad_token: str | None = None  # "eos", "unk", "bos" or a token string; None: derive from the tokenizer
    padding_side: str = "left"
    bos: str = "auto"  # "auto": as the tokenizer's own add_special_tokens; "add"/"none": an alias's override
    extra_stop_sequences: tuple[str, ...] = ()
    dtype: str | None = None
    no_split_module_classes: tuple[str, ...] = ()
    trust_remote_code: bool = False
    notes: str = ""
    reason: str = ""  # why an alias overrides the tokenizer's BOS behaviour, with its source
    revision: str | None = None  # hub models: the branch, tag or commit to load (--revision); None: the default

    @property
    def gguf_file(self) -> str | None:
        """The file name when ``location`` is a local GGUF checkpoint (loaded from its folder)."""
        return Path(self.location).name if self.source == "local" and self.location.endswith(".gguf") else None

    @property
    def model_id(self) -> str:
        """What identifies the weights: a hub id, an absolute directory, or the server's model name."""
        return self.location

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        """The registry's extra stop sequences, for the runner to merge with the task's."""
        return self.extra_stop_sequences

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


# Fields an entry may set, with the converter that validates each value.
def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise EvalsuiteError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise EvalsuiteError(f"{where}: expected true or false, got {value!r}")
    return value


def _str_tuple(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise EvalsuiteError(f"{where}: expected a list of non-empty strings, got {value!r}")
    return tuple(value)


def _choice(options: tuple[str, ...]):
    def convert(value: Any, where: str) -> str:
        if value not in options:
            raise EvalsuiteError(f"{where}: expected one of {', '.join(options)}, got {value!r}")
        return value
    return convert


_ENTRY_FIELDS = {
    "hub_id": _str,
    "family": _str,
    "pad_token": _str,
    "padding_side": _choice(("left",)),  # right padding breaks batched decoder-only generation
    "bos": _choice(BOS_POLICIES),
    "extra_stop_sequences": _str_tuple,
    "dtype": _choice(DTYPES),
    "no_split_module_classes": _str_tuple,
    "trust_remote_code": _bool,
    "notes": _str,
    "reason": _str,
}
_ALIAS_ONLY = ("bos", "reason")  # per-alias overrides, never family-wide
_MOVED = {"strip_prompt_whitespace": "prompt stripping is a protocol setting now: --strip-prompt or "
                                     "--preset bigcode"}


@dataclass(frozen=True)
class Registry:
    families: dict[str, dict[str, Any]]
    models: dict[str, dict[str, Any]]  # alias (lower case) -> validated fields
    source: str = REGISTRY_FILE

    def family_fields(self, family: str | None) -> dict[str, Any]:
        return dict(self.families.get(family or "", {}))

    def spec(self, name: str, source: str, location: str, entry: dict[str, Any]) -> ModelSpec:
        family = entry.get("family")
        merged = {**self.family_fields(family), **entry}
        merged.pop("hub_id", None)
        merged.pop("family", None)
        return ModelSpec(name=name, source=source, location=location, family=family, **merged)


def _validate_entry(raw: Any, where: str, alias: bool = True) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise EvalsuiteError(f"{where}: expected a mapping of fields, got {type(raw).__name__}")
    entry = {}
    for key, value in raw.items():
        if key in _MOVED:
            raise EvalsuiteError(f"{where}: field {key!r} is no longer a model setting ({_MOVED[key]})")
        if key in _ALIAS_ONLY and not alias:
            raise EvalsuiteError(f"{where}: {key!r} is a per-alias override (with a cited reason), not a "
                                 "family default; the tokenizer's own BOS behaviour applies to a family")
        if key not in _ENTRY_FIELDS:
            raise EvalsuiteError(f"{where}: unknown field {key!r} (known: {', '.join(_ENTRY_FIELDS)})")
        entry[key] = _ENTRY_FIELDS[key](value, f"{where}.{key}")
    if entry.get("bos", "auto") != "auto" and not entry.get("reason"):
        raise EvalsuiteError(f"{where}: bos {entry['bos']!r} overrides the tokenizer; add a 'reason' citing why")
    return entry


def parse_registry(text: str, source: str = REGISTRY_FILE) -> Registry:
    """Parse and validate registry YAML; every problem names the file and the entry."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise EvalsuiteError(f"{source}{line}: invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(data, dict) or set(data) - {"families", "models"}:
        raise EvalsuiteError(f"{source}: expected top-level keys 'families' and 'models'")
    families = {name: _validate_entry(raw, f"{source}: families.{name}", alias=False)
                for name, raw in (data.get("families") or {}).items()}
    models = {}
    for alias, raw in (data.get("models") or {}).items():
        entry = _validate_entry(raw, f"{source}: models.{alias}")
        if "hub_id" not in entry:
            raise EvalsuiteError(f"{source}: models.{alias}: missing hub_id")
        if entry.get("family") and entry["family"] not in families:
            raise EvalsuiteError(f"{source}: models.{alias}: unknown family {entry['family']!r}")
        models[str(alias).lower()] = entry
    return Registry(families=families, models=models, source=source)


@lru_cache(maxsize=1)
def load_registry() -> Registry:
    """The packaged registry (``evalsuite/configs/models.yaml``, installed as ``evalsuite.configs``)."""
    text = resources.files("evalsuite.configs").joinpath(REGISTRY_FILE).read_text(encoding="utf-8")
    return parse_registry(text, source=f"evalsuite/configs/{REGISTRY_FILE}")


def read_model_type(directory: Path) -> str | None:
    config = directory / "config.json"
    if not config.is_file():
        raise EvalsuiteError(f"{directory}: no config.json; not a transformers model directory")
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EvalsuiteError(f"{config}: not valid JSON: {exc}") from exc


def looks_like_hub_id(name: str) -> bool:
    return bool(_HUB_ID.match(name)) and ".." not in name


def resolve_model(name: str, registry: Registry | None = None, backend: str = "auto",
                  revision: str | None = None) -> ModelSpec:
    """Turn what the user typed into a :class:`ModelSpec` (see the module docstring for the order).

    ``reference`` is the built-in model. With ``backend="openai"`` the name is whatever the server calls
    its model: it never fails, and picks up a registry entry's fixes (extra stop sequences) when the name
    is an alias or a registered hub id. ``revision`` (``--revision``: a branch, tag or commit of a hub
    model) is refused, in one line, for anything that is not a hub model (alias or hub id).
    """
    spec = _resolve(name, registry, backend)
    if revision is None:
        return spec
    revision = str(revision).strip()
    if not revision:
        raise EvalsuiteError("--revision expects a branch, tag or commit of a hub model, got ''")
    if spec.source not in ("alias", "hub"):
        what = {"builtin": "the built-in reference model", "server": "a model served over --backend openai",
                "local": "a local GGUF file" if spec.gguf_file else "a local folder"}[spec.source]
        raise EvalsuiteError(f"--revision {revision}: {name} is {what}, which has no hub revisions; "
                             "--revision applies to hub models (aliases and hub ids) only")
    return replace(spec, revision=revision)


def _resolve(name: str, registry: Registry | None, backend: str) -> ModelSpec:
    registry = registry or load_registry()
    if name == "reference" and backend in ("auto", "reference"):
        return ModelSpec(name=name, source="builtin", location="reference")
    entry = registry.models.get(name.lower())
    if entry is not None:
        return registry.spec(name, "alias", entry["hub_id"], entry)
    if backend == "openai":
        for entry in registry.models.values():
            if entry["hub_id"].lower() == name.lower():
                return registry.spec(name, "server", name, entry)
        return ModelSpec(name=name, source="server", location=name)
    path = Path(name).expanduser()
    if path.is_dir():
        model_type = read_model_type(path)
        return registry.spec(name, "local", str(path.resolve()), {"family": model_type})
    if path.suffix == ".gguf":
        if not path.is_file():
            raise EvalsuiteError(f"{name}: no such GGUF file")
        return registry.spec(name, "local", str(path.resolve()), {})  # family from its metadata at load time
    for entry in registry.models.values():
        if entry["hub_id"].lower() == name.lower():
            return registry.spec(name, "hub", entry["hub_id"], entry)
    if looks_like_hub_id(name) and not path.exists():
        return registry.spec(name, "hub", name, {})  # family found from config.json at load time
    raise EvalsuiteError(
        f"unknown model {name!r}: not an alias in evalsuite/configs/{REGISTRY_FILE} (see `evalsuite models`), "
        "not a local directory, not a hub id")


def with_family(spec: ModelSpec, model_type: str | None, registry: Registry | None = None) -> ModelSpec:
    """Fill in family defaults once the model's config is known (hub ids resolve before any download).

    Fields the spec set explicitly (an alias entry) win over the family's defaults.
    """
    if spec.family is not None or model_type is None:
        return spec
    registry = registry or load_registry()
    defaults = registry.family_fields(model_type)
    return replace(spec, family=model_type, **defaults)


def family_no_split(model_type: str | None, registry: Registry | None = None) -> tuple[str, ...]:
    """The block classes a family's device map must not split (the planner, for a model known by its config)."""
    return tuple(((registry or load_registry()).family_fields(model_type)).get("no_split_module_classes", ()))


def list_models(registry: Registry | None = None) -> list[ModelSpec]:
    registry = registry or load_registry()
    return [registry.spec(alias, "alias", entry["hub_id"], entry) for alias, entry in registry.models.items()]


def family_names(registry: Registry | None = None) -> list[str]:
    return sorted((registry or load_registry()).families)


__all__ = ["ModelSpec", "Registry", "resolve_model", "list_models", "with_family", "parse_registry",
           "load_registry", "family_names", "family_no_split"]
