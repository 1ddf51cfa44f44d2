"""The Python API: :func:`run` and :func:`evaluate`, the ``evalsuite run`` / ``evalsuite evaluate`` commands as
functions returning typed results (:class:`evalsuite.runs.results.RunResult`).

Each keyword argument is the command's flag of the same name (``max_new_tokens=256`` is ``--max-new-tokens
256``; a list is comma-joined; ``True`` switches a flag on), parsed by the command's own argparse parser and
run by the command's own code, so the API and the CLI cannot drift apart. Errors are raised as
:class:`evalsuite.errors.EvalsuiteError` (the one line the CLI would print). A ``fail_under`` gate is reported
in ``result.fail_under``, not raised. Nothing is printed on stdout: progress and the tables a person reads go
to stderr (``quiet=True``: only warnings).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any, NoReturn

from evalsuite.errors import EvalsuiteError


def _command_parser(command: str) -> argparse.ArgumentParser:
    from evalsuite.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


def _flag_value(value: Any) -> str:
    if isinstance(value, dict):  # fail_under={"pass@1": 0.3}
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, os.PathLike)):  # a list, a generator...
        return ",".join(os.fspath(v) if isinstance(v, os.PathLike) else str(v) for v in value)
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _keywords(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Each flag by its destination and by each of its long names (``--leaderboard-dir``: ``leaderboard_dir``;
    ``--tasks``/``--task``: ``tasks`` and ``task``), as a user who knows the flags would write them."""
    found: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if action.option_strings:
            found.setdefault(action.dest, action)
            for option in action.option_strings:
                if option.startswith("--"):
                    found.setdefault(option[2:].replace("-", "_"), action)
    return found


def command_argv(command: str, positional: Iterable[Any] = (), **options: Any) -> list[str]:
    """``evalsuite COMMAND`` arguments for keyword ``options`` (unknown keywords: TypeError)."""
    parser = _command_parser(command)
    flags = _keywords(parser)
    argv = [command, *(_flag_value(p) for p in positional)]
    given: dict[str, str] = {}
    for name, value in options.items():
        action = flags.get(name)
        if action is None or name == "help":
            known = ", ".join(sorted(d for d in flags if d != "help"))
            raise TypeError(f"evalsuite.{command}() got an unexpected keyword argument {name!r} (known: {known})")
        if action.dest in given and value is not None:
            raise TypeError(f"evalsuite.{command}() got {given[action.dest]!r} and {name!r}, one setting; give one")
        if value is not None:
            given[action.dest] = name
        flag = next(o for o in action.option_strings if o.startswith("--"))
        if value is None or value is False:
            if isinstance(action, argparse.BooleanOptionalAction) and value is False:
                argv.append("--no-" + flag[2:])
            continue
        if value is True and action.nargs in (0, "?"):
            argv.append(flag)
        elif isinstance(action, argparse._AppendAction) and isinstance(value, (list, tuple)):
            argv += [f"{flag}={_flag_value(item)}" for item in value]
        else:
            argv.append(f"{flag}={_flag_value(value)}")
    return argv


def _raising(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` (and its subcommands' parsers) raising the line the CLI would print last, instead of printing
    usage on stderr and exiting: nothing of the process's (sys.stderr is not swapped, other threads write on)."""
    def error(message: str) -> NoReturn:
        raise EvalsuiteError(f"{parser.prog}: error: {message}")

    parser.error = error  # type: ignore[method-assign]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _raising(sub)
    return parser


def _parse(argv: list[str]) -> argparse.Namespace:
    """The command's own parser; as with ``--json``, the tables a person reads go to stderr (none with
    ``quiet=True``), and nothing is printed on stdout."""
    from evalsuite.cli import build_parser

    args = _raising(build_parser()).parse_args(argv)
    args.json = True
    return args


class _StdoutByThread:
    """``sys.stdout`` while API calls run: a thread inside a call writes to stderr, every other thread to the
    stdout that was there. ``contextlib.redirect_stdout`` swaps stdout for the whole process: two calls on two
    threads left it on stderr for good (the second saved the first's redirect and restored it last), and a
    thread outside any call printed to stderr meanwhile."""

    def __init__(self, original: Any):
        self.original = original
        self.callers: dict[int, int] = {}  # thread id -> calls it is inside

    def _target(self) -> Any:
        return sys.stderr if threading.get_ident() in self.callers else self.original

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno...: the real stdout's
        return getattr(self.original, name)


_STDOUT_LOCK = threading.Lock()


@contextlib.contextmanager
def _stdout_to_stderr_in_this_thread() -> Iterator[None]:
    """This thread's prints on stderr for the duration; the stdout that was there is back once the last call
    on any thread ends (unless someone else replaced it meanwhile)."""
    me = threading.get_ident()
    with _STDOUT_LOCK:
        proxy = sys.stdout if isinstance(sys.stdout, _StdoutByThread) else _StdoutByThread(sys.stdout)
        sys.stdout = proxy
        proxy.callers[me] = proxy.callers.get(me, 0) + 1
    try:
        yield
    finally:
        with _STDOUT_LOCK:
            proxy.callers[me] -= 1
            if not proxy.callers[me]:
                del proxy.callers[me]
            if not proxy.callers and sys.stdout is proxy:
                sys.stdout = proxy.original


def run(models: str | Iterable[str] = "reference", tasks: str | Iterable[str] = "humaneval", **options: Any):
    """Evaluate ``models`` on ``tasks`` exactly as ``evalsuite run`` does; returns a
    :class:`~evalsuite.runs.results.RunResult` (one :class:`~evalsuite.runs.results.TaskScore` per model and task).

    >>> result = evalsuite.run(models=["reference"], tasks=["humaneval"], limit=3, quiet=True)  # doctest: +SKIP
    >>> result.scores[0].pass_at[1].value                                                     # doctest: +SKIP
    1.0
    """
    from evalsuite.cli import run as run_command

    argv = command_argv("run", models=models, tasks=tasks, **options)
    args = _parse(argv)
    with _stdout_to_stderr_in_this_thread():
        result = run_command.execute(args, argv=["evalsuite", *argv])
    if result is None:  # a worker rank under torchrun: rank 0 has the result
        from evalsuite.runs.results import RunResult

        return RunResult(scores=[], ks=[])
    return result


def evaluate(samples: str | os.PathLike, *, output: str | os.PathLike, task: str | None = None, **options: Any):
    """Execute and score a samples file exactly as ``evalsuite evaluate`` does (``task`` or ``tasks``: default
    humaneval); returns a :class:`~evalsuite.runs.results.RunResult` with ``command == "evaluate"`` and one score."""
    from evalsuite.cli import evaluate as evaluate_command

    argv = command_argv("evaluate", [samples], output=output, task=task, **options)
    args = _parse(argv)
    with _stdout_to_stderr_in_this_thread():
        return evaluate_command.execute(args)


__all__ = ["run", "evaluate", "command_argv"]
