"""Named protocols (``--preset``), shipped as YAML in ``evalsuite/configs/presets/``, each naming its source.

A preset fills in the sampling settings and the prompt protocol (``prompt_style``, ``strip_prompt``);
flags given explicitly on the command line win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from evalsuite.errors import EvalsuiteError

SAMPLING_KEYS = {"n", "temperature", "top_p", "top_k", "max_new_tokens", "max_length", "k"}
# stop_sequences: {task: [stops]} added to a base-style task's own; instruct_stop_sequences: [stops] of instruct runs
PROMPT_KEYS = {"prompt_style", "strip_prompt", "stop_sequences", "instruct_stop_sequences",
               "direct_completion_stop_sequences"}
# evaluation: how the tasks that offer several ways are checked ("evalplus": EvalPlus's base and plus inputs)
PRESET_KEYS = SAMPLING_KEYS | PROMPT_KEYS | {"description", "source", "evaluation"}


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    values: dict[str, Any]  # sampling settings (and "k")
    prompt: dict[str, Any] = field(default_factory=dict)  # prompt_style / strip_prompt
    source: str = ""
    evaluation: str = ""  # "" (each task's own tests) or "evalplus" (evalsuite.tasks.evalplus_tasks)


def _preset_files() -> dict[str, Any]:
    folder = resources.files("evalsuite.configs.presets")
    return {entry.name[: -len(".yaml")]: entry for entry in folder.iterdir() if entry.name.endswith(".yaml")}


def list_presets() -> list[Preset]:
    return [load_preset(name) for name in sorted(_preset_files())]


def load_preset(name: str) -> Preset:
    files = _preset_files()
    if name not in files:
        raise EvalsuiteError(f"unknown preset {name!r}; known presets: {', '.join(sorted(files))}")
    try:
        data = yaml.safe_load(files[name].read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise EvalsuiteError(f"preset {name!r} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise EvalsuiteError(f"preset {name!r} must be a mapping")
    unknown = set(data) - PRESET_KEYS
    if unknown:
        raise EvalsuiteError(f"preset {name!r} has unknown keys: {', '.join(sorted(unknown))}")
    description = str(data.pop("description", ""))
    source = str(data.pop("source", ""))
    evaluation = str(data.pop("evaluation", "") or "")
    prompt = {key: data.pop(key) for key in PROMPT_KEYS if key in data}
    return Preset(name=name, description=description, values=data, prompt=prompt, source=source,
                  evaluation=evaluation)
