"""EvalPlus's differential test, run by the trusted checker: call the candidate once per input, compare each output
with the ground truth's as ``evalplus`` 0.3.1 does (``evalplus/eval/__init__.py``: ``unsafe_execute`` and
``untrusted_check``), and decide the verdict of one input set (base or plus) exactly as EvalPlus would.

The candidate runs in the jailed sample process and only answers calls; everything else is here, outside it:
the inputs, the expected outputs, the per-input time limits, the comparison (exact equality, ``atol`` and
``is_floats``, the MBPP special oracles, HumanEval/32's polynomial) and EvalPlus's bookkeeping of a pass.

What the sample sees does not depend on whether its answers were right: every input is called in order whatever
the earlier outputs compared to (a wrong answer decides the verdict, as EvalPlus's early stop does, but the calls
go on), and only its own slowness (a call past its time limit, or the set's whole budget) ends the calls early.

EvalPlus's rules, kept here because its verdicts depend on them:

* per input: ``time_limit = max(min_time_limit, gt_time_limit_factor * ground truth's time)``, a timer in the
  candidate's process that raises ``TimeoutException`` inside the call (the sample end sets it, see
  :mod:`sandbox.channel`; the checker waits ``CALL_GRACE_S`` more before it gives up on the sample); the whole set gets
  ``min(EVALPLUS_TIMEOUT_PER_TASK = 60, sum of limits) + 1`` s, + 1 without ``fast_check``, and the process is
  killed ``+ 1`` s after that (``p.join(timeout=timeout + 1)``): a process still running then is ``timeout``;
* ``atol`` is a local variable that the loop overwrites: the first expected output that ``is_floats`` (with
  ``atol == 0``) sets it to 1e-6 for every later input;
* HumanEval/32 (``find_zero``) is checked by ``abs(_poly(*inp, out)) <= atol``, then ``continue`` skips the
  input's bookkeeping, so EvalPlus 0.3.1 never counts it as passed: its ``details[:progress]`` is shorter than the
  inputs and the verdict is ``fail`` for every program (a bug of that version, reproduced because the verdict is
  the peer's);
* ``fast_check`` (``evaluate``'s default, ``not test_details``): the first failed input ends the set as ``fail``.
"""

from __future__ import annotations

import collections
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

if __package__:
    from sandbox import channel
else:  # imported by the checker run as a script, with this folder on sys.path
    import channel  # type: ignore[no-redef]

PASS, FAIL, TIMEOUT = "pass", "fail", "timeout"
# Past an input's limit, how long the checker waits for the sample's own timer (EvalPlus's, which raises inside the
# call) to end the call, before it gives up on the sample (a call stuck in C code, a candidate that ignores it).
CALL_GRACE_S = 0.5
DEFAULT_TIMEOUT_PER_TASK_S = 60.0  # EvalPlus's EVALPLUS_TIMEOUT_PER_TASK default

# evalplus/eval/_special_oracle.py
MBPP_OUTPUT_NOT_NONE_TASKS = ("check_str", "text_match_three", "text_starta_endb")
MBPP_OUTPUT_SET_EQ_TASKS = ("similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
                            "larg_nnum", "intersection_array", "find_dissimilar", "Diff")

# How the sample end turns an output into what it sends, for the oracles that read more of the output than its
# plain value (see sandbox.channel.serve_calls): "" as is; "any" nothing (any output passes: Mbpp/164);
# "not_none" ``out if type(out) is bool else out is not None``; "set" as is when plain, else ``set(out)``.
REPLY_MODES = ("", "any", "not_none", "set")


def reply_mode(dataset: str, entry_point: str) -> str:
    if dataset != "mbpp":
        return ""
    if entry_point == "are_equivalent":
        return "any"
    if entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
        return "not_none"
    if entry_point in MBPP_OUTPUT_SET_EQ_TASKS:
        return "set"
    return ""


def _surface_Area(base_edge: Any, height: Any) -> Any:  # noqa: N802 (EvalPlus's name) - oracle for Mbpp/581
    slant_height = math.sqrt((base_edge / 2) ** 2 + height**2)
    base_area = base_edge**2
    lateral_area = 4 * (base_edge * slant_height) / 2
    total_surface_area = base_area + lateral_area
    return round(total_surface_area)


