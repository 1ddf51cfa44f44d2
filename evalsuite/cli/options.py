"""Arguments and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from evalsuite.cli.option_groups import add_options, options_from_args
from evalsuite.errors import EvalsuiteError
from evalsuite.records import SamplingParams
from evalsuite.tasks.discovery import TaskRegistry

# The sampling defaults' one home is SamplingParams; the flags below show them, never restate them.
SAMPLING_DEFAULTS = SamplingParams()
PROMPT_STYLES = ("auto", "base", "instruct")


# -- flags several commands take: each defined once here --------------------------------------------------
def add_quiet(parser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bars (for CI logs)")


def add_limit(parser) -> None:
    parser.add_argument("--limit", type=int, help="only the first N problems of each task: a smoke test, labelled "
                                                  "partial, that never replaces a full run on the leaderboard")


def add_max_new_tokens(parser, purpose: str, preset_may_set: bool = False) -> None:
    """``--max-new-tokens``; ``preset_may_set``: no default in argparse (a preset fills it, a given flag wins)."""
    default = SAMPLING_DEFAULTS.max_new_tokens
    parser.add_argument("--max-new-tokens", type=int, default=None if preset_may_set else default,
                        help=f"{purpose} (default: {default})")


def add_temperature(parser, purpose: str) -> None:
    """``--temperature``, never set in argparse: run's preset may fill it, evaluate asks for it only when needed."""
    parser.add_argument("--temperature", type=float, default=None,
                        help=f"{purpose} (default: {SAMPLING_DEFAULTS.temperature:g}, greedy)")


def add_prompt_style(parser, preset_may_set: bool = False) -> None:
    parser.add_argument("--prompt-style", choices=PROMPT_STYLES, default=None if preset_may_set else "auto",
                        help="base: continue the task's prompt; instruct: ask through the model's chat template and "
                             "extract the code; auto: instruct when the tokenizer has a chat template (default: auto)")


def add_json(parser, what: str) -> None:
    """``--json`` of the commands whose JSON is their own report (models, plan, selfcheck); run, evaluate and
    leaderboard print the schema'd summary (:func:`evalsuite.cli.json_output.add_json_argument`)."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of a table")


def add_task_source_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task-dir", action="append", default=[], metavar="DIR",
                        help="also load task plugins from task_*.py modules in DIR (repeatable; default: none)")
    parser.add_argument("--task-data", action="append", default=[], metavar="TASK=PATH",
                        help="a task's data from a local file or folder instead of the hub (json, jsonl or parquet "
                             "in the hub copy's format, or a snapshot of the hub repository), e.g. mbpp=mbpp/ "
                             "(repeatable; default: none, the hub)")


def load_registry(args: argparse.Namespace) -> TaskRegistry:
    registry = TaskRegistry.discover(args.task_dir)
    given: set[str] = set()
    for item in args.task_data:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise EvalsuiteError(f"--task-data expects TASK=PATH, got {item!r}")
        if name in given:
            raise EvalsuiteError(f"--task-data gives task {name!r} two data files; give one")
        given.add(name)
        task = registry.get(name)
        if not hasattr(task, "data_path"):
            raise EvalsuiteError(f"task {name!r} takes no data file")
        from pathlib import Path

        if not Path(path).exists():
            raise EvalsuiteError(f"--task-data {name}={path}: no such file")
        task.data_path = Path(path)
    return registry


def check_task_data_used(args: argparse.Namespace, tasks: Sequence[str]) -> None:
    """A ``--task-data`` for a task the command does not run is a mistake (a typo in ``--tasks``, a flag left from
    another command): said, not silently ignored."""
    for item in args.task_data:
        name = item.partition("=")[0]
        if name not in tasks:
            raise EvalsuiteError(f"--task-data {item}: task {name!r} is not among the tasks this command runs "
                                 f"({', '.join(tasks)})")


def add_execution_args(parser) -> None:
    """The sandbox and time-limit flags of ``run``, ``evaluate`` and ``selfcheck`` (a parser or an argument group)."""
    from evalsuite.execution.executor import ExecutionOptions
    from evalsuite.execution.timeouts import TimeoutPolicy

    add_options(parser, ExecutionOptions)
    add_options(parser, TimeoutPolicy)


def execution_options(args: argparse.Namespace):
    """Validated :class:`~evalsuite.execution.executor.ExecutionOptions` from :func:`add_execution_args`' flags."""
    from evalsuite.execution.executor import ExecutionOptions

    return options_from_args(ExecutionOptions, args, show_progress=not args.quiet)


def timeout_policy(args: argparse.Namespace):
    """Validated :class:`~evalsuite.execution.timeouts.TimeoutPolicy` from :func:`add_execution_args`' flags."""
    from evalsuite.execution.timeouts import TimeoutPolicy

    return options_from_args(TimeoutPolicy, args)


def _fail_under_type(text: str) -> dict[str, float]:
    from evalsuite.reporting.gate import parse_fail_under

    try:
        return parse_fail_under(text)
    except EvalsuiteError as exc:  # argparse reports ArgumentTypeError as a usage error (exit 2)
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--fail-under ")) from None


def add_fail_under_argument(parser) -> None:
    """``--fail-under`` of ``run`` and ``leaderboard``: parsed to a dict like ``{"pass@1": 0.3}`` or None."""
    parser.add_argument("--fail-under", type=_fail_under_type, action=_MergedThresholds, metavar="METRIC=VALUE[,...]",
                        help="exit with status 3 when a model scores below a threshold, "
                             "e.g. pass@1=0.30 or pass@1=0.3,pass@10=0.5 (may be repeated, each metric once)")


class _MergedThresholds(argparse.Action):
    """A repeated ``--fail-under`` adds its thresholds (the last one silently replaced the others); a metric given
    twice is refused."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        merged = dict(getattr(namespace, self.dest) or {})
        again = sorted(set(merged) & set(values))
        if again:
            raise argparse.ArgumentError(self, f"{', '.join(again)} given twice; give each metric once")
        merged.update(values)
        setattr(namespace, self.dest, merged)


def parse_ks(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):  # "1," or "" or "1,,10": an empty item, as --models refuses one
        raise EvalsuiteError(f"--k expects comma-separated integers like 1,10,100, none empty; got {text!r}")
    try:
        ks = sorted({int(part) for part in parts})
    except ValueError:
        raise EvalsuiteError(f"--k expects comma-separated integers like 1,10,100; got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise EvalsuiteError(f"--k values must be positive integers; got {text!r}")
    return ks


def split_names(text: str, flag: str = "--models") -> list[str]:
    """A comma-separated list of names, each given once: an empty item ("a,,b", a trailing comma) or a name given
    twice is refused in one line, not dropped or run twice."""
    names = [part.strip() for part in text.split(",")]
    if not any(names):
        raise EvalsuiteError(f"{flag}: expected at least one name")
    if not all(names):
        raise EvalsuiteError(f"{flag} {text!r}: name {names.index('') + 1} is empty; give the names comma-separated, "
                             "without empty items")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise EvalsuiteError(f"{flag}: {', '.join(twice)} given twice; give each once")
    return names
