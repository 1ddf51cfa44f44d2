"""evalsuite: measure how well language models write code.

Pipeline for every (model, task): generate completions -> execute them in a sandbox -> score pass@k -> report.

The Python API (see README, "Python API"): :func:`run` and :func:`evaluate` are ``evalsuite run`` and
``evalsuite evaluate`` as functions returning typed results (:class:`RunResult` of :class:`TaskScore`).
They are imported lazily: ``import evalsuite`` stays cheap (no torch, no datasets).
"""

from evalsuite.hookspecs import hookimpl  # (the one import plugins need)
from evalsuite.version import __version__


def run(models="reference", tasks="humaneval", **options):
    """``evalsuite run`` as a function; see :func:`evalsuite.cli.api.run`."""
    from evalsuite.cli.api import run as _run

    return _run(models=models, tasks=tasks, **options)


def evaluate(samples, *, output, task="humaneval", **options):
    """``evalsuite evaluate`` as a function; see :func:`evalsuite.cli.api.evaluate`."""
    from evalsuite.cli.api import evaluate as _evaluate

    return _evaluate(samples, output=output, task=task, **options)


_RESULT_TYPES = ("RunResult", "EvaluateResult", "TaskScore", "PassAtK", "FailUnder")


def __getattr__(name):  # the result types, imported on first use
    if name in _RESULT_TYPES:
        from evalsuite.runs import results

        return getattr(results, name)
    raise AttributeError(f"module 'evalsuite' has no attribute {name!r}")


__all__ = ["hookimpl", "__version__", "run", "evaluate", *_RESULT_TYPES]
