"""The run record (``record.json``): what one (model, task) run was, how it went, and what it scored.

Why typed: the record is written by the pipeline, read back to resume a run without loading its model
(:mod:`evalsuite.runs.resume`), and read by the views (the run page, the terminal table, the leaderboard
entry). As a dict read by string keys in each of those, a renamed key broke one reader silently; here each
field is named once. :meth:`RunRecord.to_json` writes the ``evalsuite.run-record/1`` layout key for key, in
its order; :meth:`RunRecord.from_json` also reads records written before a field existed (older runs resume).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.records import SampleResult, SamplingParams
from evalsuite.reporting.labels import other_data_badge, partial_badge
from evalsuite.reporting.model import ProblemSubset

RUN_RECORD_SCHEMA = "evalsuite.run-record/1"
RECORD_FILE = "record.json"


@dataclass
class ModelDescription:
    """The model as the user named it, as the views name it, its resolved id, and what the backend says
    about itself (:meth:`Generator.describe`: backend, engine, placement, revision...)."""

    requested: str
    display_name: str | None
    id: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"requested": self.requested, "display_name": self.display_name, "id": self.id, **self.details}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelDescription:
        details = {k: v for k, v in data.items() if k not in ("requested", "display_name", "id")}
        return cls(str(data.get("requested", "")), data.get("display_name"), str(data.get("id", "")), details)

    @property
    def shown_name(self) -> str:
        return str(self.display_name or self.requested)


@dataclass
class RecordedTask:
    """The task's data as this run used it; ``problem_set`` is None for the whole task, else which part ran."""

    name: str
    dataset_sha256: str
    source: Any
    n_problems: int
    prompt_template: str
    stop_sequences: list[str]
    provenance: Any
    problem_set: ProblemSubset | None = None
    other_data: bool = False  # the data is not the task's own (Task.runs_on_other_data)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dataset_sha256": self.dataset_sha256, "source": self.source,
                "n_problems": self.n_problems, "prompt_template": self.prompt_template,
                "stop_sequences": list(self.stop_sequences), "provenance": self.provenance,
                "problem_set": self.problem_set and self.problem_set.to_json(),
                **({"other_data": True} if self.other_data else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedTask:
        return cls(str(data.get("name", "")), str(data.get("dataset_sha256", "")), data.get("source"),
                   int(data.get("n_problems", 0)), str(data.get("prompt_template", "")),
                   list(data.get("stop_sequences") or []), data.get("provenance"),
                   ProblemSubset.from_json(data.get("problem_set")),
                   bool(data.get("other_data", False)))


@dataclass
class RunRecord:
    """One run's record. The fields up to ``invocations`` are written when the run starts (status
    "running"); ``finished_at`` and those after it once it is scored (status "complete")."""

    run_id: str
    request_key: str | None  # evalsuite.runs.resume: finds this run again before any model loads
    opened_fence: bool | None  # "asking": did the instruct prompt open a code block (None: an older record)
    model_loaded: bool
    invocation_id: str
    status: str  # running, complete, interrupted, failed
    started_at: str
    argv: list[str]
    identity: dict[str, Any]  # hashed into the run folder's name: kept exactly as built
    model: ModelDescription
    task: RecordedTask
    prompt: dict[str, Any]  # evalsuite.runs.identity.prompt_settings
    sampling: SamplingParams
    k: list[int]
    limit: int | None
    generation_options: dict[str, Any]
    distributed: dict[str, Any]
    environment: dict[str, Any]  # versions, hardware, evalsuite
    invocations: list[dict[str, Any]] = field(default_factory=list)
    # set when the run is scored
    finished_at: str | None = None
    execution: dict[str, Any] | None = None
    timings_s: dict[str, Any] | None = None
    generation_stats: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None  # summary.json without per_problem
    per_problem: dict[str, Any] | None = None
    schema: str = RUN_RECORD_SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know, kept as read

    _FINISHED = ("finished_at", "execution", "timings_s", "generation_stats", "summary", "per_problem")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema": self.schema, "run_id": self.run_id, "request_key": self.request_key}
        if self.opened_fence is not None:
            data["asking"] = {"opened_fence": self.opened_fence}
        data.update({
            "model_loaded": self.model_loaded, "invocation_id": self.invocation_id, "status": self.status,
            "started_at": self.started_at, "argv": list(self.argv), "identity": self.identity,
            "model": self.model.to_json(), "task": self.task.to_json(), "prompt": self.prompt,
            "sampling": self.sampling.to_dict(), "k": list(self.k), "limit": self.limit,
            "generation_options": self.generation_options, "distributed": self.distributed,
            "environment": self.environment, "invocations": list(self.invocations),
        })
        for name in self._FINISHED:
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        data.update(self.extra)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        known = {"schema", "run_id", "request_key", "asking", "model_loaded", "invocation_id", "status",
                 "started_at", "argv", "identity", "model", "task", "prompt", "sampling", "k", "limit",
                 "generation_options", "distributed", "environment", "invocations", *cls._FINISHED}
        asking = data.get("asking")
        return cls(
            run_id=str(data.get("run_id", "")), request_key=data.get("request_key"),
            opened_fence=None if asking is None else bool(asking.get("opened_fence")),
            model_loaded=bool(data.get("model_loaded", True)), invocation_id=str(data.get("invocation_id") or ""),
            status=str(data.get("status", "")), started_at=str(data.get("started_at", "")),
            argv=list(data.get("argv") or []), identity=dict(data.get("identity") or {}),
            model=ModelDescription.from_json(data.get("model") or {}),
            task=RecordedTask.from_json(data.get("task") or {}), prompt=dict(data.get("prompt") or {}),
            sampling=SamplingParams.from_dict(data.get("sampling") or {}), k=list(data.get("k") or []),
            limit=data.get("limit"),
            generation_options=dict(data.get("generation_options") or {}),
            distributed=dict(data.get("distributed") or {}), environment=dict(data.get("environment") or {}),
            invocations=[dict(entry) for entry in data.get("invocations") or []],
            **{name: data.get(name) for name in cls._FINISHED},
            schema=str(data.get("schema", RUN_RECORD_SCHEMA)),
            extra={k: v for k, v in data.items() if k not in known})

    @classmethod
    def read(cls, path: str | Path) -> RunRecord:
        """Raises OSError or ValueError (json.JSONDecodeError) for a missing or unreadable file."""
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))

    @property
    def weights(self) -> str | None:
        """The precision the model ran in, where the backend has one (part of the identity)."""
        return self.identity.get("weights")

    def badges(self) -> tuple[str, ...]:
        """What every view says about a run besides the model's name: a partial problem set, how it was asked."""
        badges = []
        subset = self.task.problem_set
        if subset:
            badges.append(partial_badge(subset))
        if self.task.other_data:
            badges.append(other_data_badge(self.task.dataset_sha256))
        if self.prompt.get("style") == "instruct":
            badges.append("instruct")
        if self.prompt.get("strip_prompt"):
            badges.append("stripped prompt")
        if self.prompt.get("protocol"):  # a preset's own asking, as the leaderboard names it
            badges.append(str(self.prompt["protocol"]))
        if self.weights in ("int8", "nf4"):
            badges.append(self.weights)
        return tuple(badges)


def per_problem_results(results: Sequence[SampleResult]) -> dict[str, dict[str, Any]]:
    """Each problem's sample count, passes and verdicts, for the record."""
    table: dict[str, dict[str, Any]] = {}
    for result in results:
        entry = table.setdefault(result.task_id, {"n": 0, "c": 0, "results": []})
        entry["n"] += 1
        entry["c"] += int(result.passed)
        entry["results"].append(result.result)
    return table
