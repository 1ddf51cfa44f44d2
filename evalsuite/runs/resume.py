"""Resuming a finished generation without loading the model.

A rerun whose completions are all saved has nothing to generate, so it must not spend minutes loading
weights. The run folder's key hashes what the *loaded* model says about itself (resolved revision, tokenizer
policy, chosen dtype...), which is only known after loading; so each run also records a **request key**,
computable before loading: the checkpoint's content fingerprint (local folders and GGUF files; the built-in
reference model), the model spec, the task's data and problems, sampling, prompt protocol, generation options,
the installed torch/transformers and the visible GPUs. A rerun with the same request key whose run folder holds
every completion reuses that run's recorded model description (:class:`RecordedModel`) and goes straight to
execution. Hub ids are not covered (their revision is only known by asking the hub or loading), nor are
servers: they load as before.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.generation.base import Generator
from evalsuite.generation.reference import canonical_solutions_sha256
from evalsuite.protocol.prompting import PromptDecision
from evalsuite.records import Completion, GenerationRequest, SamplingParams
from evalsuite.runs.identity import task_code_identity
from evalsuite.runs.record import RECORD_FILE, RunRecord
from evalsuite.runs.rundir import RunDir
from evalsuite.tasks.task import Task
from evalsuite.version import __version__


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def request_key(spec: Any, task: Any, problem_ids: Sequence[str], config: Any) -> str | None:
    """The pre-load key of one (model, task) run, or None where the checkpoint cannot be identified
    without loading it (hub ids, servers)."""
    if config.generation.backend == "openai":
        return None
    revision = checkpoint_revision(spec)
    if spec.source == "builtin":
        checkpoint = "reference"
    elif revision is not None:
        checkpoint = revision.removeprefix("local:")  # as the keys of earlier runs hold it
    else:
        return None
    blob = {
        "evalsuite": __version__, "checkpoint": checkpoint,
        "spec": {k: v for k, v in spec.to_dict().items() if k != "name"},  # ./ckpt and /abs/ckpt: one model
        "task": task.name,
        "dataset_sha256": task.dataset_sha256, "prompt_template": task.prompt_template,
        # the task's own stops are in the run's identity: without them here, a task file's edited stops found the
        # earlier run, and its stand-in model was asked to generate the new one (every later run failed)
        "task_stops": list(task.stop_sequences),
        "problem_ids": list(problem_ids), "sampling": config.sampling.to_dict(),
        "prompt": prompt_key(config.prompt, task.name),
        "generation": config.generation.to_dict(),
        "versions": {name: _version(name) for name in ("torch", "transformers", "accelerate", "gguf")},
        "gpus": {"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "present": os.path.exists("/dev/nvidiactl")},
    }
    by_id = {p.task_id: p for p in task.problems()} if isinstance(task, Task) else {}
    problems = [by_id[i] for i in problem_ids if i in by_id]
    if spec.source == "builtin":  # the reference model: its answers are the canonical solutions
        blob["answers"] = canonical_solutions_sha256([p.canonical_solution for p in problems])
    code = task_code_identity(task, problems)
    if code is not None:  # a task plugin's own code: its edited prompts are another run (run_identity keys them too)
        blob["task_code"] = code
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()


def prompt_key(protocol: Any, task_name: str) -> dict[str, Any]:
    """The prompt protocol's part of the key; stripping both ends and a preset's stop sequences
    are only named where they apply, so the keys of other runs stay as they were."""
    if hasattr(protocol, "for_task"):
        protocol = protocol.for_task(task_name)
    key: dict[str, Any] = {"style": protocol.style, "strip_prompt": protocol.strip_prompt}
    if protocol.strip_prompt:
        key["strip"] = "both ends"
    stops = protocol.stops_for(task_name) if hasattr(protocol, "stops_for") else ()
    if stops:
        key["stops"] = list(stops)
    direct = protocol.direct_stops_for(task_name) if hasattr(protocol, "direct_stops_for") else None
    if direct is not None:
        key["direct_completion"] = list(direct)
    if stops or direct is not None or getattr(protocol, "instruct_stops", ()):
        # a preset's asking names the run folder since leaderboard schema 1.6 (Asking.protocol): its earlier runs
        # are found by their folder, not skipped to here (the skip then asked a stand-in model to fill a new one)
        key["protocol_in_identity"] = True
    return key


def checkpoint_revision(spec: Any) -> str | None:
    """A local checkpoint's content fingerprint as the loaded model's identity names it (``local:...``), taken now;
    None for other models (a hub commit is known once loaded)."""
    from evalsuite.models.fingerprint import local_revision

    if spec.source == "local" and Path(spec.location).exists():
        return local_revision(spec.location)
    return None


def finished_record(output_dir: Path, display: str, task_name: str, key: str, n: int,
                    valid_ids: set[str], revision: str | None = None) -> RunRecord | None:
    """The record of a run with this request key whose folder holds all ``n`` completions of every problem, made
    with the checkpoint files found now (``revision``): a run whose files were replaced between its key and its
    load holds the new files' completions under the old files' key."""
    for record_path in sorted(Path(output_dir).glob(f"{RunDir.name_prefix(display, task_name)}*/{RECORD_FILE}")):
        try:
            record = RunRecord.read(record_path)
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        if record.request_key != key or record.opened_fence is None:  # older records did not say how they asked
            continue
        if revision is not None and (record.identity.get("checkpoint") or {}).get("revision") != revision:
            continue
        try:
            done = RunDir(record_path.parent).existing_completions(valid_ids, n)
        except EvalsuiteError:
            continue
        if len(done) == n * len(valid_ids):
            return record
    return None


class RecordedModel(Generator):
    """The model as a finished run recorded it: enough to rebuild the run's identity and record, never to
    generate (a run only gets here when nothing is left to generate)."""

    def __init__(self, record: RunRecord):
        self.record = record

    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams) -> Iterator[Completion]:
        raise EvalsuiteError("internal: a resumed run without its model was asked to generate")

    def describe(self) -> dict[str, Any]:
        return dict(self.record.model.details)

    def weights_identity(self) -> str | None:
        return self.record.weights

    def identity(self) -> dict[str, Any]:
        return dict(self.record.identity.get("checkpoint") or {})

    def decide_prompt_style(self, requested: str) -> PromptDecision:
        prompt = self.record.prompt
        return PromptDecision(requested, prompt["style"], prompt["reason"], prompt.get("chat_template_sha256"))

    def opens_code_fence(self) -> bool:
        return bool(self.record.opened_fence)
