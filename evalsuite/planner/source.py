"""Find a model's config without downloading weights: local checkpoint, hub cache, or a bundled copy.

``evalsuite plan --models bloom`` must answer offline in seconds, so the configs of the registry's large
models ship in ``configs/model_configs/<alias>.json`` (their real config.json values). A config already in
the Hugging Face cache wins over the bundled copy; a local directory wins over both.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError


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


def _registry_entry(name: str, spec: Any | None) -> tuple[str | None, tuple[str, ...], bool]:
    """(hub id, no-split block classes, trust_remote_code) from the model registry, when it knows ``name``."""
    if spec is None:
        try:
            from evalsuite.models.registry import resolve_model  # written alongside; optional until it lands
        except ImportError:
            resolve_model = None
        if resolve_model is not None:
            try:
                spec = resolve_model(name)
            except Exception:  # unknown name, or a checkout without the installed configs package
                spec = None
    if spec is not None:
        hub_id = getattr(spec, "location", None) or getattr(spec, "hub_id", None)
        classes = getattr(spec, "no_split_module_classes", None) or getattr(spec, "no_split_module", None) or ()
        if isinstance(classes, str):
            classes = (classes,)
        return hub_id, tuple(classes), bool(getattr(spec, "trust_remote_code", False))
    return _registry_yaml_entry(name)


def _configs_file(*parts: str) -> Path:
    """A file under ``evalsuite/configs/``: the installed ``evalsuite.configs`` package, or the source tree's folder
    when evalsuite runs from a checkout that was never pip-installed (PYTHONPATH=.)."""
    try:
        return Path(str(importlib.resources.files("evalsuite.configs").joinpath(*parts)))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2].joinpath("configs", *parts)


def _registry_yaml_entry(name: str) -> tuple[str | None, tuple[str, ...], bool]:
    """Fallback reading of configs/models.yaml for when evalsuite.models.registry is not importable."""
    try:
        import yaml

        text = _configs_file("models.yaml").read_text()
    except (ImportError, FileNotFoundError, ModuleNotFoundError):
        return None, (), False
    data = yaml.safe_load(text) or {}
    entry = (data.get("models") or {}).get(name)
    if entry is None:
        return None, (), False
    family = (data.get("families") or {}).get(entry.get("family"), {})
    classes = entry.get("no_split_module_classes", family.get("no_split_module_classes", ()))
    return entry.get("hub_id"), tuple(classes), bool(entry.get("trust_remote_code", False))


def family_no_split(model_type: str) -> tuple[str, ...]:
    """The registry's no-split block classes for a config ``model_type`` (unknown models from a path)."""
    try:
        import yaml

        data = yaml.safe_load(_configs_file("models.yaml").read_text())
    except (ImportError, FileNotFoundError, ModuleNotFoundError):
        return ()
    family = ((data or {}).get("families") or {}).get(model_type) or {}
    return tuple(family.get("no_split_module_classes", ()))


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


def resolve_source(name: str, spec: Any | None = None) -> ModelSource:
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
    revision = getattr(spec, "revision", None)
    config = _cached_hub_config(model_id, trust, revision)
    origin = "hub cache" + (f" (revision {revision})" if revision else "")
    if config is None:
        alias = name
        bundled = bundled_config_path(alias) or bundled_config_path(model_id.split("/")[-1].lower())
        if bundled is None:
            raise EvalsuiteError(
                f"{name}: no config found without downloading (not a local directory, not in the Hugging Face "
                f"cache, no bundled config in configs/model_configs/); pass a local checkpoint directory or "
                f"fetch its config.json first")
        config = _config_from_dict(json.loads(bundled.read_text()))
        origin = f"bundled config ({bundled.name})"
    classes = classes or family_no_split(config.model_type)
    return ModelSource(name, model_id, None, config, origin, classes, trust, revision)
