"""Where one (model, task, settings) run lives on disk, and how it resumes.

A run directory is named by a key hashed from everything that changes its completions, so rerunning
the same command finds the same directory and continues it:

    runs/<model>__<task>__<key>/
        record.json        the run record (status "running" until the run finishes)
        completions.jsonl  appended and flushed as each completion is made
        results.jsonl      the sandbox's verdicts (written atomically when execution ends)
        summary.json       pass@k with confidence intervals, per-problem counts
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.jsonl import read_jsonl
from evalsuite.runs.record import RECORD_FILE, RunRecord
from evalsuite.scoring.summary import SUMMARY_FILE
from evalsuite.untrusted import dumps


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[-80:].strip("_.") or "model"  # never a hidden folder


def exact_slug(text: str) -> str:
    """:func:`slug`, followed by a digest of ``text`` where the slug dropped or changed characters: "team/model"
    and "team_model" (or "naïve" and "na_ve") named one run folder, so the second name resumed the first's run
    and rewrote its record and page under its own name (the twenty-third session's red-team round)."""
    plain = slug(text)
    if plain == text:
        return plain
    return f"{plain}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


SEAL_FIELD = "seal"
# tempfile.mkstemp(prefix=".<file name>.") of an atomic write: the name, then 8 random characters
_LEFTOVER = re.compile(r"^\.(?!claim\.)[^/]+\.[a-z0-9_]{8}$")


def row_seal(run_id: str, row: Mapping[str, Any]) -> str:
    """The seal of one completion row in run ``run_id``: a digest of the row (all but its seal) and the run.

    Why: a resume trusts the rows on disk. A row edited by hand, or copied from another run (other settings,
    another model), would be scored as this model's output; its seal no longer matches, and it is refused. It
    guards against mistakes, not against someone who recomputes it."""
    body = json.dumps({k: v for k, v in row.items() if k != SEAL_FIELD}, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(f"{run_id}\n{body}".encode()).hexdigest()[:32]


def run_key(identity: dict[str, Any]) -> str:
    """A short stable hash of the settings that determine a run's completions."""
    blob = json.dumps(identity, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


@dataclass(frozen=True)
class RunDir:
    path: Path

    @classmethod
    def for_run(cls, root: Path, model_name: str, task_name: str, key: str) -> RunDir:
        return cls(root / f"{cls.name_prefix(model_name, task_name)}{key}")

    @staticmethod
    def name_prefix(model_name: str, task_name: str) -> str:
        """What every run folder of this model and task is named first, the request's key after it."""
        return f"{exact_slug(model_name)}__{exact_slug(task_name)}__"

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def record(self) -> Path:
        return self.path / RECORD_FILE

    @property
    def completions(self) -> Path:
        return self.path / "completions.jsonl"

    def completion_files(self) -> list[Path]:
        """``completions.jsonl`` plus the per-rank files of data-parallel runs (``completions.rank<R>.jsonl``)."""
        return sorted(self.path.glob("completions*.jsonl"))

    @property
    def results(self) -> Path:
        return self.path / "results.jsonl"

    @property
    def summary(self) -> Path:
        return self.path / SUMMARY_FILE

    def remove_leftover_temporaries(self) -> list[str]:
        """Delete the temporary files of atomic writes a killed process left (``.summary.json.k3j_x9a2``: see
        :func:`evalsuite.jsonl.atomic_write_bytes`); call while holding the run's claim, so no writer is live.
        Returns their names."""
        removed = []
        for path in self.path.glob(".*.*"):
            if _LEFTOVER.match(path.name) and path.is_file():
                path.unlink(missing_ok=True)
                removed.append(path.name)
        return removed

    def sealed(self, row: dict[str, Any]) -> dict[str, Any]:
        """``row`` with its seal (:func:`row_seal`), computed on the row as it will be read back from the file."""
        as_read = json.loads(dumps(row))
        return {**row, SEAL_FIELD: row_seal(self.run_id, as_read)}

    def existing_completions(self, valid_task_ids: set[str], n: int) -> dict[tuple[str, int], dict[str, Any]]:
        """Completions saved by an earlier, interrupted attempt, keyed by (task_id, completion_id).

        A torn last line (crash mid-write) is ignored and regenerated; anything else malformed is an error,
        since silently dropping or duplicating samples would change the score. So is a row whose seal does not
        match (edited by hand, or copied from another run), or that has none: a seal deleted with a hand edit
        hid the edit. (Rows of an evalsuite from before seals, 2026-11-28, are refused the same way: that run's
        folder is started over.)
        """
        done: dict[tuple[str, int], dict[str, Any]] = {}
        for path in self.completion_files():
            for line, row in read_jsonl(path, tolerate_torn_tail=True):
                task_id, completion_id = row.get("task_id"), row.get("completion_id")
                if (not isinstance(task_id, str) or task_id not in valid_task_ids
                        or not isinstance(completion_id, int) or not 0 <= completion_id < n):
                    raise EvalsuiteError(f"{path}:{line}: completion {(task_id, completion_id)} does not belong to "
                                         f"this run; delete {self.path} to start over")
                key = (task_id, completion_id)
                seal = row.get(SEAL_FIELD)
                if seal != row_seal(self.run_id, row):
                    why = "its seal does not match" if seal is not None else "it has no seal"
                    raise EvalsuiteError(f"{path}:{line}: completion {key} is not what this run wrote (edited, or "
                                         f"copied from another run: {why}); delete that line to "
                                         f"generate it again, or delete {self.path} to start over")
                if key in done:
                    raise EvalsuiteError(f"{path}:{line}: duplicate completion {key}: two processes wrote this run at "
                                         f"once; delete {self.path} to start over")
                done[key] = row
        return done

    def check_identity(self, identity: dict[str, Any]) -> RunRecord | None:
        """Refuse to resume a directory whose recorded settings differ (a hash collision or a hand edit); returns
        the record an earlier invocation left (None for a new run)."""
        if not self.record.exists():
            return None
        try:
            data = json.loads(self.record.read_text(encoding="utf-8"))
            record = RunRecord.from_json(data)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise EvalsuiteError(f"{self.record}: unreadable run record ({exc}); delete it to resume from the "
                                 f"completions kept beside it, or delete {self.path} to start over") from None
        recorded = data.get("identity")
        if recorded is not None and recorded != identity:
            raise EvalsuiteError(f"{self.path} holds a run with other settings; delete it or choose another --output")
        return record
