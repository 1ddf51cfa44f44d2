"""Loads a task's rows with Hugging Face ``datasets``, from the hub or from a local copy, through one function.

The field's benchmarks live on the Hugging Face hub; ``datasets.load_dataset`` is how every peer harness reads
them. :func:`load_task_dataset` reads a hub id at a pinned revision (cached by ``datasets`` in its usual cache),
or, offline, a local file (json, jsonl, parquet; ``.gz`` accepted) or folder (a snapshot of the hub repository)
in the same format as the hub copy. Both paths end in ``datasets.load_dataset`` and the same row checks.

Without network a hub load would retry for about 25 s before failing, so the hub is probed first (one TCP
connect, 2 s at most, :mod:`evalsuite.hub`); when it is unreachable the load runs in ``datasets``' offline mode,
which uses the cache
or fails at once, and the user gets one line saying where to get the data and how to pass it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError, one_line
from evalsuite.hub import hub_reachable
from evalsuite.jsonl import sha256_file
from evalsuite.signals import stops_held

# File suffixes ``datasets`` packaged builders read; the builder is chosen from the suffix (``.gz`` stripped).
BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet"}


@dataclass(frozen=True)
class HubSource:
    """Where the original authors publish a dataset on the hub, pinned to one revision."""

    hub_id: str  # e.g. "google-research-datasets/mbpp"
    revision: str  # a commit sha of the dataset repository: the data never changes under a run
    config: str | None = None  # the dataset's config (subset), e.g. "full" or "sanitized"
    split: str = "test"

    def describe(self) -> str:
        config = f", config {self.config}" if self.config else ""
        return f"{self.hub_id} (revision {self.revision[:12]}{config}, split {self.split})"


@dataclass
class LoadedData:
    """The rows of one split plus what the run record needs to identify them."""

    rows: list[dict[str, Any]]
    sha256: str  # of the rows' content (see rows_sha256), identical for a hub copy and a local copy
    provenance: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # one line for `evalsuite tasks` and the record


def rows_sha256(rows: Sequence[dict[str, Any]]) -> str:
    """sha256 of the rows as canonical JSON (keys sorted, in row order).

    A content hash rather than a file hash: the hub's parquet and a jsonl export of the same rows get the same
    sha, while any changed problem, test or solution changes it."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def _datasets():
    try:
        with stops_held():  # a stop inside the import left it half done (see evalsuite.signals)
            import datasets
    except ImportError as exc:  # a core dependency; only a broken install gets here
        raise EvalsuiteError("the 'datasets' package is not installed (pip install datasets)") from exc
    return datasets


@contextlib.contextmanager
def offline_mode() -> Iterator[None]:
    """``datasets``' offline mode for one call: cache only, no network requests and no retries.

    ``HF_HUB_OFFLINE`` is read when the libraries are imported, and they may be imported already (transformers
    imports huggingface_hub), so the two module-level switches are set directly and restored afterwards."""
    datasets = _datasets()
    from huggingface_hub import constants

    saved = (datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE)
    datasets.config.HF_HUB_OFFLINE = True
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved


@contextlib.contextmanager
def quiet_progress() -> Iterator[None]:
    """No "Generating test split" bars and no log lines from datasets while evalsuite loads a task: its own output
    stays clean, and a file datasets cannot read is one line of evalsuite's (:func:`load_task_dataset`), not a
    logged error and then that line."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from datasets.utils import logging as datasets_logging

    was_disabled = are_progress_bars_disabled()
    verbosity = datasets_logging.get_verbosity()
    disable_progress_bars()
    datasets_logging.set_verbosity(datasets_logging.CRITICAL)
    try:
        yield
    finally:
        datasets_logging.set_verbosity(verbosity)
        if not was_disabled:
            enable_progress_bars()


def _why(exc: BaseException) -> str:
    """datasets' error and, where it wraps another (its DatasetGenerationError says only "An error occurred while
    generating the dataset"), the innermost one, which says what is wrong with the file."""
    inner, seen = exc, {id(exc)}
    while (following := inner.__cause__ or inner.__context__) is not None and id(following) not in seen:
        inner = following
        seen.add(id(inner))
    return one_line(exc) if inner is exc else f"{one_line(exc)} ({one_line(inner)})"


def is_offline() -> bool:
    return bool(_datasets().config.HF_HUB_OFFLINE) or not hub_reachable()


