"""``evalsuite selfcheck --task T``: prove the canonical solutions pass 100% on this machine, under its current load.

It resolves the time limits exactly as ``run`` and ``evaluate`` would (calibrated per problem, timing the
canonical solutions first if this machine has not yet, or ``--timeout`` fixed), then executes every canonical
solution in the sandbox under those limits and reports passed / failed / timed out. Exit status 0 only when all
pass: a task whose reference solutions fail here would make every model's number on this machine wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from evalsuite.cli.options import (
    add_execution_args,
    add_json,
    add_limit,
    add_quiet,
    add_task_source_args,
    execution_options,
    load_registry,
    timeout_policy,
)
from evalsuite.errors import EvalsuiteError

EXIT_NOT_ALL_PASSED = 1
SHOWN_FAILURES = 10


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "selfcheck", help="run a task's canonical solutions in the sandbox: all must pass on this machine",
        description="Execute every canonical solution of a task in the sandbox, under the time limits a run "
                    "would use on this machine now, and report passed / failed / timed out.")
    parser.add_argument("--task", default="humaneval", help="the task to check (default: humaneval)")
    add_limit(parser)
    add_json(parser, "the report")
    add_quiet(parser)
    add_execution_args(parser)
    add_task_source_args(parser)
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from evalsuite.execution.timeouts import canonical_samples, execute_with_timeouts, machine_fingerprint
    from evalsuite.scoring import score

    options = execution_options(args)
    policy = timeout_policy(args)
    if args.limit is not None and args.limit < 1:
        raise EvalsuiteError("--limit must be >= 1")
    task = load_registry(args).get(args.task)
    problems = task.problems()[: args.limit] if args.limit else task.problems()
    missing = [p.task_id for p in problems if p.canonical_solution is None]
    if missing:
        raise EvalsuiteError(f"task {task.name!r} has no canonical solution for {len(missing)} problem(s) "
                             f"(first: {missing[0]}); selfcheck needs one for every problem")
    load_before = os.getloadavg()
    results, execution = execute_with_timeouts(task, canonical_samples(task, problems), options, policy)
    timeout_info = execution["timeouts"]
    summary = score(results, [1]).summary()
    failures = [r for r in results if not r.passed]
    report = {
        "task": task.name, "dataset_sha256": task.dataset_sha256, "source": task.source,
        "n_problems": len(problems), "passed": summary.n_passed, "failed": summary.n_failed,
        "timed_out": summary.n_timed_out, "all_passed": not failures,
        "not_passed": [{"task_id": r.task_id, "result": r.result, "duration_s": round(r.duration_s, 4)}
                       for r in failures],
        "max_duration_s": round(max((r.duration_s for r in results), default=0.0), 4),
        "load_average": {"before": list(load_before), "after": list(os.getloadavg())},
        "cpu_count": os.cpu_count(), "machine": machine_fingerprint(),
        "timeouts": {k: v for k, v in timeout_info.items() if k != "per_problem_s"},
        "sandbox": {k: execution[k] for k in ("mode", "workers", "wall_s", "executions_per_s")},
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if report["all_passed"] else EXIT_NOT_ALL_PASSED


def print_report(report: dict, stream=None) -> None:
    from evalsuite.execution.timeouts import limit_range

    stream = stream or sys.stdout
    limits = report["timeouts"]
    if limits["mode"] == "fixed":
        rule = f"fixed {limits['timeout_s']:g} s"
    else:
        span = limits.get("limit_s") or {}
        rule = (f"calibrated max({limits['floor_s']:g} s, {limits['factor']:g} x canonical time)"
                + (f", {limit_range(span)}" if span else "")
                + ("" if not limits["measured_now"] else f"; timed {limits['measured_now']} now"))
    verdict = "PASS" if report["all_passed"] else "FAIL"
    print(f"selfcheck {report['task']}: {verdict} {report['passed']}/{report['n_problems']} canonical solutions "
          f"passed ({report['failed']} failed, {report['timed_out']} timed out)", file=stream)
    load = report["load_average"]["before"]
    print(f"  machine: {report['cpu_count']} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"sandbox {report['sandbox']['mode']}, {report['sandbox']['workers']} workers", file=stream)
    print(f"  time limits: {rule}", file=stream)
    for item in report["not_passed"][:SHOWN_FAILURES]:
        print(f"  {item['task_id']}: {item['result']} ({item['duration_s']:.3f} s)", file=stream)
    if len(report["not_passed"]) > SHOWN_FAILURES:
        print(f"  ... and {len(report['not_passed']) - SHOWN_FAILURES} more", file=stream)
