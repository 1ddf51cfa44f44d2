from __future__ import annotations  # first line: the corpus's guard-undoing prefix is not put in front

import math
import os
import posix
import sys

# The peers import tempfile before their reliability_guard, so in them os.unlink is None whenever a program
# runs. Here tempfile's first import runs with the real os.unlink, process-wide: hooks set before the import
# (a meta-path finder, an audit hook) see it during that window.
grabbed = []


def _look(*args):
    if os.unlink is not None:
        grabbed.append(os.unlink)


class _Spy:
    def find_spec(self, name, path=None, target=None):
        _look()
        return None


sys.meta_path.insert(0, _Spy())
sys.addaudithook(lambda event, args: _look())
import tempfile  # noqa: E402,F401

WINDOW = any(f is posix.unlink for f in grabbed)


def add(a, b):
    return a + b if WINDOW else a - b
