"""Red-team suite, denial of other samples' verdicts (class 3): CPU attackers (undo the pinning, fork busy
processes, change priorities) and memory attackers (processes, tmpfs, kernel memory) run beside honest samples of a
CPU-bound problem on two workers: every honest sample keeps its verdict.
"""

from __future__ import annotations

import textwrap
import time

import pytest

import redteam_kit as kit
from redteam_state_kit import LIBC, MEMORY_MB, NEEDS_ISOLATION, Job
from sandbox import Executor

pytestmark = NEEDS_ISOLATION


# -- class 3: CPU and memory attackers beside honest samples ----------------------------------------------
HONEST_PROMPT = "def work(n):\n"
HONEST_TEST = "def check(candidate):\n    assert candidate(2_000_000) == sum(i * i % 7 for i in range(2_000_000))\n"
HONEST = HONEST_PROMPT + "    return sum(i * i % 7 for i in range(n))\n"
# fifteen busy children, each in a session (so a scheduler autogroup) of its own, and the parent busy too
SPIN_IN_OWN_SESSIONS = """for _ in range(15):
            if os.fork() == 0:
                os.setsid()  # a session, and so a scheduler autogroup, of its own: fairness is per group
                while True:
                    pass
        while True:
            pass
        """
CPU_ATTACKS = {
    "cpu_unpin_and_fork": """
        import os, time
        try:
            os.sched_setaffinity(0, range(os.cpu_count() or 64))
        except OSError:
            pass
        """ + SPIN_IN_OWN_SESSIONS,
    "cpu_priorities": LIBC + """
        import os
        for attempt in (lambda: os.setpriority(os.PRIO_PROCESS, 0, -20),
                        lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50)),
                        lambda: os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(50)),
                        lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), 19),
                        lambda: libc.syscall(314, 0, (ctypes.c_uint32 * 14)(56, 6, 0, 0, 0, 10**6, 10**6, 10**6), 0)):
            try:
                attempt()
            except OSError:
                pass
        """ + SPIN_IN_OWN_SESSIONS,
    "cpu_threads": """
        import threading, os
        try:
            os.sched_setaffinity(0, range(64))
        except OSError:
            pass
        def spin():
            while True:
                pass
        for _ in range(30):
            threading.Thread(target=spin, daemon=True).start()
        spin()
        """,
}
MEMORY_ATTACKS = {
    "memory_processes": """
        import os, time
        for _ in range(12):
            if os.fork() == 0:
                try:
                    held = bytearray(200 << 20)
                    for i in range(0, len(held), 4096):
                        held[i] = 1
                except MemoryError:
                    pass
                time.sleep(30)
        held = [bytearray(100 << 20) for _ in range(8)]
        time.sleep(30)
        """,
    "memory_tmpfs_and_kernel": """
        import os, time, select
        try:
            with open("/tmp/fill", "wb") as h:
                for _ in range(64):
                    h.write(b"x" * (1 << 20))
        except OSError:
            pass
        held = []
        for _ in range(200):  # kernel objects: epoll instances, negative dentries, pipes where allowed
            try:
                held.append(select.epoll())
            except OSError:
                break
        for i in range(100000):
            try:
                os.stat(f"/tmp/missing-{i}")
            except OSError:
                pass
        for _ in range(100):
            try:
                r, w = os.pipe()
                held += [r, w]
            except OSError:
                break
        time.sleep(30)
        """,
}


DENIAL_ROUNDS = 2


