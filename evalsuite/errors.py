"""User-facing errors: the CLI prints them as one clear line and exits non-zero."""

import errno


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


# A folder the command writes that cannot take it: the machine's state, not a bug (no traceback)
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG, errno.EIO}


def storage_error(error: BaseException, folders: str = "", resumes: bool = True) -> "EvalsuiteError | None":
    """A write that failed for the disk (full, over quota, read-only, no permission) as one line naming the file
    (or, where the system names none, the ``folders`` written) and what to do; None for anything else. What was
    written before it stays: ``resumes``, a run's rows, appended as they are made, are reused by the rerun."""
    if not isinstance(error, OSError) or error.errno not in _STORAGE_ERRNOS:
        return None
    where = f": {error.filename}" if error.filename else f" writing under {folders}" if folders else ""
    fix = ("make room" if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) else "check the disk"
           if error.errno == errno.EIO else "make it writable or choose another folder")
    then = ("what was written before is kept: " + fix + ", then rerun the same command to resume" if resumes
            else fix + ", then rerun the command")
    return EvalsuiteError(f"{error.strerror or error}{where} ({then})", exit_code=1)


def one_line(error: BaseException, limit: int = 300) -> str:
    """An exception as one line for a warning, a table cell or a record: its class and the first line of its
    message (at most ``limit`` characters); an :class:`EvalsuiteError`'s message alone, already written for the
    user."""
    lines = str(error).strip().splitlines()
    text = lines[0][:limit] if lines else ""
    if isinstance(error, EvalsuiteError) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
