"""From a chat answer to the program the sandbox runs: fences, <think>, the AST sanitizer."""

from __future__ import annotations

import ast

from evalsuite.protocol.extraction import extract_program, longest_parsable, sanitize, strip_thinking

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
                    '    return sum(helper(x) for x in xs) + math.floor(0.5)')
    namespace: dict = {}
    exec(kept, namespace)  # noqa: S102 - our own literal program
    assert namespace["solve"]([1, 2]) == 6


def test_evalplus_rules_first_definition_returning_functions_imports_first():
    """EvalPlus 0.3.1's sanitize: the first definition of a name wins, a function without a
    ``return`` is no definition, imports come first, and without the entry point only imports remain."""
    twice = "def solve():\n    return 1\n\ndef solve():\n    return 2\n"
    assert sanitize(twice, "solve") == "def solve():\n    return 1"
    assert sanitize("def solve(a):\n    print(a)\n", "solve") == "def solve(a):\n    print(a)"  # nothing kept
    assert sanitize("def solve():\n    return os.sep\nimport os\n", "solve") == "import os\ndef solve():\n    return os.sep"
    assert sanitize("x = 1\nprint(x)\n", "solve") == "x = 1\nprint(x)"  # nothing reached: the code itself
    assert sanitize("def f():\n    return 1  # tail\n", "f") == "def f():\n    return 1  # tail"
    body_only = "    return sorted(xs)\n"
    assert extract_program(body_only, "solve", opened_fence=True).strip() == body_only.strip()  # lines[0], as EvalPlus


def test_truncated_answer_keeps_its_longest_parsable_part():
    cut = "def solve(xs):\n    return len(xs)\n\ndef other(y):\n    if y:\n        return [1,"
    assert longest_parsable(cut).rstrip() == "def solve(xs):\n    return len(xs)"
    assert "def solve" in sanitize(cut, "solve")


def test_fenced_block_that_defines_the_entry_point_wins():
    answer = ("Sure! First a helper idea:\n```python\nx = 1\n```\nNow the solution:\n```python\n"
              "def solve(a):\n    return a + 1\n```\nUsage:\n```python\nprint(solve(1))\n```\nDone.")
    assert extract_program(answer, "solve") == "def solve(a):\n    return a + 1"


def test_opened_fence_of_the_response_prefix():
    raw = "def solve(a):\n    return a * 2\n```\n\nThis doubles a.\n```python\nprint(solve(2))\n```"
    assert extract_program(raw, "solve", opened_fence=True) == "def solve(a):\n    return a * 2"
    unterminated = "import os\ndef solve(a):\n    return a * 2\n"
    assert extract_program(unterminated, "solve", opened_fence=True) == unterminated.strip()


def test_thinking_is_removed():
    answer = "<think>Maybe def solve(): return 0?\n```python\ndef solve():\n    return 0\n```</think>" \
             "```python\ndef solve():\n    return 42\n```"
    assert extract_program(answer, "solve") == "def solve():\n    return 42"
    assert strip_thinking("plan...</think>answer") == "answer"
    assert strip_thinking("answer<think>never closed") == "answer"


def test_plain_code_without_fences_is_sanitized():
    program = extract_program("def solve(n):\n    return n\n\nprint(solve(3))\n", "solve")
    assert program == "def solve(n):\n    return n"
    ast.parse(program)


def test_same_programs_as_evalplus_own_sanitize(evalplus_sanitize):
    """Checked against EvalPlus 0.3.1's own tree-sitter sanitizer (the installed package or its wheel)."""
    cases = [PROGRAM, "x = 1\nprint(x)\n", "def solve():\n    return 1\n\ndef solve():\n    return 2\n",
             "def solve(xs):\n    return len(xs)\n\ndef other(y):\n    if y:\n        return [1,",
             "def solve(a):\n    print(a)\n", "class A:\n    pass\ndef solve():\n    return A()\n",
             "def solve():\n    return 1\n    # trailing\n\nx=1\n", "X = 1  # c\ndef solve():\n    return X\n",
             "def solve(a):\n    return a\n```\n\nsome prose", "", "    return sorted(xs)\n"]
    for code in cases:
        assert sanitize(code, "solve") == evalplus_sanitize(code, "solve"), code


# SmolLM2-135M-Instruct's greedy answer to HumanEval/38 under the evalplus preset (float32, H100): the
# code before its main() does not parse, so the program depends on where the answer was cut.
ANSWER_38 = ('def encode_cyclic(s: str):\n    """\n    returns encoded string by cycling groups of three characters.\n'
             '    """\n    return "".join(map(str.makemap_rborder, [\n        (3 * i + 3) for i in range((len(s) + 2) // 3)])\n'
             '    ))\n\ndef decode_cyclic(s: str):\n    """\n    takes as input string encoded with encode_cyclic function. '
             'Returns decoded string.\n    """\n    return "".join(map(str.makemap_rborder, [\n        (3 * i + 3) for i in '
             'range((len(s) + 2) // 3)])\n    ])\n')
MAIN_38 = ('\ndef main():\n    print(f"Encoding: {encode_cyclic(b\'abcdef\')}")\n    print(f"Decoding: '
           '{decode_cyclic(b\'abcdef\')}")\n\nif __name__ == "__main__":\n    main()\n```')


def test_answer_cut_where_evalplus_cuts_it_sanitizes_as_evalplus_does():
    """EvalPlus stops at "\\ndef main(": cut there (the evalplus preset's stops), the longest parsable run is the
    first function's head and docstring, EvalPlus's own program; run on to the fence, it is main's block."""
    from evalsuite.protocol.presets import load_preset

    stops = load_preset("evalplus").prompt["instruct_stop_sequences"]
    answer = ANSWER_38 + MAIN_38
    cut = min(answer.find(s) + len(s) for s in stops if s in answer)
    evalplus_program = 'def encode_cyclic(s: str):\n    """\n    returns encoded string by cycling groups of three characters.\n    """'
    assert extract_program(answer[:cut], "decode_cyclic", opened_fence=True) == evalplus_program
    assert extract_program(answer, "decode_cyclic", opened_fence=True).startswith("\ndef main():")


def test_evalplus_sanitizes_the_cut_answer_to_the_same_program(evalplus_sanitize):
    """EvalPlus's own sanitizer on the answer as EvalPlus cut it (before "\ndef main(")."""
    assert evalplus_sanitize(ANSWER_38, "decode_cyclic") == \
        extract_program(ANSWER_38 + "\ndef main(", "decode_cyclic", opened_fence=True)
