"""The comparisons with the peers' harnesses live in tests/ (the tests run them on slices); the benchmark
scripts of the same names run them whole. ``run_from_tests(name)`` runs ``tests/<name>.py`` as a script."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"


def tests_on_path() -> None:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


def run_from_tests(name: str) -> None:
    tests_on_path()
    sys.argv[0] = str(TESTS / f"{name}.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
