"""From a chat answer to the program the sandbox runs: fences, <think>, the AST sanitizer."""

from __future__ import annotations

import ast

from evalsuite.generation.extraction import extract_program, longest_parsable, sanitize, strip_thinking

PROGRAM = '''import math
from typing import List

SCALE = 2


def helper(x):
    return x * SCALE


@staticmethod
def unused():
    return 0


def solve(xs: List[int]) -> int:
    """Doc."""
    return sum(helper(x) for x in xs) + math.floor(0.5)


print(solve([1, 2]))
assert solve([1]) == 2
if __name__ == "__main__":
    solve([3])
'''


def test_keeps_imports_entry_point_and_what_it_reaches_only():
    kept = sanitize(PROGRAM, "solve")
    assert kept == ('import math\nfrom typing import List\nSCALE = 2\ndef helper(x):\n    return x * SCALE\n'
                    'def solve(xs: List[int]) -> int:\n    """Doc."""\n'
                    '    return sum(helper(x) for x in xs) + math.floor(0.5)\n')
    namespace: dict = {}
    exec(kept, namespace)  # noqa: S102 - our own literal program
    assert namespace["solve"]([1, 2]) == 6


def test_never_empties_valid_code_and_keeps_the_last_definition():
    body_only = "    return sorted(xs)\n"
    assert sanitize("x = 1\nprint(x)\n", "solve") == "x = 1\nprint(x)\n"  # no entry point: kept whole
    assert extract_program(body_only, "solve", opened_fence=True).strip() == ""  # indented body cannot parse
    twice = "def solve():\n    return 1\n\ndef solve():\n    return 2\n"
    assert sanitize(twice, "solve") == "def solve():\n    return 2\n"


def test_truncated_answer_keeps_its_longest_parsable_part():
    cut = "def solve(xs):\n    return len(xs)\n\ndef other(y):\n    if y:\n        return [1,"
    assert longest_parsable(cut).rstrip() == "def solve(xs):\n    return len(xs)"
    assert "def solve" in sanitize(cut, "solve")


def test_fenced_block_that_defines_the_entry_point_wins():
    answer = ("Sure! First a helper idea:\n```python\nx = 1\n```\nNow the solution:\n```python\n"
              "def solve(a):\n    return a + 1\n```\nUsage:\n```python\nprint(solve(1))\n```\nDone.")
    assert extract_program(answer, "solve") == "def solve(a):\n    return a + 1\n"


def test_opened_fence_of_the_response_prefix():
    raw = "def solve(a):\n    return a * 2\n```\n\nThis doubles a.\n```python\nprint(solve(2))\n```"
    assert extract_program(raw, "solve", opened_fence=True) == "def solve(a):\n    return a * 2\n"
    unterminated = "import os\ndef solve(a):\n    return a * 2\n"
    assert extract_program(unterminated, "solve", opened_fence=True) == unterminated


def test_thinking_is_removed():
    answer = "<think>Maybe def solve(): return 0?\n```python\ndef solve():\n    return 0\n```</think>" \
             "```python\ndef solve():\n    return 42\n```"
    assert extract_program(answer, "solve") == "def solve():\n    return 42\n"
    assert strip_thinking("plan...</think>answer") == "answer"
    assert strip_thinking("answer<think>never closed") == "answer"


def test_plain_code_without_fences_is_sanitized():
    program = extract_program("def solve(n):\n    return n\n\nprint(solve(3))\n", "solve")
    assert program == "def solve(n):\n    return n\n"
    ast.parse(program)