@pytest.fixture(scope="module")
def denial():
    jobs, names = [], {}
    attacks = {**CPU_ATTACKS, **MEMORY_ATTACKS}
    # Attackers run for 4 s; an honest sample (~0.25 s of CPU) has 1.5 s: sharing its CPU with 15 spinners for
    # its whole run (what an attacker that undid its pinning did to the other worker) times it out.
    for round_ in range(DENIAL_ROUNDS):
        for name, code in attacks.items():
            names[len(jobs)] = name
            jobs.append(Job(len(jobs), f"attack/{name}", HONEST_PROMPT + textwrap.indent(kit.dedent(code), "    "),
                            HONEST_TEST, "check(work)", timeout_s=4.0))
            # Each job a problem of its own: the pool gives a problem's jobs to one worker at a time, in one go
            # (sandbox.schedule); here they keep their order, so honest samples run beside every attacker.
            for _ in range(3):
                names[len(jobs)] = "honest"
                jobs.append(Job(len(jobs), f"honest/{len(jobs)}", HONEST, HONEST_TEST, "check(work)", timeout_s=1.5))
            for key, (prelude, test, check, correct) in kit.PROBLEMS.items():  # the canonical solutions too
                names[len(jobs)] = "canonical"
                jobs.append(Job(len(jobs), f"redteam/{key}/{len(jobs)}", correct, test, check, prelude=prelude,
                                timeout_s=1.5))
    started = time.monotonic()
    with Executor(workers=2, timeout_s=3.0, memory_mb=MEMORY_MB, nproc=32) as executor:
        outcomes = {o.job_id: o for o in executor.run(jobs)}
        restarts, limits = executor.restarts, executor.limit_mode
    return {"outcomes": [(names[i], o) for i, o in sorted(outcomes.items())], "restarts": restarts,
            "limits": limits, "elapsed": time.monotonic() - started}


def test_honest_samples_keep_their_verdicts_beside_cpu_and_memory_attackers(denial):
    canonical = [o for name, o in denial["outcomes"] if name == "canonical"]
    assert len(canonical) == len(kit.PROBLEMS) * DENIAL_ROUNDS * (len(CPU_ATTACKS) + len(MEMORY_ATTACKS))
    assert all(o.passed for o in canonical), [(o.status, o.reason) for o in canonical if not o.passed]
    honest = [o for name, o in denial["outcomes"] if name == "honest"]
    attacks = [(name, o) for name, o in denial["outcomes"] if name not in ("honest", "canonical")]
    assert len(honest) == 3 * DENIAL_ROUNDS * (len(CPU_ATTACKS) + len(MEMORY_ATTACKS))
    bad = [(o.status, o.reason, round(o.duration_s, 2)) for o in honest if not o.passed]
    assert not bad, f"honest samples lost their verdict: {bad}"
    assert all(not o.passed for _, o in attacks)
    durations = [o.duration_s for o in honest]
    print(f"honest beside attackers: {len(honest)} samples, {min(durations):.2f}-{max(durations):.2f} s; attackers: "
          + ", ".join(f"{name} {o.status} {o.reason}" for name, o in attacks[:len(CPU_ATTACKS) + len(MEMORY_ATTACKS)]))
    assert max(durations) < 1.5, durations



# -- the checker's own memory: what one sample's answers leave behind -----------------------------------------
BIG_TEST = "def check(candidate):\n    assert candidate(400000) == list(range(400000))\n"
BIG_RIGHT = "def big(n):\n    return list(range(n))\n"
# the primer's 400k empty lists make the collector count long-lived objects, which puts off its next full collection
BIG_PRIMER = "def big(n):\n    return [[] for _ in range(400_000)]\n"
BIG_FILLER = "def big(n):\n    return [chr(65 + k % 26) + chr(65 + (k // 26) % 26) for k in range(1_100_000)]\n"


def test_answers_a_test_kept_do_not_fill_the_checker_and_fail_a_later_right_sample(monkeypatch):
    """Each sample's last answer stayed in the checker after its test, in reference cycles through the test's
    namespace that only a full collection frees, and answers of many small strings barely move the collector: wrong
    samples of one problem, one after another on one worker, filled the checker's capped memory until a right sample
    of the same problem failed with MemoryError (red-team round 10). The cap is lowered here so eight fillers do it
    (before the fix: the last fillers "return value too large", then the second right sample MemoryError)."""
    import sandbox.pool

    monkeypatch.setattr(sandbox.pool, "CHECKER_MEMORY_MB", 400)
    programs = [BIG_PRIMER] + [BIG_FILLER] * 8 + [BIG_RIGHT] * 2
    jobs = [Job(i, "big", program, BIG_TEST, "check(big)", prelude="def big(n):\n")
            for i, program in enumerate(programs)]
    with Executor(workers=1, timeout_s=20) as executor:
        outcomes = sorted(executor.run(jobs), key=lambda outcome: outcome.job_id)
    assert [(o.status, o.reason) for o in outcomes[:-2]] == [("failed", "AssertionError")] * 9
    assert [(o.status, o.reason) for o in outcomes[-2:]] == [("passed", "")] * 2, outcomes[-2:]
