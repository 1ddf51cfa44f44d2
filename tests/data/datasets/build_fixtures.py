"""Writes the small local dataset files the tests load, each in its hub copy's exact format (field names, types,
test code shape). The problems are our own, with ids outside the real datasets' ranges; the expected outputs of
the MBPP+ / HumanEval+ style tests are computed here by running our canonical solutions, as EvalPlus does.

Run from the repository root: python tests/data/datasets/build_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent

# -- MBPP, config "full": task_id, text, code, test_list, test_setup_code, challenge_test_list ------------------
# The hub's code uses "\r\n" line endings and often tabs; so do these.
MBPP_FULL = [
    {"task_id": 1001, "text": "Write a function to count the vowels in a given string.",
     "code": "def count_vowels(s):\r\n  return sum(1 for ch in s.lower() if ch in 'aeiou')",
     "test_list": ["assert count_vowels('Hello') == 2", "assert count_vowels('xyz') == 0",
                   "assert count_vowels('AEIOU aeiou') == 10"],
     "test_setup_code": "", "challenge_test_list": []},
    {"task_id": 1002, "text": "Write a function to return the sorted list of distinct words of a sentence.",
     "code": "def distinct_words(sentence):\r\n\twords = set()\r\n\tfor word in sentence.split():\r\n"
             "\t\tif word:\r\n\t\t\twords.add(word)\r\n\treturn sorted(words)",
     "test_list": ["assert distinct_words('b a b') == sorted(set(words_of('b a b')))",
                   "assert distinct_words('') == []",
                   "assert distinct_words('one two  one') == ['one', 'two']"],
     "test_setup_code": "def words_of(text):\n    return text.split()",
     "challenge_test_list": ["assert distinct_words('x ' * 1000) == ['x']"]},
    {"task_id": 1003, "text": "Write a function to find the n-th Fibonacci number, with fib(0) = 0.",
     "code": "def fib(n):\r\n  if n < 2:\r\n    return n\r\n  return fib(n - 1) + fib(n - 2)",
     "test_list": ["assert fib(0) == 0", "assert fib(1) == 1", "assert fib(10) == 55"],
     "test_setup_code": "", "challenge_test_list": []},
    {"task_id": 1004, "text": "Write a function to merge two sorted lists into one sorted list.",
     "code": "import heapq\r\ndef merge_sorted(a, b):\r\n  return list(heapq.merge(a, b))",
     "test_list": ["assert merge_sorted([1, 4], [2, 3]) == [1, 2, 3, 4]", "assert merge_sorted([], [5]) == [5]",
                   "assert merge_sorted([1, 1], [1]) == [1, 1, 1]"],
     "test_setup_code": "", "challenge_test_list": []},
]

# -- MBPP, config "sanitized": source_file, task_id, prompt, code, test_imports, test_list ----------------------
MBPP_SANITIZED = [
    {"source_file": "Benchmark Questions Verification V2.ipynb", "task_id": 1101,
     "prompt": "Write a function to find the area of a circle given its radius.",
     "code": "import math\ndef circle_area(r):\n    return math.pi * r * r",
     "test_imports": ["import math"],
     "test_list": ["assert math.isclose(circle_area(1.0), 3.141592653589793, rel_tol=1e-9)",
                   "assert math.isclose(circle_area(2), 12.566370614359172, rel_tol=1e-9)",
                   "assert circle_area(0) == 0"]},
    {"source_file": "Benchmark Questions Verification V2.ipynb", "task_id": 1102,
     "prompt": "Write a python function to check whether a string is a palindrome, ignoring case.",
     "code": "def is_palindrome(text):\n    text = text.lower()\n    return text == text[::-1]",
     "test_imports": [],
     "test_list": ["assert is_palindrome('Abba') == True", "assert is_palindrome('abc') == False",
                   "assert is_palindrome('') == True"]},
    {"source_file": "Benchmark Questions Verification V2.ipynb", "task_id": 1103,
     "prompt": "Write a function to return the elements shared by two tuples.",
     "code": "def shared_elements(a, b):\n    return tuple(set(a) & set(b))",
     "test_imports": [],
     "test_list": ["assert set(shared_elements((3, 4, 5), (5, 4, 10))) == set((4, 5))",
                   "assert set(shared_elements((1,), (2,))) == set()",
                   "assert set(shared_elements((7, 7), (7,))) == set((7,))"]},
]

# -- MBPP+: task_id, code, prompt, source_file, test_imports, test_list, test ------------------------------------
MBPP_PLUS_TEST_HEAD = '''import numpy as np
from math import inf

def is_floats(x) -> bool:
    # check if it is float; List[float]; Tuple[float]
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


def assertion(out, exp, atol):
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if out != exp and atol != 0:
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert out == exp, f"out: {out}, exp: {exp}"

'''
MBPP_PLUS = [
    {"task_id": 1201, "prompt": "Write a function to remove every occurrence of a character from a string.",
     "code": "def remove_char(s, ch):\n    return ''.join(c for c in s if c != ch)",
     "source_file": "Benchmark Questions Verification V2.ipynb", "test_imports": [],
     "test_list": ["assert remove_char('hello', 'l') == 'heo'", "assert remove_char('aaa', 'a') == ''",
                   "assert remove_char('abc', 'z') == 'abc'"],
     "inputs": [["hello", "l"], ["aaa", "a"], ["abc", "z"], ["", "x"], ["mississippi", "s"], ["a\nb", "\n"]]},
    {"task_id": 1202, "prompt": "Write a function to compute the mean of a list of numbers.",
     "code": "def mean(xs):\n    return sum(xs) / len(xs)",
     "source_file": "Benchmark Questions Verification V2.ipynb", "test_imports": [],
     "test_list": ["assert mean([1, 2, 3]) == 2.0", "assert mean([5]) == 5.0", "assert mean([0.1, 0.2]) == 0.15000000000000002"],
     "inputs": [[[1, 2, 3]], [[5]], [[0.1, 0.2]], [[-1, 1]], [[1e9, 3]], [[0.3, 0.3, 0.3]]]},
    {"task_id": 1203, "prompt": "Write a function to find the length of the hypotenuse of a right triangle.",
     "code": "import math\ndef hypotenuse(a, b):\n    return math.sqrt(a * a + b * b)",
     "source_file": "Benchmark Questions Verification V2.ipynb", "test_imports": ["import math"],
     "test_list": ["assert math.isclose(hypotenuse(3, 4), 5.0)", "assert math.isclose(hypotenuse(5, 12), 13.0)",
                   "assert hypotenuse(0, 0) == 0.0"],
     "inputs": [[3, 4], [5, 12], [0, 0], [1, 1], [1e-3, 2e-3], [7, 24]]},
]

# -- HumanEval+: task_id, prompt, canonical_solution, entry_point, test -----------------------------------------
HUMANEVAL_PLUS_TEST_HEAD = '''

import numpy as np

def is_floats(x) -> bool:
    # check if it is float; List[float]; Tuple[float]
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


def assertion(out, exp, atol):
    exact_match = out == exp

    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if not exact_match and atol != 0:
        np.testing.assert_allclose(out, exp, atol=atol)
    else:
        assert exact_match


def check(candidate):
    inputs = {inputs!r}
    results = {results!r}
    for i, (inp, exp) in enumerate(zip(inputs, results)):
        assertion(candidate(*inp), exp, 0)
'''
HUMANEVAL_PLUS = [
    {"task_id": "HumanEval/1000", "entry_point": "running_max",
     "prompt": 'from typing import List\n\n\ndef running_max(numbers: List[int]) -> List[int]:\n'
               '    """ Return the list of the largest element seen so far at each position.\n'
               '    >>> running_max([1, 3, 2, 5])\n    [1, 3, 3, 5]\n    """\n',
     "canonical_solution": "    out, best = [], None\n    for x in numbers:\n"
                           "        best = x if best is None else max(best, x)\n        out.append(best)\n    return out\n",
     "inputs": [[[1, 3, 2, 5]], [[]], [[-5, -7, -1]], [[2, 2, 2]], [list(range(50, 0, -1))]]},
    {"task_id": "HumanEval/1001", "entry_point": "mean_absolute_deviation_around",
     "prompt": 'from typing import List\n\n\ndef mean_absolute_deviation_around(numbers: List[float], centre: float) -> float:\n'
               '    """ The mean of |x - centre| over the numbers.\n'
               '    >>> mean_absolute_deviation_around([1.0, 3.0], 2.0)\n    1.0\n    """\n',
     "canonical_solution": "    return sum(abs(x - centre) for x in numbers) / len(numbers)\n",
     "inputs": [[[1.0, 3.0], 2.0], [[0.1, 0.2, 0.3], 0.2], [[5.0], 0.0], [[-1.5, 2.5, 1e-7], 0.3]]},
    {"task_id": "HumanEval/1002", "entry_point": "count_upper_words",
     "prompt": 'def count_upper_words(text: str) -> int:\n'
               '    """ Count the words of text written entirely in upper case letters.\n'
               '    >>> count_upper_words("NASA and the ESA")\n    2\n    """\n',
     "canonical_solution": "    return sum(1 for word in text.split() if word.isalpha() and word.isupper())\n",
     "inputs": [["NASA and the ESA"], [""], ["A b C"], ["ABC1 DEF"], ["x" * 100]]},
]


