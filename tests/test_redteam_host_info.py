"""Red-team suite, host information (class 5): nothing a sample can read names the checkout, the host's
name or its counters.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from redteam_state_kit import LIBC, MEMORY_MB, NEEDS_ISOLATION, SEP, Job, fn
from sandbox import Executor

pytestmark = NEEDS_ISOLATION

REPO = str(Path(__file__).resolve().parent.parent)


# -- class 5: host information: each attack answers right only if it found something of the host -------------
NEEDLES = f"""
    import os, sys, gc
    NEEDLES = [n[::-1] for n in ({REPO[::-1]!r}, "/krow/", "ipa_ssecorp")]  # reversed: not in this source
    HOSTNAME = {socket.gethostname()[::-1]!r}[::-1]
    def _found(texts):
        return any(n in t for t in texts for n in NEEDLES)
""" + SEP
HOST_ATTACKS = {
    "proc_paths": NEEDLES + """
        texts = []
        for path in ("/proc/self/mountinfo", "/proc/1/mountinfo", "/proc/mounts", "/proc/self/maps",
                     "/proc/self/cgroup", "/proc/self/cpuset", "/proc/self/environ", "/proc/self/cmdline",
                     "/proc/self/net/unix"):
            try:
                texts.append(open(path, "rb").read().decode("latin-1"))
            except OSError:
                pass
        for link in ("/proc/self/cwd", "/proc/self/exe", "/proc/self/root"):
            try:
                texts.append(os.readlink(link))
            except OSError:
                pass
        return x if _found(texts) else -x
        """,
    "interpreter_state": NEEDLES + """
        texts = [os.getcwd(), repr(sys.argv), repr(getattr(sys, "orig_argv", "")), repr(sys.path), repr(dict(os.environ)),
                 repr(sys.flags)]
        texts += [getattr(m, "__file__", "") or "" for m in list(sys.modules.values())]
        texts += [getattr(getattr(m, "__spec__", None), "origin", "") or "" for m in list(sys.modules.values())]
        return x if _found(texts) else -x
        """,
    "memory_strings": NEEDLES + """
        texts = []
        for o in gc.get_objects():
            if o is NEEDLES or o is texts:
                continue
            if isinstance(o, dict):
                texts += [v for v in list(o.values()) + list(o.keys()) if isinstance(v, str)]
            elif isinstance(o, (list, tuple)):
                texts += [v for v in o if isinstance(v, str)]
            elif hasattr(o, "co_consts"):
                texts += [v for v in o.co_consts if isinstance(v, str)]
        return x if _found(texts) else -x
        """,
    "hostname": NEEDLES + """
        import socket
        return x if HOSTNAME in (os.uname().nodename, socket.gethostname()) else -x
        """,
    "host_counters": NEEDLES + LIBC + """
        seen = [p for p in ("/proc/stat", "/proc/loadavg", "/proc/meminfo", "/proc/uptime", "/proc/sys", "/proc/self",
                            "/sys", "/sys/fs/cgroup") if os.path.exists(p)]
        info = ctypes.create_string_buffer(128)
        return x if seen or libc.sysinfo(info) == 0 else -x
        """,
    "host_files": NEEDLES + """
        texts = []
        for path in ("/etc/hostname", "/etc/hosts", "/etc/passwd", "/etc/os-release", "/etc/resolv.conf", "/run",
                     "/home", "/work", "/srv", "/var", "/sys"):
            try:
                texts.append(open(path).read() if os.path.isfile(path) else repr(os.listdir(path)))
            except OSError:
                pass
        for folder, needed in (("/root", [".pyenv"]), ("/etc", ["ld.so.cache"])):  # the interpreter's own paths
            try:
                texts += [name for name in os.listdir(folder) if name not in needed]
            except OSError:
                pass
        return x if texts else -x
        """,
}


@pytest.mark.parametrize("name", sorted(HOST_ATTACKS))
def test_no_host_information_reaches_a_sample(name):
    job = Job(0, f"host/{name}", fn(HOST_ATTACKS[name]), "def check(candidate):\n    assert candidate(1) == 1\n",
              "check(f)")
    with Executor(workers=1, timeout_s=5.0, memory_mb=MEMORY_MB) as executor:
        outcome = next(iter(executor.run([job])))
    assert not outcome.passed, f"{name} found host information"
    assert outcome.reason == "AssertionError", (outcome.reason, outcome.sample_error)  # it ran to the end

