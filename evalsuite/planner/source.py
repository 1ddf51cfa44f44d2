"""Find a model's config without downloading weights: local checkpoint, hub cache, or a bundled copy.

``evalsuite plan --models bloom`` must answer offline in seconds, so the configs of the registry's large
models ship in ``evalsuite/configs/model_configs/<alias>.json`` (their real config.json values). A config already in
the Hugging Face cache wins over the bundled copy; a local directory wins over both.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.models.registry import ModelSpec, family_no_split, resolve_model


@dataclass(frozen=True)
class ModelSource:
    name: str  # as the user wrote it
    model_id: str  # hub id or local path: what from_pretrained receives
    local_dir: Path | None
    config: Any  # transformers PretrainedConfig
    config_origin: str  # where the config came from, printed by `plan`
    no_split_module_classes: tuple[str, ...]
    trust_remote_code: bool = False
    revision: str | None = None  # hub models: the branch, tag or commit to load (--revision)


def _registry_entry(name: str, spec: ModelSpec | None) -> tuple[str | None, tuple[str, ...], bool]:
    """(hub id, no-split block classes, trust_remote_code) from the model registry, when it knows ``name``."""
    if spec is None:
        try:
            spec = resolve_model(name)
        except EvalsuiteError:  # not an alias, a directory nor a hub id: the bundled configs may still know it
            return None, (), False
    return spec.location, spec.no_split_module_classes, spec.trust_remote_code


def _configs_file(*parts: str) -> Path:
    """A file under ``evalsuite/configs/`` (the installed package)."""
    return Path(str(importlib.resources.files("evalsuite.configs").joinpath(*parts)))


def bundled_config_path(alias: str) -> Path | None:
    path = _configs_file("model_configs", f"{alias}.json")
    return path if path.is_file() else None


def _config_from_dict(data: dict[str, Any]) -> Any:
    from transformers import AutoConfig

    values = {k: v for k, v in data.items() if not k.startswith("_")}
    return AutoConfig.for_model(values.pop("model_type"), **values)


def _cached_hub_config(hub_id: str, trust_remote_code: bool, revision: str | None = None) -> Any | None:
    try:
        from transformers import AutoConfig

        extra = {"revision": revision} if revision else {}
        return AutoConfig.from_pretrained(hub_id, local_files_only=True, trust_remote_code=trust_remote_code,
                                          **extra)
    except Exception:  # not cached, or no network: the bundled copy answers instead
        return None


def resolve_source(name: str, spec: ModelSpec | None = None) -> ModelSource:
    """Where ``name`` (alias, hub id or local directory) gets its config from, without any download."""
    path = Path(name).expanduser()
    hub_id, classes, trust = _registry_entry(name, spec)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise EvalsuiteError(f"{name}: directory has no config.json")
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(path), trust_remote_code=trust)
        classes = classes or family_no_split(config.model_type)
        return ModelSource(name, str(path), path, config, "local checkpoint", classes, trust)
    if path.suffix == ".gguf" and path.is_file():
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
        return ModelSource(name, str(path), path, config, "local GGUF file", family_no_split(config.model_type),
                           trust)
    model_id = hub_id or name
    revision = spec.revision if spec is not None else None
    config = _cached_hub_config(model_id, trust, revision)
    origin = "hub cache" + (f" (revision {revision})" if revision else "")
    if config is None:
        alias = name
        bundled = bundled_config_path(alias) or bundled_config_path(model_id.split("/")[-1].lower())
        if bundled is None:
            raise EvalsuiteError(
                f"{name}: no config found without downloading (not a local directory, not in the Hugging Face "
                f"cache, no bundled config in evalsuite/configs/model_configs/); pass a local checkpoint directory or "
                f"fetch its config.json first")
        config = _config_from_dict(json.loads(bundled.read_text()))
        origin = f"bundled config ({bundled.name})"
    classes = classes or family_no_split(config.model_type)
    return ModelSource(name, model_id, None, config, origin, classes, trust, revision)
