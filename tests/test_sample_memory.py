"""No sample can find an earlier sample in the memory it starts with, nor reach the server's state.

Every sample is forked from its worker's zygote, which never held a candidate's code, a sample's pid or exit
status, or the server's objects (sandbox/sample_server.py). These tests plant a marker in one sample and look
for it from the following ones, in every readable page of their memory and every object and frame they can
reach (tests/sample_memory_attacks.py), with one worker and with two; thieves that would return an earlier
sample's correct answers; and writers that change what the server counts (processes forked, /tmp dirtied),
read back from the server's side by the next sample.
"""

from __future__ import annotations

import random
import re
import secrets
import textwrap

import pytest

import redteam_kit as kit
from redteam_kit import bits_carried
import sample_memory_attacks as sma
from sandbox import Executor, Job, detect_isolation

pytestmark = pytest.mark.skipif(detect_isolation() == "none", reason="needs namespace isolation (bubblewrap)")

ADD_PRELUDE, ADD_TEST, ADD_CHECK, ADD_CORRECT = kit.PROBLEMS["add"]
TIMEOUT_S = 10.0


def report_job(job_id: int, body: str, key: str = "add") -> Job:
    """A sample whose ``add`` raises its observation (this test's instrument; a real attacker learns a verdict)."""
    source = kit.unguarded(ADD_PRELUDE.split("def add")[0] + sma.SCAN + sma.REACHABLE
                          + "def add(a, b):\n" + textwrap.indent(textwrap.dedent(body), "    "))
    return Job(job_id, key, source, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)


def padding(index: int) -> str:
    """Sources of many sizes: freed memory of one size is soon reused by the next allocation of that size, so an
    earlier sample's residue, where there is any, survives in the size classes nothing else took."""
    return "#" * (150 * index * index) + "\n"


def planted(job_id: int, marker: str) -> Job:
    """A correct sample that holds ``marker`` in its source, its constants and its heap."""
    source = ADD_CORRECT + f"# {marker}\nKEEP = [{marker!r} * 3, {marker!r}.encode()]\n" + padding(job_id)
    return Job(job_id, "add", source, ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE)


def hidden(marker: str) -> str:
    """The marker written so that the reader's own code never contains it (only its reversed hex)."""
    return f"bytes.fromhex({marker.encode()[::-1].hex()!r})[::-1]"


def observations(outcomes, first_id: int) -> dict[int, str]:
    return {o.job_id: o.sample_error for o in outcomes if o.job_id >= first_id}


def run(jobs: list[Job], workers: int) -> list:
    with Executor(workers=workers, timeout_s=TIMEOUT_S, memory_mb=512) as executor:
        return list(executor.run(jobs))


@pytest.fixture(scope="module")
def marker() -> str:
    return "MARK" + secrets.token_hex(12)


def test_the_scanner_finds_what_is_in_its_own_process(marker):
    """The instrument works: a sample whose own source holds the marker finds it in its memory."""
    job = report_job(1, f"""
        KEEP = "{marker}"
        raise ValueError(f"hits={{len(find_all({hidden(marker)}))}} regions={{len(regions())}}")
    """)
    (outcome,) = run([job], workers=1)
    hits = int(re.search(r"hits=(\d+)", outcome.sample_error).group(1))
    assert hits >= 1, outcome.sample_error


# Where a writer leaves its marker, besides its source: its heap, its environment, a module every sample
# imports, the builtins, sys.modules, a file descriptor's worth of /tmp.
PLANTS = {
    "heap": "KEEP2 = bytearray(MARK.encode() * 40)",
    "environment": "import os; os.environ['EVALSUITE_MARK'] = MARK",
    "preloaded module": "import json; json.MARK = MARK * 2",
    "builtins": "import builtins; builtins.MARK2 = MARK * 2",
    "sys.modules": "import sys, types; sys.modules['mark_' + MARK] = types.ModuleType(MARK * 2)",
    "tmp file": "open('/tmp/mark', 'w').write(MARK * 2)",
}


@pytest.mark.parametrize("workers", [1, 2])
def test_no_earlier_candidate_is_in_a_samples_memory(marker, workers):
    writers = [planted(i, marker) for i in range(6)]
    writers += [Job(10 + i, "add", kit.unguarded(ADD_CORRECT + f"MARK = {marker!r}\n{plant}\n" + padding(i)),
                    ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE) for i, plant in enumerate(PLANTS.values())]
    readers = [report_job(100 + i, f"""
        raise ValueError(f"hits={{len(find_all({hidden(marker)}))}}")
    """) for i in range(6)]
    outcomes = run(writers + readers, workers)
    assert all(o.passed for o in outcomes if o.job_id < 100), [o for o in outcomes if not o.passed]
    seen = observations(outcomes, 100)
    assert len(seen) == 6
    assert all(text == "ValueError: hits=0" for text in seen.values()), seen