def _digit_distance_nums(num1: Any, num2: Any) -> Any:  # oracle for Mbpp/558
    str_num1, str_num2 = str(num1), str(num2)
    max_length = max(len(str_num1), len(str_num2))
    str_num1, str_num2 = str_num1.zfill(max_length), str_num2.zfill(max_length)
    total_difference = 0
    for digit1, digit2 in zip(str_num1, str_num2):
        total_difference += abs(int(digit1) - int(digit2))
    return total_difference


def _poly(xs: list, x: float) -> Any:  # oracle for HumanEval/32
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def is_floats(x: Any) -> bool:
    """EvalPlus's ``is_floats`` (NumPy arrays never cross the channel)."""
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)) and x:
        return all(isinstance(i, float) for i in x)
    return False


def allclose(out: Any, exp: Any, rtol: float, atol: float) -> bool:
    """``numpy.allclose``, NumPy's own where the checker's interpreter has it (EvalPlus calls it); else the same
    rule, broadcasting included, on scalars and (nested) lists of numbers, raising where NumPy would not compare.

    Broadcasting is EvalPlus's verdict and kept for it: an answer of shape (1, 0) against an expected (1,) compares
    nothing and passes (``[[]]`` for ``[0.5]``). Without the rule here the verdict depended on whether NumPy was
    installed beside the checker."""
    try:
        import numpy
    except ImportError:
        return _allclose(out, exp, rtol, atol)
    return bool(numpy.allclose(out, exp, rtol=rtol, atol=atol))


def _shape_and_values(x: Any) -> tuple[tuple[int, ...], list[Any]]:
    """A nested list's shape and its numbers in row-major order (ValueError where NumPy finds it ragged)."""
    if isinstance(x, (list, tuple)):
        parts = [_shape_and_values(item) for item in x]
        if not parts:
            return (0,), []
        if len({shape for shape, _ in parts}) != 1:
            raise ValueError("inhomogeneous shape")
        return (len(parts), *parts[0][0]), [value for _, values in parts for value in values]
    if type(x) not in (bool, int, float, complex):
        raise TypeError(f"cannot compare {type(x).__name__}")
    return (), [x]


def _allclose(out: Any, exp: Any, rtol: float, atol: float) -> bool:
    (out_shape, out_values), (exp_shape, exp_values) = _shape_and_values(out), _shape_and_values(exp)
    ndim = max(len(out_shape), len(exp_shape))
    a_shape, b_shape = (1,) * (ndim - len(out_shape)) + out_shape, (1,) * (ndim - len(exp_shape)) + exp_shape
    shape = []
    for a, b in zip(a_shape, b_shape):
        if a != b and 1 not in (a, b):
            raise ValueError("shapes differ and do not broadcast")
        shape.append(b if a == 1 else a)

    def strides(own: tuple[int, ...]) -> list[int]:  # a broadcast dimension (1) does not move
        found, step = [], 1
        for size in reversed(own):
            found.append(0 if size == 1 else step)
            step *= size
        return found[::-1]

    a_strides, b_strides = strides(a_shape), strides(b_shape)
    for index in itertools.product(*(range(size) for size in shape)):  # nothing to compare where a size is 0
        a = out_values[sum(i * st for i, st in zip(index, a_strides))]
        b = exp_values[sum(i * st for i, st in zip(index, b_strides))]
        if not _close(a, b, rtol, atol):
            return False
    return True


def _close(out: Any, exp: Any, rtol: float, atol: float) -> bool:
    if out == exp:
        return True
    if isinstance(out, complex) or isinstance(exp, complex):
        return abs(out - exp) <= atol + rtol * abs(exp)
    a, b = float(out), float(exp)
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= atol + rtol * abs(b)


@dataclass
class InputSet:
    """One input set of a problem, as the checker holds it: trusted data from the harness."""

    name: str  # "base" or "plus"
    inputs: Sequence[Sequence[Any]]
    expected: Sequence[Any]
    time_limits: Sequence[float]  # per input, seconds: max(min_time_limit, factor x ground truth's time)

    def budget_s(self, fast_check: bool, per_task_cap_s: float = DEFAULT_TIMEOUT_PER_TASK_S) -> float:
        """How long EvalPlus lets the whole set run before it kills the process (``untrusted_check``)."""
        timeout = min(per_task_cap_s, sum(self.time_limits)) + 1
        if not fast_check:
            timeout += 1
        return timeout + 1


