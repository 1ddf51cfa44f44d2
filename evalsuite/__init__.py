"""evalsuite: measure how well language models write code.

Pipeline for every (model, task): generate completions -> execute them in a sandbox -> score pass@k -> report.
"""

__version__ = "0.1.0"

from evalsuite.hookspecs import hookimpl  # noqa: E402  (the one import plugins need)

__all__ = ["hookimpl", "__version__"]
