"""EvalPlus's expected outputs and ground-truth times: each problem's ground truth (trusted task data) run on its
inputs as ``evalplus.gen.util.trusted_exec`` runs it (``evalplus.evaluate.get_groundtruth``): a fresh namespace per
input set, each input deep-copied, ``time.time()`` around each call, ``is not None`` for the MBPP oracles that read
only that.

:func:`compute` runs this file as a script, ``python -I -B groundtruth.py``, in a process of its own: the task's
code never runs in the harness (which may hold a model and its threads), and the times are a quiet interpreter's,
like EvalPlus's own process. Frames are marshal: the problems in on stdin, one result per problem out.
"""

from __future__ import annotations

import collections
import copy
import marshal
import os
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

_U32 = struct.Struct(">I")
SCRIPT = Path(__file__).resolve()


# A Counter or OrderedDict among the expected outputs, as marshal carries it: (TYPE_TAG, name, its pairs as a dict).
# Their equality is not a dict's (a Counter ignores zero counts: MBPP+'s Mbpp/88 expects one, and a correct answer
# with a zero count passes EvalPlus), so they are rebuilt in the checker (``differential.restore_types``). A defaultdict
# compares as a dict and becomes one. This script runs isolated (``-I``), apart from its package: the checker's
# reader is differential.restore_types, with the same tag (tests/test_evalplus_plus.py holds them equal).
TYPE_TAG = "\x00evalsuite.type"


def plain(value: Any, typed: list[bool] | None = None) -> Any:
    """An expected output as marshal carries it (see :data:`TYPE_TAG`); ``typed[0]`` is set where a tag was used."""
    kind = type(value)
    if kind in (collections.Counter, collections.OrderedDict):
        if typed is not None:
            typed[0] = True
        pairs = {plain(k, typed): plain(v, typed) for k, v in (value.items() if kind is collections.OrderedDict
                                                               else dict.items(value))}
        return (TYPE_TAG, kind.__name__, pairs)  # "Counter" or "OrderedDict"
    if kind in (collections.defaultdict, dict):
        return {plain(k, typed): plain(v, typed) for k, v in dict.items(value)}
    if kind is list:
        return [plain(v, typed) for v in value]
    if kind is tuple:
        return tuple(plain(v, typed) for v in value)
    return value


def run_problem(problem: dict[str, Any]) -> dict[str, Any]:
    """``{set name: {"expected": [...], "times": [...]}}`` for one problem."""
    out: dict[str, Any] = {}
    code = compile(problem["program"], "<ground truth>", "exec", dont_inherit=True)
    for name, inputs in problem["sets"].items():
        namespace: dict[str, Any] = {}
        exec(code, namespace)  # trusted_exec: a fresh namespace for each call of it (base, then plus)
        function = namespace[problem["entry_point"]]
        outputs, times = [], []
        for inp in inputs:
            inp = copy.deepcopy(inp)
            start = time.time()
            outputs.append(function(*inp))
            times.append(time.time() - start)
        if problem.get("output_not_none"):
            outputs = [o is not None for o in outputs]
        typed = [False]
        out[name] = {"expected": [plain(o, typed) for o in outputs], "times": times}
        if typed[0]:
            out[name]["typed"] = True  # some expected output is a Counter or an OrderedDict (tagged)
    marshal.dumps(out)  # ValueError for an output marshal cannot carry: that problem is reported, not its value
    return out


def _write(fd: int, message: Any) -> None:
    data = marshal.dumps(message)
    view = memoryview(_U32.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def main() -> int:
    out_fd = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)  # a ground truth's prints must not corrupt the frames
    problems = marshal.loads(sys.stdin.buffer.read())
    os.dup2(null, 0)
    for problem in problems:
        try:
            result: Any = {"task_id": problem["task_id"], "sets": run_problem(problem)}
        except BaseException as exc:  # reported for this problem; the others go on
            result = {"task_id": problem["task_id"], "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        _write(out_fd, result)
    return 0


def compute(problems: Sequence[dict[str, Any]], timeout_s: float | None = None) -> Iterator[dict[str, Any]]:
    """Run :func:`run_problem` on each problem in a process of its own (this file as a script), yielding each
    result as it comes: ``{"task_id", "sets"}`` or ``{"task_id", "error"}``. A problem is
    ``{"task_id", "program", "entry_point", "sets": {name: [inputs]}, "output_not_none"}``."""
    process = subprocess.Popen([sys.executable, "-I", "-B", str(SCRIPT)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"})
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(marshal.dumps(list(problems)))
        process.stdin.close()
        for _ in problems:
            header = process.stdout.read(4)
            if len(header) < 4:
                break
            yield marshal.loads(process.stdout.read(_U32.unpack(header)[0]))
        process.wait(timeout=timeout_s)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


if __name__ == "__main__":
    sys.exit(main())
