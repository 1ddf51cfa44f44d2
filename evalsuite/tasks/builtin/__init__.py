"""Built-in task plugins. Each ``task_*.py`` module here is a plugin, found by the same convention as
modules in a user's ``--task-dir``; see ``task_example.py`` for the smallest complete one."""
