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