def run_canonical(code: str, name: str, inputs: list) -> list:
    namespace: dict = {}
    exec(code, namespace)
    return [namespace[name](*args) for args in inputs]


def write_jsonl(name: str, rows: list[dict]) -> None:
    (HERE / name).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def main() -> None:
    write_jsonl("mbpp_full_test.jsonl", MBPP_FULL)
    write_jsonl("mbpp_sanitized_test.jsonl", MBPP_SANITIZED)
    rows = []
    for problem in MBPP_PLUS:
        row = {k: v for k, v in problem.items() if k != "inputs"}
        name = row["code"].split("def ", 1)[1].split("(", 1)[0]
        results = run_canonical(row["code"], name, problem["inputs"])
        row["test"] = (MBPP_PLUS_TEST_HEAD + f"inputs = {problem['inputs']!r}\nresults = {results!r}\n"
                       f"for i, (inp, exp) in enumerate(zip(inputs, results)):\n    assertion({name}(*inp), exp, 0)\n")
        rows.append(row)
    write_jsonl("mbppplus_test.jsonl", rows)
    rows = []
    for problem in HUMANEVAL_PLUS:
        row = {k: v for k, v in problem.items() if k != "inputs"}
        results = run_canonical(row["prompt"] + row["canonical_solution"], row["entry_point"], problem["inputs"])
        row["test"] = HUMANEVAL_PLUS_TEST_HEAD.format(inputs=problem["inputs"], results=results)
        rows.append(row)
    write_jsonl("humanevalplus_test.jsonl", rows)


if __name__ == "__main__":
    main()
