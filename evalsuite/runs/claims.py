"""One process at a time per run: a claim taken before the model loads, held until the run is scored.

Two `evalsuite run` commands with the same model, task, problems and sampling into one ``--output`` (a command
started twice, two CI jobs, a torchrun job beside a single process) would both generate every sample into the
same run folder; the duplicate rows then fail every later read of it. The second process is refused in one line
instead, before it loads anything. A claim is an advisory ``flock`` on a file of evalsuite's cache folder
(``~/.cache/evalsuite/claims``; ``$EVALSUITE_CACHE_DIR`` or ``$XDG_CACHE_HOME`` move it), named after the output
folder's real path and the run (the output folder itself holds run folders only). Not the temporary folder: two
jobs of one user often have different ones (a per-job ``TMPDIR``, systemd's ``PrivateTmp``, SLURM's private
``/tmp``) and would not meet each other's claims. The kernel drops a claim when its process ends, however it ends,
so a crash leaves nothing to clean up (the empty file stays: removing it would let two processes lock two files of
one name). A torchrun rank claims its own shard (``.rank<R>``); a single process claims shard 0, so it and a job's
rank 0 collide.

The cache's claim is the early one (before any weights load) and sees the processes that share a cache folder.
Jobs that do not (another user, another ``EVALSUITE_CACHE_DIR``, nodes writing one shared ``--output``, as the
README's SLURM recipe does) meet at the run folder's own claim (:meth:`RunClaim.take_in`), a hidden file in the
run folder, taken before a row is written: both used to generate every sample into it and break it for good.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from evalsuite.errors import EvalsuiteError
from evalsuite.runs.rundir import exact_slug
from sandbox import cache_root


def claim_name(model: str, task: str, settings: dict[str, Any]) -> str:
    """The claim of a (model, task) run: the model's display name and task, and a hash of what else names its
    run folder and is known before loading (problems, sampling, prompt, dtype), so a sweep of settings into one
    output runs side by side."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return f"{exact_slug(model)}__{exact_slug(task)}__{digest}"


@dataclass
class RunClaim:
    """A held claim; :meth:`release` (or the process's end) gives it up."""

    handle: IO[str] | None

    @classmethod
    def take(cls, output_dir: Path, name: str, shard: int, what: str) -> RunClaim:
        """Claim shard ``shard`` of run ``name``, or raise one line naming the process that holds it.
        ``what``: the run as the user knows it (``model/task``)."""
        output = os.path.realpath(output_dir)
        folder = cache_root() / "claims" / hashlib.sha256(output.encode()).hexdigest()[:16]
        return cls._lock(folder, f"{name}.rank{shard}", f"{what}: another evalsuite process (pid {{holder}}) is "
                         f"running this same run into {output_dir}", private=True)

    @classmethod
    def take_in(cls, run_folder: Path, shard: int, what: str) -> RunClaim:
        """Claim shard ``shard`` of the run whose folder is ``run_folder`` (made if missing), in that folder: seen by
        every process that writes it, whatever its cache folder or host (where the filesystem has locks)."""
        return cls._lock(run_folder, f".claim.rank{shard}", f"{what}: another evalsuite process (pid {{holder}}, "
                         f"perhaps on another machine) is writing this run's folder {run_folder}")

    @classmethod
    def _lock(cls, folder: Path, name: str, held: str, private: bool = False) -> RunClaim:
        """An exclusive flock on ``folder/name``; ``held``, with ``{holder}`` the holder's pid, says who has it.
        ``private``: the folder is the user's own (the cache's claims), not a run folder others read (its pages)."""
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700 if private else 0o777)  # 0o777: less the umask
            handle = open(folder / name, "a+", encoding="utf-8")  # noqa: SIM115 - held open while the claim lives
        except OSError:  # nowhere to lock (a read-only home): the run goes on unguarded
            return cls(None)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise EvalsuiteError(held.format(holder=holder) + "; wait for it to end and run again to reuse its work, "
                                 "or choose another --output") from None
        except OSError:  # a filesystem without locks (some network mounts): the run goes on unguarded
            handle.close()
            return cls(None)
        try:  # who holds it, for the message of a run refused; a full disk leaves the lock held, unnamed
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
        except OSError:
            pass
        return cls(handle)

    def release(self) -> None:
        if self.handle is not None:
            try:
                self.handle.close()  # closing drops the lock
            except OSError:  # the holder's pid still buffered on a full disk: the lock is dropped all the same
                pass
            self.handle = None


__all__ = ["RunClaim", "claim_name"]