# How a thief looks for an earlier sample's code: every readable page, every object the collector knows, every
# frame's locals (the zygote's and the sample's own stack).
SEARCHES = {
    "memory": "sources = [text_at(a) for a in find_all(b'def add(a, b):')]",
    "objects": """
        import gc
        gc.unfreeze()
        sources = [o.encode() if isinstance(o, str) else bytes(o) for o in gc.get_objects() if isinstance(o, (dict, list, tuple))
                   for o in (o.values() if isinstance(o, dict) else o)
                   if isinstance(o, (str, bytes, bytearray)) and 'def add(a, b):' in (o if isinstance(o, str) else o.decode('latin-1'))]
        """,
    "frames": """
        import sys
        sources, frame = [], sys._getframe()
        while frame is not None:
            for value in list(frame.f_locals.values()) + list(frame.f_code.co_consts):
                if isinstance(value, (str, bytes)) and 'def add(a, b):' in (value if isinstance(value, str) else value.decode('latin-1')):
                    sources.append(value.encode() if isinstance(value, str) else value)
            frame = frame.f_back
        """,
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("search", list(SEARCHES))
def test_thieves_find_no_correct_code_to_return(workers, search):
    """After correct solutions, thieves search for any ``def add`` but their own, run what they find, and answer
    with it when it works: not one may pass."""
    correct = [Job(i, "add", ADD_CORRECT + f"# solution {i}\n" + padding(i), ADD_TEST, ADD_CHECK,
                   prelude=ADD_PRELUDE) for i in range(6)]
    search_code = textwrap.indent(textwrap.dedent(SEARCHES[search]).strip("\n") + "\n", "    ")
    thief_body = textwrap.dedent("""\
        global _stolen
        if "_stolen" not in globals():
            _stolen = None
        """) + search_code + textwrap.dedent("""\
            for text in sources:
                at = text.find(b"def add(a, b):")
                text = text[at:]
                if b"THIEF" in text or b"find_all" in text:
                    continue
                lines = [i + 1 for i, c in enumerate(text) if c == 10][::-1][:40]
                for end in lines:  # residue ends in whatever came after it: try every line boundary
                    space = {}
                    try:
                        exec(text[:end].decode("utf-8", "replace"), space)
                        if space["add"](1, 2) == 3 and space["add"](10, -4) == 6:
                            _stolen = space["add"]
                            break
                    except Exception:
                        continue
                if _stolen:
                    break
        return _stolen(a, b) if _stolen else a - b  # THIEF
        """).replace("\n    for text", "\n    for text", 1)
    thieves = [report_job(100 + i, thief_body) for i in range(6)]
    outcomes = run(correct + thieves, workers)
    assert all(o.passed for o in outcomes if o.job_id < 100)
    stolen = [o for o in outcomes if o.job_id >= 100 and o.passed]
    assert not stolen, f"{len(stolen)} thieves passed"
    assert all(o.reason == "AssertionError" for o in outcomes if o.job_id >= 100), \
        [o.sample_error for o in outcomes if o.job_id >= 100]


def test_no_server_object_marker_or_sample_count_is_reachable(marker):
    """Writers fork processes and dirty /tmp (what the server counts) or not, by a random bit; the next sample
    looks at every object and frame it can reach: no server object, no marker, and nothing that tells the bit."""
    rng = random.Random(5)
    bits = [rng.randint(0, 1) for _ in range(10)]
    jobs: list[Job] = []
    for index, bit in enumerate(bits):
        writer = ADD_CORRECT + textwrap.dedent(f"""
            import os
            MARK = "{marker}" * 2
            if {bit}:
                for _ in range(60):
                    if os.fork() == 0:
                        os._exit(0)
                    os.wait()
                open("/tmp/dirty", "w").write(MARK)
        """)
        jobs.append(Job(2 * index, "add", kit.unguarded(writer), ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE))
        jobs.append(report_job(2 * index + 1, f"""
            kinds, holding, numbers = reachable_report({hidden(marker)}.decode())
            raise ValueError(f"kinds={{kinds}} holding={{holding}} numbers={{numbers}}")
        """))
    outcomes = {o.job_id: o for o in run(jobs, workers=1)}
    seen = [outcomes[2 * i + 1].sample_error for i in range(len(bits))]
    for text in seen:
        assert "kinds=[] holding=0 " in text, text
    assert bits_carried(bits, seen) == 0, seen


def test_no_earlier_exit_status_or_pid_is_left_to_read():
    """Writers end with an exit code (or a signal) chosen by a random bit; the next sample reads the zygote's exit
    buffer (reachable from its own stack) and every integer its frames hold: all the same whatever the bit."""
    rng = random.Random(11)
    bits = [rng.randint(0, 1) for _ in range(10)]
    jobs: list[Job] = []
    for index, bit in enumerate(bits):
        ending = "os._exit(37)" if bit else "os.kill(os.getpid(), 9)"
        writer = ADD_PRELUDE + f"    import os\n    {ending}\n"
        jobs.append(Job(2 * index, "add", kit.unguarded(writer), ADD_TEST, ADD_CHECK, prelude=ADD_PRELUDE))
        jobs.append(report_job(2 * index + 1, """
            import ctypes, sys
            found, frame = [], sys._getframe()
            while frame is not None:
                for value in frame.f_locals.values():
                    buffer = getattr(value, "buffer", None)
                    if isinstance(buffer, ctypes.Array):
                        found.append(bytes(buffer).hex())
                frame = frame.f_back
            kinds, holding, numbers = reachable_report("-")
            raise ValueError(f"buffers={found} numbers={numbers}")
        """))
    outcomes = {o.job_id: o for o in run(jobs, workers=1)}
    assert all(outcomes[2 * i].status == "failed" for i in range(len(bits)))
    seen = [outcomes[2 * i + 1].sample_error for i in range(len(bits))]
    assert all("buffers=['" in text and "00" * 128 in text for text in seen), seen[0][:300]
    assert bits_carried(bits, seen) == 0, seen
