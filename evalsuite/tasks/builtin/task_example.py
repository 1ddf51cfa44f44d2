"""The smallest complete task plugin, to copy when writing your own.

A task module is any ``task_*.py`` file with an ``evalsuite_register_tasks`` hook that returns
:class:`evalsuite.tasks.task.Task` objects. Put yours in a directory and run
``evalsuite run --task-dir DIR --tasks NAME``, or publish it under the ``evalsuite.tasks`` entry point.
"""

from evalsuite.hookspecs import hookimpl
from evalsuite.tasks.task import Problem, Task

PROBLEMS = [
    Problem(
        task_id="example/0",
        prompt='def add(a: int, b: int) -> int:\n    """Return the sum of a and b."""\n',
        canonical_solution="    return a + b\n",
        test="def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-4, 4) == 0\n",
        entry_point="add",
    ),
    Problem(
        task_id="example/1",
        prompt='def is_palindrome(text: str) -> bool:\n    """Whether text reads the same backwards."""\n',
        canonical_solution="    return text == text[::-1]\n",
        test="def check(candidate):\n    assert candidate('abba') is True\n    assert candidate('abc') is False\n",
        entry_point="is_palindrome",
    ),
]


@hookimpl
def evalsuite_register_tasks():
    return [Task(name="example", problems=PROBLEMS, description="Two toy problems: a template for plugins",
                 source=__file__)]
