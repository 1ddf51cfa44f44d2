"""JSON Lines I/O with clear errors and crash-safe writes.

* :func:`read_jsonl` names the file and line of any malformed record.
* :class:`JsonlAppender` appends and flushes each record as it is made, so a crashed or killed process loses at
  most the record being written (:func:`read_jsonl` with ``tolerate_torn_tail`` ignores such a torn last line),
  and a machine that loses power at most its last second of records.
* :func:`atomic_write_text` writes through a temporary file and ``os.replace``: readers see the old
  file or the new one, never half of one.

Every JSON record is serialized by :func:`evalsuite.untrusted.dumps`: valid UTF-8 whatever a sample or a samples
file put in a string, and no raw control or bidi character in the file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError, one_line
from evalsuite.untrusted import dumps


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open_bytes(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_jsonl(path: str | Path, tolerate_torn_tail: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for every non-blank line; each record must be a JSON object."""
    path = Path(path)
    if not path.exists():
        raise EvalsuiteError(f"{path}: no such file")
    if not path.is_file():  # a folder, a FIFO (reading one waits for a writer forever), a device
        raise EvalsuiteError(f"{path}: not a regular file")
    try:
        with _open_bytes(path) as handle:
            raw_lines = handle.read().split(b"\n")
    except (OSError, EOFError, zlib.error) as exc:  # zlib: a .gz whose data is not deflate
        raise EvalsuiteError(f"{path}: cannot read: {exc}") from exc
    last = len(raw_lines)
    while last > 0 and not raw_lines[last - 1].strip():
        last -= 1
    for number, raw in enumerate(raw_lines[:last], start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EvalsuiteError(f"{path}:{number}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            if tolerate_torn_tail and number == last:
                return  # a write interrupted by a crash; the caller regenerates it
            raise EvalsuiteError(f"{path}:{number}: malformed JSON: {exc.msg} (column {exc.colno})") from exc
        except (ValueError, RecursionError) as exc:  # an integer of over 4,300 digits; nesting past the stack
            raise EvalsuiteError(f"{path}:{number}: JSON this reader refuses: {one_line(exc, 120)}") from None
        if not isinstance(record, dict):
            raise EvalsuiteError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return not line.strip()  # blank: nothing to cut either


class JsonlAppender:
    """Appends one JSON object per line: flushed to the operating system per record, fsynced to the disk at
    most every ``sync_every_s`` seconds and on close. An fsync per record cost 0.5 ms here, on the thread that
    drives the engine, and a sampled run writes thousands of records."""

    def __init__(self, path: str | Path, sync_every_s: float = 1.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sync_every_s = sync_every_s
        self._repair_torn_tail()
        self._handle = open(self.path, "a", encoding="utf-8")
        self._synced_at = time.monotonic()
        self._unsynced = False

    def _repair_torn_tail(self) -> None:
        """Drop a half-written last line left by a crash, so new records start on a fresh line. A whole record
        without its newline (an editor that drops the file's last newline) is kept, as :func:`read_jsonl` keeps it:
        cut here, the row that reader had counted as done was lost and the run stopped short of it."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as handle:
            data = handle.read()
            if data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1
            if _is_json_object(data[cut:]):
                handle.write(b"\n")
            else:
                handle.truncate(cut)

    def write(self, record: dict[str, Any]) -> None:
        self._handle.write(dumps(record) + "\n")
        self._handle.flush()
        self._unsynced = True
        if time.monotonic() - self._synced_at >= self._sync_every_s:
            self._sync()

    def _sync(self) -> None:
        os.fsync(self._handle.fileno())
        self._synced_at, self._unsynced = time.monotonic(), False

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.flush()
            if self._unsynced:
                self._sync()
            self._handle.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def safe_file_name(text: str) -> str:
    """``text`` with every character but letters, digits, ``-``, ``_`` and ``.`` replaced by ``_`` (one for one)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are for CI viewers and colleagues too
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | Path, data: Any) -> None:
    atomic_write_text(path, dumps(data, indent=2, sort_keys=False) + "\n")


_CACHE_WARNED: set[str] = set()  # cache folders already said to be unwritable in this process


def save_to_cache(path: str | Path, data: bytes | Any, what: str) -> bool:
    """Write one cache file (bytes as they are, anything else as JSON), whole or not at all. A cache that cannot
    be written (a read-only home in a container, a full disk) costs time, not the run: said once per folder, and
    the value is measured again next time. Returns whether it was saved."""
    try:
        if isinstance(data, bytes):
            atomic_write_bytes(path, data)
        else:
            atomic_write_json(path, data)
        return True
    except OSError as exc:
        folder = str(Path(path).parent)
        if folder not in _CACHE_WARNED:
            _CACHE_WARNED.add(folder)
            import sys

            print(f"warning: cannot save {what} in {folder} ({exc.strerror or exc}): measured again next run "
                  "(EVALSUITE_CACHE_DIR moves the cache)", file=sys.stderr)
        return False


def atomic_write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(dumps(r) + "\n" for r in records))