# How groundtruth.plain carries a Counter or OrderedDict expected output through marshal: (TYPE_TAG, name, pairs).
TYPE_TAG = "\x00evalsuite.type"
_TYPED: dict[str, type] = {"Counter": collections.Counter, "OrderedDict": collections.OrderedDict}


def restore_types(value: Any) -> Any:
    """The tagged Counters and OrderedDicts of a set's expected outputs rebuilt: EvalPlus compares an answer with
    the ground truth's own Counter (which ignores zero counts), not with a dict."""
    kind = type(value)
    if kind is tuple:
        if len(value) == 3 and value[0] == TYPE_TAG and value[1] in _TYPED and type(value[2]) is dict:
            built = _TYPED[value[1]]()
            for key, item in value[2].items():
                built[restore_types(key)] = restore_types(item)
            return built
        return tuple(restore_types(v) for v in value)
    if kind is list:
        return [restore_types(v) for v in value]
    if kind is dict:
        return {restore_types(k): restore_types(v) for k, v in value.items()}
    return value


@dataclass
class Comparator:
    """EvalPlus's per-input comparison, with its state (``atol`` changes as the loop goes)."""

    dataset: str
    entry_point: str
    atol: float

    def check(self, inp: Sequence[Any], out: Any, exp: Any, reduced: bool) -> bool | None:
        """True: the input passed; False: it failed; None: HumanEval/32's ``continue`` (passed, but not counted).

        ``reduced``: the sample sent a reduction of a non-plain output (reply modes "not_none", "set"), so the
        output's own type is not ``type(out)``: any branch that reads the type fails, as it would in EvalPlus
        (the original was no list, tuple, float or bool)."""
        try:
            exact_match = out == exp
            if self.dataset == "mbpp":
                name = self.entry_point
                if name == "are_equivalent":
                    exact_match = True
                elif name == "sum_div":
                    exact_match = exact_match or out == 0
                elif name == "surface_Area":
                    exact_match = exact_match or abs(out - _surface_Area(*inp)) <= self.atol
                elif name == "digit_distance_nums":
                    exact_match = exact_match or out == _digit_distance_nums(*inp)
                elif name in MBPP_OUTPUT_SET_EQ_TASKS:
                    exact_match = set(out) == set(exp)
                elif name in MBPP_OUTPUT_NOT_NONE_TASKS:
                    exact_match = out == exp  # the sample sent out, or out is not None (reply mode "not_none")
            if self.dataset == "humaneval" and self.entry_point == "find_zero":
                # inp is find_zero's argument list, [xs]: EvalPlus's own call, kept as it wrote it
                assert abs(_poly(*inp, out)) <= self.atol  # type: ignore[call-arg]
                return None
            if self.atol == 0 and is_floats(exp):
                self.atol = 1e-6
            if not exact_match and self.atol != 0:
                assert not reduced and type(out) == type(exp)  # noqa: E721 (EvalPlus's comparison)
                if isinstance(exp, (list, tuple)):
                    assert len(out) == len(exp)
                assert allclose(out, exp, rtol=1e-07, atol=self.atol)
            else:
                assert exact_match
            return True
        except BaseException:
            return False


@dataclass
class SetReport:
    """What one input set came to, in EvalPlus's words and evalsuite's."""

    status: str  # PASS, FAIL or TIMEOUT: EvalPlus's verdict
    reason: str = ""  # why not a pass (fixed vocabulary: a built-in exception class, or the checker's words)
    failed_input: int | None = None  # the input that decided a fail, as EvalPlus's "fail tests" name it
    calls: int = 0
    flags: list[str] = field(default_factory=list)
    sample_error: str = ""