def _local_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    missing = sorted(p for p in path.rglob("*") if p.is_symlink() and not p.exists())
    if missing:  # an interrupted `hf download` leaves links to blobs never fetched: a shard silently dropped
        raise EvalsuiteError(f"{path}: {missing[0]} links to a file that is not there (an interrupted download?); "
                             "fetch the snapshot again")
    return sorted(p for p in path.rglob("*") if p.is_file() and _builder_for(p) is not None)


def _builder_for(path: Path) -> str | None:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return BUILDERS.get(suffixes[-1]) if suffixes else None


def _pick_split(loaded: Any, split: str, where: str) -> Any:
    """The requested split of a DatasetDict; a folder or file holding a single split is that split."""
    if split in loaded:
        return loaded[split]
    if len(loaded) == 1:
        return next(iter(loaded.values()))
    raise EvalsuiteError(f"{where}: no split {split!r}; it has {', '.join(sorted(loaded))}")


def _load_local(path: Path, source: HubSource | None, split: str, cache_dir: str, shown: Path) -> Any:
    """A local file through ``datasets``' json/parquet builder, or a folder (a hub snapshot) as a dataset repo
    (``path``: its frozen copy; ``shown``: the user's path, in messages)."""
    datasets = _datasets()
    if not path.exists():
        raise EvalsuiteError(f"{path}: no such file or folder")
    if path.is_file():
        builder = _builder_for(path)
        if builder is None:
            raise EvalsuiteError(f"{path}: not a json, jsonl or parquet file (optionally .gz)")
        loaded = datasets.load_dataset(builder, data_files={split: str(path)}, cache_dir=cache_dir)
    else:
        if not _local_files(path):
            raise EvalsuiteError(f"{path}: no json, jsonl or parquet files in this folder")
        config = source.config if source else None
        try:  # a hub snapshot: its README names the configs (mbpp: full, sanitized)
            loaded = datasets.load_dataset(str(path), name=config, cache_dir=cache_dir)
        except ValueError:  # a plain folder of data files has no configs
            if config is None:
                raise
            loaded = datasets.load_dataset(str(path), cache_dir=cache_dir)
    return _pick_split(loaded, split, str(shown))


def _frozen_copy(path: Path) -> tuple[Path, list[dict[str, str]]]:
    """The local data (a file, or every file of a folder but hidden ones: a hub snapshot's README, its data in any
    format) copied, as the bytes hashed, into a folder of ``datasets``' cache named by them, and the original data
    files with their sha256. ``datasets`` then reads a copy that never changes, whose Arrow cache is its own. Why:
    ``datasets`` keys its cache of a local file by path and modification time only, so a file replaced by another
    with the same modification time was served from the old one's cache (red-team round 20), and a file replaced
    while it was read was cached under the name of the one hashed, for every later run (round 22). Each run copies
    (streamed, synced) into a folder of its own, renamed into place; a copy already there is used only where its
    files still hash as named (a damaged copy is replaced); a failed copy leaves nothing (round 23)."""
    base = path if path.is_dir() else path.parent
    members = [path] if path.is_file() else sorted(
        member for member in path.rglob("*")
        if member.is_file() and not any(part.startswith(".") for part in member.relative_to(path).parts))
    root = Path(_datasets().config.HF_DATASETS_CACHE) / "evalsuite-local"
    building = root / f".building.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        digests = [(member.relative_to(base).as_posix(),
                    _copy_hashing(member, building / member.relative_to(base).as_posix())) for member in members]
        folder = root / hashlib.sha256(json.dumps(digests).encode()).hexdigest()[:24]
        if folder.is_dir() and all(_sha256_of(folder / name) == digest for name, digest in digests):
            shutil.rmtree(building, ignore_errors=True)
        else:
            if folder.is_dir():  # damaged (a cleaner, a crash): moved aside, then replaced
                os.rename(folder, root / f".damaged.{uuid.uuid4().hex[:8]}")
            try:
                os.rename(building, folder)
            except OSError:  # another run put its copy there meanwhile
                shutil.rmtree(building, ignore_errors=True)
                if not folder.is_dir():
                    raise
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    data = {member.relative_to(base).as_posix() for member in _local_files(path)}
    files = [{"path": str(base / name), "sha256": digest} for name, digest in digests if name in data]
    return (folder if path.is_dir() else folder / path.name), files


