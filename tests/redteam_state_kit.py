"""What the kernel-state red-team tests (tests/test_redteam_state*.py, *_learners, *_denial, *_host_info,
*_residual_channels) share: the sandbox's Job with the peers' guard undone, a candidate ``f(x)`` from attack code,
the snippets several of them use, and the jobs of a writer/reader pair.
"""

from __future__ import annotations

import random
import textwrap

import pytest

import redteam_kit as kit
from sandbox import Job as _Job
from sandbox import detect_isolation

NEEDS_ISOLATION = pytest.mark.skipif(detect_isolation() == "none", reason="needs namespace isolation (bubblewrap)")


def Job(job_id, key, source, *args, **kwargs):  # noqa: N802 - the sandbox's Job, with the peers' guard undone
    """Every attack undoes the peers' reliability_guard first (tests/redteam_kit.py): it tests the jail."""
    return _Job(job_id, key, kit.unguarded(source), *args, **kwargs)


TIMEOUT_S = 2.0
MEMORY_MB = 256
SEP = kit.SEP
LIBC = kit.LIBC

PROMPT = "def f(x):\n"


def fn(code: str) -> str:
    return PROMPT + textwrap.indent(kit.dedent(code), "    ")


# A stdlib file no sample imports: its pages are the page-cache carrier.
TARGET = """
    import os
    TARGET = os.path.join(os.path.dirname(os.__file__), "pydoc_data", "topics.py")
    PAGES = 32
""" + SEP

# The kernel's shared inode counter (pipes, sockets, /proc, memfds, pidfds...): the writer moves it to a value
# of its choice; the reader reads it off the one descriptor it holds (the call channel) or any new inode.
INODE_BURN = LIBC + """
    import os, socket, stat
    def _burn_one():
        for make in (lambda: os.pipe(), lambda: socket.socketpair(), lambda: (os.memfd_create("x"),),
                     lambda: (os.open("/proc/self/stat", os.O_RDONLY),)):
            try:
                made = make()
            except OSError:
                continue
            ino = os.fstat(made[0] if isinstance(made[0], int) else made[0].fileno()).st_ino
            for item in made:
                item.close() if hasattr(item, "close") else os.close(item)
            return ino
        return None
    def _channel_ino():
        for fd in range(3, 1024):
            try:
                info = os.fstat(fd)
            except OSError:
                continue
            if stat.S_ISSOCK(info.st_mode):
                return info.st_ino
        return None
""" + SEP


def bit_job(job_id: int, code: str, bit: int) -> Job:
    test = f"def check(candidate):\n    candidate({bit})\n"
    return Job(job_id, f"state/bit{bit}", code, test, "check(f)")


def observe_job(job_id: int, code: str) -> Job:
    return Job(job_id, "state/observe", code, "def check(candidate):\n    candidate(0)\n", "check(f)")


def balanced_bits(rng: random.Random, count: int) -> list[int]:
    """As many ones as zeros, in random order: a constant guess decodes exactly half."""
    bits = [k % 2 for k in range(count)]
    rng.shuffle(bits)
    return bits