class Bookkeeping:
    """``unsafe_execute``'s ``stat``, ``details`` and ``progress``, and ``untrusted_check``'s final rule."""

    def __init__(self, n_inputs: int, fast_check: bool):
        self.n, self.fast_check = n_inputs, fast_check
        self.details = [False] * n_inputs
        self.progress = 0
        self.stopped = False  # EvalPlus's loop has ended (fast_check's raise): later inputs change nothing
        self.stat = ""  # "" while running; PASS/FAIL once its process would have ended on its own
        self.reason = ""
        self.failed_input: int | None = None

    def passed(self, i: int) -> None:
        if not self.stopped:
            self.details[i] = True
            self.progress += 1

    def failed(self, i: int, reason: str) -> None:
        if self.stopped:
            return
        self.details[i] = False
        self.progress += 1
        if self.failed_input is None:
            self.failed_input, self.reason = i, reason
        if self.fast_check:
            self.stopped, self.stat = True, FAIL

    def load_failed(self, reason: str) -> None:
        if not self.stopped:
            self.stopped, self.stat, self.reason = True, FAIL, reason

    def timed_out(self) -> None:
        """The process is killed at the set's budget: TIMEOUT unless it had already ended."""
        if not self.stopped:
            self.stopped, self.stat = True, TIMEOUT

    def verdict(self) -> str:
        if not self.stopped:
            self.stat = PASS
        if self.stat == PASS:
            details = self.details[:self.progress]
            if len(details) != self.n or not all(details):
                self.reason = self.reason or "AssertionError"
                return FAIL
        return self.stat


def run_input_set(client: channel.CallClient, comparator: Comparator, input_set: InputSet, source: str,
                  fast_check: bool, started: float, per_task_cap_s: float = DEFAULT_TIMEOUT_PER_TASK_S) -> SetReport:
    """Run one input set against the candidate behind ``client`` (a fresh :class:`sandbox.channel.CallClient`
    whose sample process has just been started) and decide EvalPlus's verdict.

    ``client`` raises :class:`sandbox.channel.ChannelFailure` once the sample stops answering properly; every
    later input is then unanswered."""
    book = Bookkeeping(len(input_set.inputs), fast_check)
    budget_end = started + input_set.budget_s(fast_check, per_task_cap_s)
    mode = reply_mode(comparator.dataset, comparator.entry_point)
    report = SetReport(PASS)
    client.deadline = budget_end
    try:
        client.wait_ready(source, peer="evalplus" if comparator.dataset == "humaneval" else "evalplus-mbpp")
    except channel.ChannelFailure:
        _ended(client, book)
        return _report(book, client, report)
    except Exception as exc:  # the module raised while loading: EvalPlus's exec fails, the set fails
        book.load_failed(_reason(client, exc))
        return _report(book, client, report)
    for i, inp in enumerate(input_set.inputs):
        limit = input_set.time_limits[i]
        call_end = time.monotonic() + limit + CALL_GRACE_S
        client.deadline = min(call_end, budget_end)
        try:
            out = client.call(comparator.entry_point, tuple(inp), {}, mode=mode, limit_s=limit)
        except channel.ChannelFailure:
            if client.timed_out and call_end < budget_end:  # over its limit, and the sample's timer did not end it
                book.failed(i, "timed out")
            else:
                _ended(client, book, i)
            break
        except Exception as exc:  # the candidate raised (TimeoutError: EvalPlus's timer, in the sample)
            reason = _reason(client, exc)
            book.failed(i, "timed out" if client.raised.get(id(exc)) == ("TimeoutError", False) else reason)
            continue
        finally:
            report.calls += 1
        verdict = comparator.check(inp, out, input_set.expected[i], client.reduced)
        if verdict is True:
            book.passed(i)
        elif verdict is False:
            book.failed(i, "AssertionError")
    return _report(book, client, report)


def _ended(client: channel.CallClient, book: Bookkeeping, i: int | None = None) -> None:
    """The sample stopped answering: past the set's budget (TIMEOUT), or it died or broke the protocol. EvalPlus
    reports a process that dies (``os._exit``, a signal) as TIMEOUT too (its ``stat`` is never set); evalsuite
    names the cause, and the verdict, not a pass, is the same."""
    if client.timed_out:
        book.timed_out()
    elif i is not None:
        book.failed(i, client.failure[0] if client.failure else "sample process died")
    else:
        book.load_failed(client.failure[0] if client.failure else "sample process died")


def _reason(client: channel.CallClient, exc: BaseException) -> str:
    raised = client.raised.get(id(exc))
    if raised is not None:
        return raised[0] if raised[1] else "exception"
    return "exception"


def _report(book: Bookkeeping, client: channel.CallClient, report: SetReport) -> SetReport:
    report.status = book.verdict()
    report.reason = "" if report.status == PASS else book.reason
    report.failed_input = book.failed_input if report.status == FAIL else None
    report.sample_error = client.sample_error
    if client.failure is not None and client.failure[1]:
        report.flags.append(client.failure[1])
    return report