def _copy_hashing(source: Path, target: Path) -> str:
    """Copy ``source`` to ``target`` in chunks, synced, and return the sha256 of the bytes copied."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with open(source, "rb") as reading, open(target, "wb") as writing:
        while chunk := reading.read(1 << 20):
            digest.update(chunk)
            writing.write(chunk)
        writing.flush()
        os.fsync(writing.fileno())
    return digest.hexdigest()


def _sha256_of(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except OSError:
        return None


def missing_data_message(task_name: str, source: HubSource | None, why: str) -> str:
    """The one line a user gets when a task's data cannot be found."""
    if source is None:
        return f"task {task_name!r} needs its data: pass --task-data {task_name}=PATH (json, jsonl or parquet)"
    config = f" (config {source.config})" if source.config else ""
    return (f"task {task_name!r}: {why}; on a connected machine run `hf download {source.hub_id} --repo-type dataset "
            f"--revision {source.revision} --local-dir {source.hub_id.split('/')[-1]}` and pass "
            f"--task-data {task_name}=FOLDER{config}, or a json/jsonl/parquet file of its {source.split!r} split "
            f"(https://huggingface.co/datasets/{source.hub_id})")


def load_task_dataset(task_name: str, source: HubSource | None, data_path: str | Path | None = None,
                      split: str | None = None) -> LoadedData:
    """Load one split: from ``data_path`` when given (offline copy), else from the hub at the pinned revision.

    Either way the rows come from ``datasets.load_dataset`` and are returned as plain Python dicts, with the
    content sha256 and a provenance record (hub id and revision, or local files and their sha256)."""
    datasets = _datasets()
    split = split or (source.split if source else "test")
    if data_path is not None:
        path = Path(data_path)
        found = _local_files(path) if path.exists() else []
        if found and all(p.stat().st_size == 0 for p in found):  # datasets says only "StopIteration"
            raise EvalsuiteError(f"{path}: the data file is empty (no rows)")
        copy, files = path, list[dict[str, str]]()
        if found:
            try:
                copy, files = _frozen_copy(path)
            except OSError as exc:  # a full disk, a quota: the cache named, not the data
                cache = Path(datasets.config.HF_DATASETS_CACHE) / "evalsuite-local"
                raise EvalsuiteError(f"cannot copy {path} into {cache}: {exc.strerror or exc}") from None
        frozen = copy if copy.is_dir() else copy.parent
        try:
            with quiet_progress():
                data = _load_local(copy, source, split, str(frozen) + ".arrow", path)
        except EvalsuiteError:
            raise
        except Exception as exc:  # datasets' own errors (bad JSON, mixed types): name the file, one line
            why = _why(exc).replace(str(frozen), str(path if path.is_dir() else path.parent))  # the user's path
            raise EvalsuiteError(f"{path}: cannot load with datasets: {why}") from None
        provenance = {"loader": "datasets", "datasets_version": datasets.__version__, "local": str(path),
                      "files": files, "split": split}
        if source is not None:
            provenance["format_of"] = source.hub_id
        origin = f"local copy {path}" + (f" (format of {source.hub_id})" if source is not None else "")
    elif source is None:
        raise EvalsuiteError(missing_data_message(task_name, None, "no data"))
    else:
        offline = is_offline()
        try:
            with offline_mode() if offline else contextlib.nullcontext(), quiet_progress():
                data = datasets.load_dataset(source.hub_id, name=source.config, revision=source.revision,
                                             split=source.split)
        except (ConnectionError, FileNotFoundError, OSError) as exc:
            why = ("the Hugging Face hub is unreachable and the data is not in the datasets cache" if offline
                   else f"cannot load it from the hub ({type(exc).__name__})")
            raise EvalsuiteError(missing_data_message(task_name, source, why)) from None
        except Exception as exc:  # e.g. a config or split the revision does not have: one line, not a traceback
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise EvalsuiteError(f"task {task_name!r}: {source.describe()}: {type(exc).__name__}: {message}") from None
        provenance = {"loader": "datasets", "datasets_version": datasets.__version__, "hub_id": source.hub_id,
                      "revision": source.revision, "config": source.config, "split": source.split,
                      "offline_cache": offline}
        origin = f"hf:{source.hub_id}@{source.revision[:12]}" + (f"/{source.config}" if source.config else "")
    rows = [dict(row) for row in data]
    if not rows:
        raise EvalsuiteError(f"task {task_name!r}: the {split!r} split of {origin} is empty")
    sha = rows_sha256(rows)
    provenance["rows"] = len(rows)
    provenance["rows_sha256"] = sha
    return LoadedData(rows=rows, sha256=sha, provenance=provenance, source=origin)
