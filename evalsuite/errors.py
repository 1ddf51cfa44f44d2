"""User-facing errors: the CLI prints them as one clear line and exits non-zero."""


class EvalsuiteError(Exception):
    """An error caused by the user's input or environment, not by a bug.

    The CLI prints ``error: <message>`` and exits with ``exit_code``; no traceback.
    """

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ThresholdNotMet(EvalsuiteError):
    """A ``--fail-under`` gate failed: CI should go red."""

    exit_code = 3


def one_line(error: BaseException, limit: int = 300) -> str:
    """An exception as one line for a warning, a table cell or a record: its class and the first line of its
    message (at most ``limit`` characters); an :class:`EvalsuiteError`'s message alone, already written for the
    user."""
    lines = str(error).strip().splitlines()
    text = lines[0][:limit] if lines else ""
    if isinstance(error, EvalsuiteError) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
