"""Sample uids that no other worker on the host uses, of this executor or of any other evalsuite process.

As real root, each worker's samples run under a uid of their own. The kernel keeps some limits and resources per
uid, host-wide: ``RLIMIT_NPROC`` counts every process of the uid, wherever it runs. Two workers sharing a uid
(worker 0 of two concurrent ``evaluate`` runs, say) would let a sample of one run hold the processes an honest
sample of the other needs. So each worker leases its uid: an exclusive ``flock`` on a file named after it, in a
folder every evalsuite process on the host uses, held for as long as the executor lives and released by the
kernel when the process ends, however it ends. The search starts at a random uid of the range, so that hosts
whose processes cannot see each other's lock folder (containers) rarely meet either.
"""

from __future__ import annotations

import fcntl
import os
import random
from dataclasses import dataclass

SAMPLE_UID_BASE = 0x70000000  # far above any uid a system hands out; the jail's probe (sandbox.jail) runs as it
SAMPLE_UID_COUNT = 1 << 20  # leased uids: BASE + 1 ... BASE + COUNT, so that none is the probe's
LOCK_FOLDERS = ("/run/lock", "/tmp")  # the first where the lock folder can be made and written (see lock_folder)
LOCK_FOLDER_NAME = "evalsuite-sample-uids"


class NoFreeUid(RuntimeError):
    """Every uid of the range is leased (more than a million workers at once on one host)."""


@dataclass
class UidLease:
    """One uid, this process's until :meth:`release` (or until the process ends)."""

    uid: int
    fd: int
    path: str

    def release(self) -> None:
        """Remove the lock file while still holding its lock (a process that opened it meanwhile finds, once it
        holds the lock, that the path no longer names its file, and moves on), then drop the lock."""
        if self.fd >= 0:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = -1


def lock_folder() -> str:
    """The first of :data:`LOCK_FOLDERS` where the lock folder exists or can be made (a read-only ``/run/lock`` in
    a container falls through to ``/tmp``)."""
    error: OSError | None = None
    for parent in LOCK_FOLDERS:
        folder = os.path.join(parent, LOCK_FOLDER_NAME)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError as exc:
            error = exc
            continue
        if os.access(folder, os.W_OK):
            return folder
    raise error or PermissionError(f"no writable folder for sample uid leases among {LOCK_FOLDERS}")


def lease_uids(count: int, rng: random.Random | None = None) -> list[UidLease]:
    """``count`` uids that no live lease on this host holds, each locked until released."""
    folder = lock_folder()
    start = (rng or random.SystemRandom()).randrange(SAMPLE_UID_COUNT)
    leases: list[UidLease] = []
    for step in range(SAMPLE_UID_COUNT):
        if len(leases) == count:
            return leases
        uid = SAMPLE_UID_BASE + 1 + (start + step) % SAMPLE_UID_COUNT
        path = os.path.join(folder, str(uid))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(path).st_ino != os.fstat(fd).st_ino:  # released and removed since we opened it
                raise FileNotFoundError(path)
        except OSError:
            os.close(fd)
            continue
        leases.append(UidLease(uid, fd, path))
    for lease in leases:
        lease.release()
    raise NoFreeUid(f"no free sample uid in {folder}")
