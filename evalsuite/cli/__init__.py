"""The ``evalsuite`` command line. Each subcommand lives in ``evalsuite/cli/<name>.py`` with
``add_parser(subparsers)`` and ``main(args) -> int``; heavy imports (torch) stay inside ``main``."""

from __future__ import annotations

import _thread
import argparse
import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from typing import Any, NoReturn

from evalsuite.errors import EvalsuiteError, storage_error
from evalsuite.signals import held
from evalsuite.untrusted import visible
from evalsuite.version import __version__

COMMANDS = ("run", "evaluate", "selfcheck", "tasks", "models", "plan", "leaderboard")


class OneLineParser(argparse.ArgumentParser):
    """A usage mistake is one line naming the command's help (argparse printed the 26-line usage block first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {visible(message)} (see {self.prog} --help)\n")


def build_parser(commands: tuple[str, ...] = COMMANDS) -> argparse.ArgumentParser:
    """The parser with ``commands`` (all by default). Each command's module is imported to add its arguments."""
    parser = OneLineParser(
        prog="evalsuite", description="Measure how well language models write code.")
    parser.add_argument("--version", action="version", version=f"evalsuite {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in commands:
        importlib.import_module(f"evalsuite.cli.{name}").add_parser(subparsers)
    return parser


def _never_fail_on_output() -> None:
    """A line holding a lone surrogate (a name or path from argv that is not UTF-8) is written with an escape
    rather than raising after the work is done; stderr already does this."""
    try:
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    except (AttributeError, ValueError):  # a replaced sys.stdout (pytest's capsys)
        pass


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a scheduler's time limit, ``docker stop``, ``kill``, a closed terminal), handled as Ctrl-C
    is: finished rows are kept, the record says interrupted, and the exit status names the signal (128 + it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stops_as_interrupts():
    """While a command runs in the main thread, the first stop signal raises there (Ctrl-C's KeyboardInterrupt,
    :class:`Stopped` for SIGTERM and SIGHUP), once: the finished rows are then written whole and the record
    closed. Later SIGTERMs and SIGHUPs are ignored; a second Ctrl-C says what is going on (before, it broke
    into that clean-up with a traceback) and a third quits at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping: list[int] = []
    # A stop raised while Python runs a finalizer (a ``__del__``, a weakref callback of a collection) cannot leave
    # it: Python prints "Exception ignored" and goes on, and the stop, counted, made later SIGTERMs ignored, so the
    # run went to its end with status 0 (red-team round 21). Such a stop is kept as undelivered: the next stop
    # signal raises it, and a thread sends that signal to the main thread (a real signal: it also wakes a main
    # thread blocked in a wait, red-team round 22). Inside the report of the lost one a signal is only noted
    # (raised there, it was lost again).
    undelivered: list[int] = []
    reporting: list[bool] = []
    running = [True]
    main_thread = threading.main_thread().ident

    def stop(signum: int, frame: object) -> None:
        if held(signum):  # inside a heavy import: raised once it is done (evalsuite.signals)
            return
        if reporting:
            return  # the lost stop's report: the signal sent after it raises
        if undelivered:
            undelivered.clear()
            raise KeyboardInterrupt if signum == signal.SIGINT else Stopped(signum)
        stopping.append(signum)
        if len(stopping) == 1:
            raise KeyboardInterrupt if signum == signal.SIGINT else Stopped(signum)
        if signum != signal.SIGINT:
            return
        if stopping[1:].count(signal.SIGINT) == 1:
            sys.stderr.write("stopping: saving the finished completions and the run record; press Ctrl-C again "
                             "to quit at once\n")
        else:
            os._exit(128 + signal.SIGINT)  # the user insists: what is on disk stays, nothing more is written

    def send_again(signum: int) -> None:
        time.sleep(0.01)  # the main thread out of the finalizer
        # not once the command is over: the stop would reach its caller after a return (red-team round 23)
        if undelivered and running and signal.getsignal(signum) is stop and main_thread is not None:
            signal.pthread_kill(main_thread, signum)

    unraisable = sys.unraisablehook

    def deliver_again(report: Any) -> None:
        exc = report.exc_value
        if isinstance(exc, KeyboardInterrupt) and stopping:
            reporting.append(True)
            try:
                signum = getattr(exc, "signum", signal.SIGINT)
                undelivered.append(signum)
                _thread.start_new_thread(send_again, (signum,))  # not threading's: its start waits for the thread
            finally:
                reporting.clear()
            return
        unraisable(report)

    # A signal the process was started ignoring stays ignored: `nohup` (SIGHUP), a shell's `&` (SIGINT).
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                if signal.getsignal(signum) is not signal.SIG_IGN}
    sys.unraisablehook = deliver_again
    try:
        yield
    finally:
        running.clear()
        sys.unraisablehook = unraisable
        if not stopping:  # once stopped, the process is on its way out: a late Ctrl-C still meets `stop`
            for signum, handler in previous.items():
                signal.signal(signum, handler)


SHUTDOWN_LIMIT_S = 60  # seconds the interpreter may take to shut down once a command is done (entry)


def entry() -> NoReturn:
    """The ``evalsuite`` command (and ``python -m evalsuite``): :func:`main`, then its status kept through the
    interpreter's shutdown. Why: shutting down (a model's libraries torn down) takes seconds after the document is
    printed, with the default handlers back; a SIGTERM then ended a finished run with status 143 (red-team round
    21). The work done and said, stop signals are ignored for those seconds (a Python handler would not do:
    the interpreter puts the default ones back early in its shutdown, an ignored signal it leaves ignored), and a
    shutdown past :data:`SHUTDOWN_LIMIT_S` ends by SIGALRM, as stop signals no longer can (red-team round 22): a
    hung tear-down's status is then 142."""
    status = main()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    atexit.register(_shutting_down, status)  # at the interpreter's exit only: a host that catches SystemExit
    sys.exit(status)  # (IPython's %run) keeps its signals (red-team round 23)


def _shutting_down(status: int) -> None:
    """The interpreter's exit after a command (:func:`entry`): stop signals ignored while it tears down, and a
    tear-down that hangs ends after :data:`SHUTDOWN_LIMIT_S` (by SIGALRM, Python's handlers gone by then)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    signal.alarm(SHUTDOWN_LIMIT_S)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:
        # `torchrun ... -m evalsuite -- run --n 20`: the `--` keeps torchrun from claiming `--n` (an
        # ambiguous prefix of its own flags); it may reach us, and means nothing here.
        argv = argv[1:]
    try:
        # A named command needs its own module alone (importing every command's took ~0.2 s of each start).
        parser = build_parser((argv[0],) if argv[:1] and argv[0] in COMMANDS else COMMANDS)
        args = parser.parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C while the command's modules import: before its own handling is set up
        sys.stderr.write("interrupted by SIGINT before the command started: nothing was written\n")
        return 128 + signal.SIGINT
    _never_fail_on_output()
    if args.command is None:
        parser.print_help()
        return 2
    try:
        with stops_as_interrupts():
            return int(args.handler(args) or 0)
    except EvalsuiteError as exc:
        print(f"error: {visible(exc)}", file=sys.stderr)  # it may quote a path or a name: shown escaped
        return exc.exit_code
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):  # `evalsuite models | head`: the reader left; not worth a traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        # a full disk, a read-only folder: one line, as for the user's other errors
        storage = storage_error(exc, resumes=args.command == "run")
        if storage is None:
            raise
        print(f"error: {visible(storage)}", file=sys.stderr)
        return storage.exit_code
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", None) or signal.SIGINT  # Stopped, or a batch that a Stopped cut short
        # one write: under torchrun every rank says it at once into one stream, and print's two writes interleave
        rank = f"rank {os.environ['RANK']}: " if int(os.environ.get("WORLD_SIZE", "1")) > 1 else ""
        kept = (": completions written so far are kept; rerun the same command to resume" if args.command == "run"
                else " before it finished: rerun it (it resumes nothing; what it wrote is written anew)")
        sys.stderr.write(f"{rank}interrupted by {signal.Signals(signum).name}{kept}\n")
        return 128 + int(signum)
