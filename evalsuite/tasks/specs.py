"""Benchmarks added as data: a dataset plus a small YAML spec, no Python.

A file named ``task_<anything>.yaml`` (or ``.yml``) in a ``--task-dir`` folder is a task plugin, found by the
same convention as ``task_*.py`` modules. It becomes a :class:`~evalsuite.tasks.dataset_tasks.DatasetTask`, the class
the built-in MBPP, MBPP+ and HumanEval+ tasks use, so its data loads through ``datasets`` like theirs::

    name: tinybench                     # required: the task's name
    description: Three string problems  # shown by `evalsuite tasks`
    citation: https://example.org/tinybench
    data: tinybench.jsonl               # json, jsonl or parquet file or folder, relative to this file ...
    # hub: {id: org/name, revision: <commit sha>, config: null, split: test}   # ... or a hub dataset, pinned
    prompt: "{prompt}"                  # required: str.format template over a row's fields
    stop_sequences: ["\\ndef", "\\nclass", "\\nif", "\\nprint"]   # default: HumanEval's
    test_field: test                    # required: the row field holding the tests
    test_style: asserts                 # check (defines check(candidate)) | asserts | script
    entry_point_field: entry_point      # the function under test; optional for asserts/script tests
    solution_field: solution            # a canonical solution: reference model, selfcheck, calibrated timeouts
    setup_fields: [imports]             # trusted code run before the tests
    id_field: task_id
    id_prefix: "tinybench/"

Unknown keys are an error (a typo must not silently change a protocol).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from evalsuite.errors import EvalsuiteError
from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.dataset_tasks import TEST_STYLES, DatasetSpec, DatasetTask
from evalsuite.tasks.datasets_loader import HubSource
from evalsuite.tasks.task import DEFAULT_STOP_SEQUENCES

SPEC_GLOBS = ("task_*.yaml", "task_*.yml")
REQUIRED = ("name", "prompt", "test_field")
OPTIONAL = ("description", "citation", "data", "hub", "split", "stop_sequences", "test_style", "entry_point_field",
            "solution_field", "setup_fields", "id_field", "id_prefix")
HUB_KEYS = ("id", "revision", "config", "split")


def _string(spec: dict[str, Any], key: str, where: str, default: str | None = None) -> str | None:
    value = spec.get(key, default)
    if value is not None and not isinstance(value, str):
        raise EvalsuiteError(f"{where}: {key!r} must be a string, got {type(value).__name__}")
    return value


def _text(spec: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    """A string the spec must give (a required key, already checked) or that has a default."""
    value = _string(spec, key, where, default)
    if value is None:
        raise EvalsuiteError(f"{where}: missing required key(s) {key}")
    return value


def _strings(spec: dict[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EvalsuiteError(f"{where}: {key!r} must be a list of strings")
    return tuple(value)


def _hub(value: Any, where: str) -> HubSource | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - set(HUB_KEYS):
        raise EvalsuiteError(f"{where}: 'hub' must be a mapping with keys {', '.join(HUB_KEYS)}")
    if not value.get("id") or not value.get("revision"):
        raise EvalsuiteError(f"{where}: 'hub' needs an 'id' and a pinned 'revision' (a commit sha of the dataset)")
    return HubSource(str(value["id"]), str(value["revision"]), config=value.get("config"),
                     split=str(value.get("split") or "test"))


def load_spec(path: Path) -> DatasetSpec:
    """Parse and check one YAML spec; every mistake is one line naming the file."""
    where = str(path)
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise EvalsuiteError(f"{where}: not a readable YAML spec: {str(exc).splitlines()[0]}") from None
    if not isinstance(spec, dict):
        raise EvalsuiteError(f"{where}: a task spec must be a YAML mapping")
    unknown = sorted(set(spec) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise EvalsuiteError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(REQUIRED + OPTIONAL)}")
    missing = [key for key in REQUIRED if not spec.get(key)]
    if missing:
        raise EvalsuiteError(f"{where}: missing required key(s) {', '.join(missing)}")
    hub = _hub(spec.get("hub"), where)
    data = _string(spec, "data", where)
    if hub is None and data is None:
        raise EvalsuiteError(f"{where}: say where the data is: 'data' (a file next to the spec) or 'hub'")
    style = _string(spec, "test_style", where, "check")
    if style not in TEST_STYLES:
        raise EvalsuiteError(f"{where}: 'test_style' must be one of {', '.join(TEST_STYLES)}, got {style!r}")
    return DatasetSpec(
        name=_text(spec, "name", where),
        description=_text(spec, "description", where, f"declarative task from {path.name}"),
        prompt_template=_text(spec, "prompt", where),
        test_field=_text(spec, "test_field", where),
        test_style=style,
        hub=hub,
        data_path=(path.parent / data) if data else None,
        split=_text(spec, "split", where, "test"),
        stop_sequences=_strings(spec, "stop_sequences", where) or DEFAULT_STOP_SEQUENCES,
        id_field=_text(spec, "id_field", where, "task_id"),
        id_prefix=_text(spec, "id_prefix", where, ""),
        entry_point_field=_string(spec, "entry_point_field", where),
        solution_field=_string(spec, "solution_field", where),
        setup_fields=_strings(spec, "setup_fields", where) or (),
        citation=_text(spec, "citation", where, ""),
    )


class SpecPlugin:
    """A plugin object for one spec file: registered with pluggy like a ``task_*.py`` module."""

    def __init__(self, path: Path):
        self.path = path

    @hookimpl
    def evalsuite_register_tasks(self) -> list[DatasetTask]:
        return [DatasetTask(load_spec(self.path))]


def spec_files(directory: Path) -> list[Path]:
    return sorted({p for pattern in SPEC_GLOBS for p in directory.glob(pattern)})


def spec_plugins(directories: Iterable[Path]) -> list[tuple[str, SpecPlugin]]:
    """(label, plugin) for every spec file in ``directories``, labelled like modules: ``spec:<path>``."""
    return [(f"spec:{path}", SpecPlugin(path)) for directory in directories for path in spec_files(directory)]
