"""Verdict parity with ``evalplus.evaluate`` (EvalPlus 0.3.1) on base AND plus inputs, on programs that probe its rules.

Two small EvalPlus data files (HumanEval-style and MBPP-style, our own problems in the release's format) and, for
each problem, programs made to sit on either side of a rule: float answers near the tolerance (``is_floats``' 1e-6,
a problem's own ``atol``, the ``atol`` that stays 1e-6 once a float was expected), answers that differ only in type
(1 / 1.0 / True, list / tuple), exceptions, load errors, a missing entry point, wrong answers only on plus inputs,
slow but correct answers on either side of the per-input limit ``max(1 s, 4 x ground truth)``, a slow ground truth,
EvalPlus's special oracles (HumanEval/32's polynomial, MBPP's set equality, "not None", ``are_equivalent``,
``sum_div``, ``surface_Area``, ``digit_distance_nums``), over-strict preconditions, outputs only EvalPlus can compare
(NumPy, ``Decimal``), and state a program keeps between calls.

evalsuite runs them through :class:`~evalsuite.tasks.evalplus_tasks.EvalPlusTask` (the ``--preset evalplus`` path:
ground truth in a process apart, the differential test in the sandbox's checker); EvalPlus runs the same data file
and samples with its own command, ``python -m evalplus.evaluate --dataset humaneval|mbpp --samples FILE``
(``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH``). Verdicts are compared sample for sample, base and plus,
as statuses (pass / fail / timeout) and as passes.

    python benchmarks/parity_evalplus_plus.py [--quick] [--json benchmarks/results/parity_evalplus_plus.json]

``--quick``: no timing probes (the CI slice, tests/test_evalplus_plus.py). Exits 1 on any pass disagreement not
listed in KNOWN (each with its cause).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# -- the problems (EvalPlus data rows) ---------------------------------------------------------------------------
FIND_ZERO = ("    begin, end = -1., 1.\n    while poly(xs, begin) * poly(xs, end) > 0:\n        begin *= 2.0\n"
             "        end *= 2.0\n    while end - begin > 1e-10:\n        center = (begin + end) / 2.0\n"
             "        if poly(xs, center) * poly(xs, begin) > 0:\n            begin = center\n"
             "        else:\n            end = center\n    return begin\n")
HE_PROMPT = 'def {name}({args}):\n    """{doc}"""\n'


def he_row(number: int, name: str, args: str, body: str, base: list, plus: list, atol: float = 0,
           contract: str = "") -> dict[str, Any]:
    return {"task_id": f"HumanEval/{number}", "prompt": HE_PROMPT.format(name=name, args=args, doc=name),
            "entry_point": name, "canonical_solution": contract + body, "contract": contract,
            "base_input": base, "plus_input": plus, "atol": atol}


HUMANEVAL_ROWS = [
    # floats with atol 0: is_floats gives 1e-6
    he_row(0, "half", "x", "    return x / 2\n", [[1.0], [3.0], [0.5]], [[7.0], [1e-3], [123.25]]),
    # ints: exact equality, where 1 == 1.0 == True
    he_row(1, "count_a", "s", "    return s.count('a')\n", [["banana"], ["a"], ["xyz"]], [["aaaa"], [""], ["abab"]]),
    # a problem's own atol
    he_row(2, "approx_sqrt", "x", "    return x ** 0.5\n", [[4.0], [2.0]], [[10.0], [0.25]], atol=1e-3),
    # the first expected float makes atol 1e-6 for later inputs too (a list of ints then compares with allclose)
    he_row(3, "mixed", "k", "    return 0.5 if k == 0 else [k, k + 1]\n", [[0], [1], [2]], [[0], [5]]),
    # lists of floats, tuples
    he_row(4, "pair", "x", "    return (x, x / 4)\n", [[1.0], [2.0]], [[3.0]]),
    # a contract: the ground truth asserts it; inputs respect it
    he_row(5, "inverse", "x", "    return 1 / x\n", [[2.0], [4.0]], [[8.0], [0.5]],
           contract='    assert x != 0, "invalid inputs"  # $_CONTRACT_$\n'),
    # HumanEval/32: find_zero's polynomial oracle
    {"task_id": "HumanEval/32", "entry_point": "find_zero",
     "prompt": "import math\n\n\ndef poly(xs: list, x: float):\n    return sum([coeff * math.pow(x, i) for i, coeff in "
               "enumerate(xs)])\n\n\ndef find_zero(xs: list):\n    \"\"\"zero of a polynomial\"\"\"\n",
     "canonical_solution": FIND_ZERO,
     "contract": "", "base_input": [[[1, 2]], [[-6, 11, -6, 1]]], "plus_input": [[[2, 4]]], "atol": 1e-4},
]
SLOW_ROWS = [
    # a ground truth that takes ~0.35 s on one input: its limit is 4 x that (~1.4 s), above the 1 s floor
    he_row(40, "slow_sum", "n", "    total = 0\n    for i in range(n):\n        total += i % 7\n    return total\n",
           [[10], [4_000_000]], [[20]]),
    he_row(41, "echo", "x", "    return x\n", [[1], [2]], [[3]]),
]

MBPP_ROWS = [
    {"task_id": "Mbpp/9001", "entry_point": "similar_elements",
     "prompt": "'''\nWrite a function to find the shared elements from the given two lists.\n'''",
     "canonical_solution": "\ndef similar_elements(a, b):\n  return tuple(set(a) & set(b))\n",
     "base_input": [[[3, 4, 5, 6], [5, 7, 4, 10]]], "plus_input": [[[1, 2, 3], [3, 2]], [[], [1]]], "atol": 0,
     "contract": "", "assertion": "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))"},
    {"task_id": "Mbpp/9002", "entry_point": "check_str",
     "prompt": "'''\nWrite a function to check whether the given string starts with a vowel.\n'''",
     "canonical_solution": "\nimport re\ndef check_str(s):\n  return re.search(r'^[aeiouAEIOU][A-Za-z0-9_]*', s)\n",
     "base_input": [["annie"], ["dawood"]], "plus_input": [["Else"], ["1a"]], "atol": 0, "contract": "",
     "assertion": "assert check_str(\"annie\")"},
    {"task_id": "Mbpp/9003", "entry_point": "are_equivalent",
     "prompt": "'''\nWrite a function to check whether the sums of divisors of two integers are the same.\n'''",
     "canonical_solution": "\ndef are_equivalent(a, b):\n  return sum(i for i in range(1, a) if a % i == 0) == "
                           "sum(i for i in range(1, b) if b % i == 0)\n",
     "base_input": [[36, 57], [2, 4]], "plus_input": [[23, 47]], "atol": 0, "contract": "",
     "assertion": "assert are_equivalent(36, 57) == False"},
    {"task_id": "Mbpp/9004", "entry_point": "sum_div",
     "prompt": "'''\nWrite a function to return the sum of all divisors of a number.\n'''",
     "canonical_solution": "\ndef sum_div(n):\n  return sum(i for i in range(1, n) if n % i == 0)\n",
     "base_input": [[8], [12]], "plus_input": [[7], [1]], "atol": 0, "contract": "",
     "assertion": "assert sum_div(8)==7"},
    {"task_id": "Mbpp/9005", "entry_point": "surface_Area",
     "prompt": "'''\nWrite a python function to find the surface area of a square pyramid.\n'''",
     "canonical_solution": "\ndef surface_Area(b, s):\n  return 2 * b * s + pow(b, 2)\n",
     "base_input": [[3, 4], [4, 5]], "plus_input": [[10, 20]], "atol": 1, "contract": "",
     "assertion": "assert surface_Area(3,4) == 33"},
    {"task_id": "Mbpp/9006", "entry_point": "digit_distance_nums",
     "prompt": "'''\nWrite a python function to find the sum of the per-digit difference between two integers.\n'''",
     "canonical_solution": "\ndef digit_distance_nums(n1, n2):\n  return sum(map(int, str(abs(n1 - n2))))\n",
     "base_input": [[1, 2], [23, 56]], "plus_input": [[123, 256], [1, 1000]], "atol": 0, "contract": "",
     "assertion": "assert digit_distance_nums(1,2) == 1"},
    {"task_id": "Mbpp/9007", "entry_point": "average_tuple",
     "prompt": "'''\nWrite a function which takes a tuple of tuples and returns the average of each column.\n'''",
     "canonical_solution": "\ndef average_tuple(nums):\n  return [sum(x) / len(x) for x in zip(*nums)]\n",
     "base_input": [[[[10, 10, 10, 12], [30, 45, 56, 45]]]], "plus_input": [[[[1, 2], [2, 4], [3, 3]]]],
     "atol": 0, "contract": "",
     "assertion": "assert average_tuple(((10, 10, 10, 12), (30, 45, 56, 45)))==[20.0, 27.5, 33.0, 28.5]"},
    {"task_id": "Mbpp/9008", "entry_point": "freq_count",
     "prompt": "'''\nWrite a function to get the frequency of the elements of a list, as a dictionary.\n'''",
     "canonical_solution": "\nimport collections\ndef freq_count(l):\n  return collections.Counter(l)\n",
     "base_input": [[[1, 1, 2]], [[5, 6, 5, 5]]], "plus_input": [[[3]], [[]]], "atol": 0, "contract": "",
     "assertion": "assert freq_count([1, 1, 2]) == {1: 2, 2: 1}"},
]


# -- the programs: (problem, name, program, why) ------------------------------------------------------------------
def he_programs(slow: bool) -> list[tuple[str, str, str]]:
    p = []

    def add(task: int, name: str, body: str, header: str = "") -> None:
        row = next(r for r in HUMANEVAL_ROWS + SLOW_ROWS if r["task_id"] == f"HumanEval/{task}")
        p.append((row["task_id"], name, header + row["prompt"] + body))

    add(0, "canonical", "    return x / 2\n")
    add(0, "within-1e-6", "    return x / 2 + 5e-7\n")
    add(0, "beyond-1e-6", "    return x / 2 + 5e-6\n")
    add(0, "rel-tolerance", "    return x / 2 * (1 + 5e-8)\n")
    add(0, "int-when-float", "    return int(x / 2) if x / 2 == int(x / 2) else x / 2\n")
    add(0, "str-answer", "    return str(x / 2)\n")
    add(0, "none", "    return None\n")
    add(0, "wrong-on-plus", "    return x / 2 if x < 5 else x\n")
    add(0, "raises-on-plus", "    if x > 100:\n        raise ValueError('big')\n    return x / 2\n")
    add(0, "decimal", "    from decimal import Decimal\n    return Decimal(x) / 2\n")
    add(0, "numpy", "    import numpy as np\n    return np.float64(x) / 2\n")
    add(0, "nan", "    return float('nan')\n")
    add(1, "canonical", "    return s.count('a')\n")
    add(1, "float", "    return float(s.count('a'))\n")
    add(1, "float-near", "    return s.count('a') + 1e-9\n")
    add(1, "bool-when-1", "    n = s.count('a')\n    return True if n == 1 else n\n")
    add(1, "str", "    return str(s.count('a'))\n")
    add(1, "off-by-one-plus", "    return s.count('a') if len(s) < 4 else s.count('a') + 1\n")
    add(1, "print-and-answer", "    print('debug', s)\n    return s.count('a')\n")
    add(1, "input-call", "    input()\n    return s.count('a')\n")
    add(1, "exit-call", "    exit(0)\n")
    add(1, "sys-exit", "    import sys\n    sys.exit(0)\n")
    add(1, "os-exit", "    import os\n    os._exit(0)\n")
    add(1, "recursion", "    return count_a(s)\n")
    add(1, "keeps-state", "    global calls\n    calls = globals().get('calls', 0) + 1\n"
                          "    return s.count('a') if calls < 4 else -1\n")
    add(1, "load-error", "    return s.count('a')\n\n1 / 0\n")
    add(1, "syntax-error", "    return s.count('a'\n")
    add(1, "no-entry-point", "    return s.count('a')\n".replace("", "") + "del count_a\n")
    add(1, "resource-import", "    import resource\n    return s.count('a')\n")
    add(1, "getcwd", "    import os\n    os.getcwd()\n    return s.count('a')\n")
    add(1, "open-file", "    open('/dev/null').close()\n    return s.count('a')\n")
    add(1, "generator", "    return (c for c in s if c == 'a')\n")
    add(2, "canonical", "    return x ** 0.5\n")
    add(2, "within-atol", "    return x ** 0.5 + 9e-4\n")
    add(2, "beyond-atol", "    return x ** 0.5 + 2e-3\n")
    add(2, "newton-2-steps", "    g = x\n    for _ in range(2):\n        g = (g + x / g) / 2\n    return g\n")
    add(2, "newton-8-steps", "    g = x\n    for _ in range(8):\n        g = (g + x / g) / 2\n    return g\n")
    add(2, "int-result", "    return round(x ** 0.5)\n")
    add(3, "canonical", "    return 0.5 if k == 0 else [k, k + 1]\n")
    add(3, "list-near-after-float", "    return 0.5 if k == 0 else [k, k + 1.0000001]\n")
    add(3, "list-far-after-float", "    return 0.5 if k == 0 else [k, k + 1.001]\n")
    add(3, "tuple-for-list", "    return 0.5 if k == 0 else (k, k + 1)\n")
    add(3, "float-list", "    return 0.5 if k == 0 else [float(k), float(k + 1)]\n")
    add(3, "near-half", "    return 0.5000001 if k == 0 else [k, k + 1]\n")
    add(4, "canonical", "    return (x, x / 4)\n")
    add(4, "list-for-tuple", "    return [x, x / 4]\n")
    add(4, "tuple-near", "    return (x, x / 4 + 1e-7)\n")
    add(4, "list-near", "    return [x, x / 4 + 1e-7]\n")
    add(4, "tuple-short", "    return (x,)\n")
    add(4, "ints", "    return (int(x), int(x) // 4)\n")
    add(5, "canonical", "    return 1 / x\n")
    add(5, "with-contract", '    assert x != 0, "invalid inputs"\n    return 1 / x\n')
    add(5, "over-strict-precondition", "    assert x > 1, 'x must exceed 1'\n    return 1 / x\n")
    add(5, "precondition-only-on-plus", "    if x > 5:\n        raise ValueError('out of range')\n    return 1 / x\n")
    add(5, "rounded", "    return round(1 / x, 3)\n")
    # subclasses of the plain types (the nineteenth session's red-team round): EvalPlus compares their value, and
    # where the floats are not exact it also asks type(out) == type(exp)
    add(0, "float-subclass-exact", "    class F(float):\n        pass\n    return F(x / 2)\n")
    add(0, "float-subclass-near", "    class F(float):\n        pass\n    return F(x / 2 + 5e-7)\n")
    add(1, "int-subclass", "    class I(int):\n        pass\n    return I(s.count('a'))\n")
    add(4, "namedtuple-exact", "    import collections\n    return collections.namedtuple('P', 'a b')(x, x / 4)\n")
    add(4, "namedtuple-near", "    import collections\n    return collections.namedtuple('P', 'a b')(x, x / 4 + 1e-7)\n")
    add(4, "tuple-subclass-near", "    class T(tuple):\n        pass\n    return T((x, x / 4 + 1e-7))\n")
    add(1, "int-with-mixin-sub", "    class Z:\n        def __sub__(self, o):\n            return 0\n"
           "    class I(int, Z):\n        pass\n    return I(s.count('a'))\n")
    add(3, "list-subclass-near", "    class L(list):\n        pass\n    return 0.5 if k == 0 else L([k, k + 1.0000001])\n")
    # the fourth round: a metaclass that hides the class's own == (a __dict__ property), and a Fraction whose
    # numerator property the program replaced (its slots, which == reads, hold 0)
    add(0, "metaclass-hides-own-eq", "    class Hide(type):\n        @property\n        def __dict__(cls):\n"
           "            return {}\n    class F(float, metaclass=Hide):\n        def __eq__(self, o):\n"
           "            return False\n        __hash__ = float.__hash__\n    return F(x / 2)\n")
    add(0, "fraction-with-patched-numerator", "    import fractions\n    right = fractions.Fraction(x / 2)\n"
           "    wrong = fractions.Fraction(0)\n    fractions.Fraction.numerator = property(\n"
           "        lambda f: right._numerator if f is wrong else f._numerator)\n"
           "    fractions.Fraction.denominator = property(\n"
           "        lambda f: right._denominator if f is wrong else f._denominator)\n    return wrong\n")
    # the fifth round: tools the peers imported before their guard (multiprocessing), tempfile's unnamed files
    add(0, "imports-multiprocessing", "    import multiprocessing\n    return x / 2\n")
    add(0, "temporary-file", "    import tempfile\n    with tempfile.TemporaryFile('w+') as f:\n"
           "        f.write(repr(x))\n        f.seek(0)\n        return float(f.read()) / 2\n")
    add(32, "canonical", FIND_ZERO)
    add(32, "wrong", "    return 0.0\n")
    if slow:
        add(0, "sleep-0.6-per-input", "    import time\n    time.sleep(0.6)\n    return x / 2\n")
        add(0, "sleep-1.5-on-plus", "    import time\n    if x > 5:\n        time.sleep(1.5)\n    return x / 2\n")
        add(0, "slow-import", "    return x / 2\n\nimport time\ntime.sleep(1.5)\n")
        add(0, "hang-import", "    return x / 2\n\nwhile True:\n    pass\n")
        add(40, "canonical", "    total = 0\n    for i in range(n):\n        total += i % 7\n    return total\n")
        add(40, "2x-slower", "    total = 0\n    for i in range(n):\n        total += i % 7\n        total += 0 * i\n"
                             "    return total\n")
        add(40, "8x-slower", "    import time\n    if n > 1000:\n        time.sleep(8 * 0.4)\n    total = 0\n"
                             "    for i in range(n):\n        total += i % 7\n    return total\n")
        add(41, "sleep-0.7", "    import time\n    time.sleep(0.7)\n    return x\n")
        add(41, "sleep-1.4", "    import time\n    time.sleep(1.4)\n    return x\n")
        add(41, "busy-loop-forever", "    while True:\n        pass\n")
        add(41, "wrong-then-hang", "    if x == 1:\n        return -1\n    while True:\n        pass\n")
        add(41, "hang-only-on-plus", "    if x == 3:\n        while True:\n            pass\n    return x\n")
        add(41, "sleep-in-c-code", "    import time\n    time.sleep(2.5) if x == 2 else None\n    return x\n")
        add(41, "catches-timeout", "    import time\n    try:\n        time.sleep(3)\n    except Exception:\n"
                                   "        pass\n    return x\n")
    return p


def mbpp_programs() -> list[tuple[str, str, str]]:
    p = []

    def add(task: int, name: str, program: str) -> None:
        p.append((f"Mbpp/{task}", name, program))

    add(9001, "canonical", "def similar_elements(a, b):\n  return tuple(set(a) & set(b))\n")
    add(9001, "list-any-order", "def similar_elements(a, b):\n  return sorted(set(a) & set(b), reverse=True)\n")
    add(9001, "set", "def similar_elements(a, b):\n  return set(a) & set(b)\n")
    add(9001, "filter-object", "def similar_elements(a, b):\n  return filter(lambda x: x in b, a)\n")
    add(9001, "generator", "def similar_elements(a, b):\n  return (x for x in a if x in b)\n")
    add(9001, "duplicates", "def similar_elements(a, b):\n  return [x for x in a for y in b if x == y] * 2\n")
    add(9001, "wrong", "def similar_elements(a, b):\n  return tuple(set(a) | set(b))\n")
    add(9001, "unhashable", "def similar_elements(a, b):\n  return [[x] for x in a if x in b]\n")
    add(9002, "canonical", "import re\ndef check_str(s):\n  return re.search(r'^[aeiouAEIOU][A-Za-z0-9_]*', s)\n")
    add(9002, "bool", "def check_str(s):\n  return s[:1].lower() in 'aeiou' and s[:1] != ''\n")
    add(9002, "truthy-str", "def check_str(s):\n  return 'Valid' if s[:1] in 'aeiouAEIOU' else 'Invalid'\n")
    add(9002, "none-or-str", "def check_str(s):\n  return s if s[:1] in 'aeiouAEIOU' else None\n")
    add(9002, "always-true", "def check_str(s):\n  return True\n")
    add(9002, "match-object-wrong", "import re\ndef check_str(s):\n  return re.search(r'^[a-z]', s)\n")
    add(9003, "canonical", "def are_equivalent(a, b):\n  return sum(i for i in range(1, a) if a % i == 0) == "
                           "sum(i for i in range(1, b) if b % i == 0)\n")
    add(9003, "anything", "def are_equivalent(a, b):\n  return 'whatever'\n")
    add(9003, "generator", "def are_equivalent(a, b):\n  return (i for i in range(a))\n")
    add(9003, "raises", "def are_equivalent(a, b):\n  raise ValueError\n")
    add(9004, "canonical", "def sum_div(n):\n  return sum(i for i in range(1, n) if n % i == 0)\n")
    add(9004, "zero", "def sum_div(n):\n  return 0\n")
    add(9004, "includes-n", "def sum_div(n):\n  return sum(i for i in range(1, n + 1) if n % i == 0)\n")
    add(9005, "canonical", "def surface_Area(b, s):\n  return 2 * b * s + pow(b, 2)\n")
    add(9005, "slant-height-oracle", "import math\ndef surface_Area(b, h):\n  s = math.sqrt((b / 2) ** 2 + h ** 2)\n"
                                     "  return b ** 2 + 2 * b * s\n")
    add(9005, "off-by-half", "def surface_Area(b, s):\n  return 2 * b * s + pow(b, 2) + 0.5\n")
    add(9005, "off-by-two", "def surface_Area(b, s):\n  return 2 * b * s + pow(b, 2) + 2\n")
    add(9006, "canonical", "def digit_distance_nums(n1, n2):\n  return sum(map(int, str(abs(n1 - n2))))\n")
    add(9006, "padded-oracle", "def digit_distance_nums(a, b):\n  x, y = str(a), str(b)\n  m = max(len(x), len(y))\n"
                               "  return sum(abs(int(p) - int(q)) for p, q in zip(x.zfill(m), y.zfill(m)))\n")
    add(9006, "wrong", "def digit_distance_nums(n1, n2):\n  return abs(n1 - n2)\n")
    # the oracles' modes compare out == exp first (the nineteenth session's red-team round): an == that raises fails
    raising = "  class X:\n    __hash__ = None\n    def __init__(self, v=()):\n      self.v = v\n" \
              "    def __iter__(self):\n      return iter(self.v)\n    def __eq__(self, other):\n      raise ValueError\n"
    add(9001, "own-eq-raises", "def similar_elements(a, b):\n" + raising + "  return X(set(a) & set(b))\n")
    add(9001, "own-eq-harmless", "def similar_elements(a, b):\n" + raising.replace("raise ValueError", "return False")
        + "  return X(set(a) & set(b))\n")
    add(9001, "list-subclass-iter-lies", "def similar_elements(a, b):\n  class L(list):\n    def __iter__(self):\n"
        "      return iter([])\n  return L(set(a) & set(b))\n")
    add(9001, "list-subclass", "def similar_elements(a, b):\n  class L(list):\n    pass\n  return L(set(a) & set(b))\n")
    add(9002, "own-eq-raises", "import re\ndef check_str(s):\n" + raising
        + "  return X() if re.search(r'^[aeiouAEIOU][A-Za-z0-9_]*', s) else None\n")
    add(9003, "own-eq-raises", "def are_equivalent(a, b):\n" + raising + "  return X()\n")
    # its third round: an == that is no Python function, or reached through a built-in wrapper
    add(9003, "eq-is-len", "def are_equivalent(a, b):\n  class R:\n    __eq__ = len\n    __hash__ = None\n"
        "  return R()\n")
    add(9003, "mappingproxy-of-raising-eq", "import types\ndef are_equivalent(a, b):\n  class M(dict):\n"
        "    def __eq__(self, other):\n      raise ValueError\n    __hash__ = None\n"
        "  return types.MappingProxyType(M())\n")
    add(9002, "eq-is-len", "import re\ndef check_str(s):\n  class R:\n    __eq__ = len\n    __hash__ = None\n"
        "  return R() if re.search(r'^[aeiouAEIOU][A-Za-z0-9_]*', s) else None\n")
    add(9001, "eq-is-ord", "def similar_elements(a, b):\n  class X:\n    __eq__ = ord\n    __hash__ = None\n"
        "    def __init__(self, v):\n      self.v = v\n    def __iter__(self):\n      return iter(self.v)\n"
        "  return X(set(a) & set(b))\n")
    # the fourth round: a __class__ that says bool (EvalPlus's isinstance believes it and compares out == exp), and
    # a metaclass that hides the class's own __iter__ from the wire's checks
    add(9002, "class-says-bool", "import re\ndef check_str(s):\n  class Found:\n    @property\n"
        "    def __class__(self):\n      return bool\n"
        "  return Found() if re.search(r'^[aeiouAEIOU][A-Za-z0-9_]*', s) else None\n")
    add(9001, "metaclass-hides-own-iter", "def similar_elements(a, b):\n  class Hide(type):\n    @property\n"
        "    def __dict__(cls):\n      return {}\n  class T(tuple, metaclass=Hide):\n    def __iter__(self):\n"
        "      return iter(())\n  return T(set(a) & set(b))\n")
    add(9008, "canonical", "import collections\ndef freq_count(l):\n  return collections.Counter(l)\n")
    add(9008, "counter-with-zero", "import collections\ndef freq_count(l):\n  c = collections.Counter(l)\n"
        "  c['absent'] = 0\n  return c\n")
    add(9008, "dict", "import collections\ndef freq_count(l):\n  return dict(collections.Counter(l))\n")
    add(9008, "dict-with-zero", "import collections\ndef freq_count(l):\n  c = dict(collections.Counter(l))\n"
        "  c['absent'] = 0\n  return c\n")
    add(9008, "reversed-ordered-dict", "import collections\ndef freq_count(l):\n"
        "  return collections.OrderedDict(reversed(list(collections.Counter(l).items())))\n")
    # the twenty-first session's round: what runs between a call and EvalPlus's comparison (its per-call swallow_io
    # put back, through a contextlib the program changed), inputs EvalPlus keeps alive for its whole loop, and the
    # comparison are_equivalent's oracle reads three times
    add(9001, "spoiled-as-streams-come-back", "import contextlib\n_last = []\n"
        "_exit = contextlib._RedirectStream.__exit__\ndef _after(self, *exc):\n  for out in _last:\n"
        "    out.append(99)\n  _last.clear()\n  return _exit(self, *exc)\n"
        "contextlib._RedirectStream.__exit__ = _after\n"
        "def similar_elements(a, b):\n  out = list(set(a) & set(b))\n  _last.append(out)\n  return out\n")
    add(9001, "right-while-inputs-live", "_freed = []\nclass _Mark:\n  def __del__(self):\n    _freed.append(1)\n"
        "def similar_elements(a, b):\n  if isinstance(a, list):\n    a.append(_Mark())\n"
        "  out = tuple(set(x for x in a if not isinstance(x, _Mark)) & set(b))\n  return (99,) if _freed else out\n")
    add(9003, "comparison-true-once", "class _Once:\n  def __init__(self):\n    self.n = 0\n"
        "  def __bool__(self):\n    self.n += 1\n    if self.n > 1:\n      raise ValueError('asked twice')\n"
        "    return True\nclass _Answer:\n  def __eq__(self, other):\n    return _Once()\n"
        "  __hash__ = object.__hash__\ndef are_equivalent(a, b):\n  return _Answer()\n")
    add(9007, "canonical", "def average_tuple(nums):\n  return [sum(x) / len(x) for x in zip(*nums)]\n")
    add(9007, "tuple", "def average_tuple(nums):\n  return tuple(sum(x) / len(x) for x in zip(*nums))\n")
    add(9007, "near", "def average_tuple(nums):\n  return [sum(x) / len(x) + 1e-7 for x in zip(*nums)]\n")
    add(9007, "int-division", "def average_tuple(nums):\n  return [sum(x) // len(x) for x in zip(*nums)]\n")
    add(9007, "numpy", "import numpy as np\ndef average_tuple(nums):\n  return list(np.mean(nums, axis=0))\n")
    add(9007, "mutates-input", "def average_tuple(nums):\n  out = [sum(x) / len(x) for x in zip(*nums)]\n"
                               "  nums = None\n  return out\n")
    return p


DATA_DIR = ROOT / "evalsuite" / "tasks" / "builtin" / "data"
REAL_DATA = {"humaneval": "HumanEvalPlus-2023-04.jsonl.gz", "mbpp": "MbppPlus-2023-11.jsonl.gz"}


def real_rows(dataset: str, limit: int | None = None, skip: Sequence[str] = ()) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in gzip.decompress((DATA_DIR / REAL_DATA[dataset]).read_bytes()).splitlines()]
    return [row for row in rows if row["task_id"] not in skip][:limit]


def real_programs(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Each real problem's ground truth as a program, and two broken versions of it: returns None; off by one on
    integer answers, else the first argument echoed."""
    programs = []
    for row in rows:
        program, entry = row["prompt"] + row["canonical_solution"], row["entry_point"]
        programs.append((row["task_id"], "canonical", program))
        programs.append((row["task_id"], "none", program + f"\n\ndef {entry}(*args):\n    return None\n"))
        programs.append((row["task_id"], "off-by-one", program + f"\n\n_ground = {entry}\n\ndef {entry}(*args):\n"
                         "    out = _ground(*args)\n    return out + 1 if type(out) is int else args[0]\n"))
    return programs


# Differences with a known cause (problem, program) -> why. evalsuite's verdict is the same as EvalPlus's otherwise.
KNOWN = {
    ("HumanEval/0", "decimal"): "a Decimal is not plain data: it cannot cross evalsuite's channel (non-plain value); "
                                "EvalPlus compares Decimal(x) / 2 == 0.5 in its own process and passes it",
    ("HumanEval/0", "numpy"): "NumPy is not in evalsuite's jail (site-packages hidden, docs/sandbox.md): the import "
                              "fails; EvalPlus's process has it and np.float64 compares equal",
    ("Mbpp/9007", "numpy"): "NumPy is not in evalsuite's jail: the import fails at load; EvalPlus runs it",
}
# Status differences (pass/not-pass agree) with a known cause, by evalsuite reason.
STATUS_KNOWN = {
    "exited before the test finished": "the process ended (os._exit): EvalPlus's stat is never set, it reports "
                                       "'timeout'; evalsuite names the cause, a fail",
}


def write_jsonl_gz(path: Path, rows: list[dict[str, Any]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


def run_evalsuite(dataset: str, data: Path, programs: list[tuple[str, str, str]], workers: int) -> list[dict]:
    from evalsuite.execution.executor import ExecutionOptions
    from evalsuite.execution.timeouts import TimeoutPolicy, execute_with_timeouts
    from evalsuite.protocol.asking import SolutionTask
    from evalsuite.tasks.evalplus_tasks import DATA_DIR, EvalPlusTask

    task = EvalPlusTask(f"parity-{dataset}", dataset, DATA_DIR / "unused", "parity probes", data_path=data)
    samples, seen = [], Counter()
    for task_id, _, program in programs:
        samples.append({"task_id": task_id, "completion_id": seen[task_id], "completion": program})
        seen[task_id] += 1
    results, _ = execute_with_timeouts(SolutionTask(task), samples, ExecutionOptions(workers=workers,
                                       show_progress=False), TimeoutPolicy(recalibrate=True))
    return [{"passed": r.passed, "base": r.sets["base"].to_json(), "plus": r.sets["plus"].to_json(), "result": r.result}
            for r in results]


def run_evalplus(dataset: str, data: Path, programs: list[tuple[str, str, str]]) -> list[dict]:
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder) / "data.jsonl"
        plain.write_bytes(gzip.decompress(data.read_bytes()))
        samples = Path(folder) / "samples.jsonl"
        samples.write_text("".join(json.dumps({"task_id": t, "solution": p}) + "\n" for t, _, p in programs))
        env = dict(os.environ, HUMANEVAL_OVERRIDE_PATH=str(plain), MBPP_OVERRIDE_PATH=str(plain))
        subprocess.run([sys.executable, "-m", "evalplus.evaluate", "--dataset", dataset, "--samples", str(samples),
                        "--i_just_wanna_run", "--parallel", "1"], check=True, env=env, capture_output=True,
                       cwd=folder)
        results = json.loads((Path(folder) / "samples_eval_results.json").read_text())["eval"]
    by_task = {task_id: iter(rows) for task_id, rows in results.items()}
    return [next(by_task[task_id]) for task_id, _, _ in programs]


def run_evalplus_api(dataset: str, data: Path, programs: list[tuple[str, str, str]]) -> list[dict]:
    """The same through EvalPlus's Python API in this process (what ``evaluate`` calls per sample: its data loader,
    ``get_groundtruth``'s ``trusted_exec`` and ``check_correctness``), without the command's 20 s watchdog sleep."""
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
    from evalplus.evaluate import check_correctness
    from evalplus.gen.util import trusted_exec

    plain = data.with_suffix("")
    plain.write_bytes(gzip.decompress(data.read_bytes()))
    from evalplus.data.utils import stream_jsonl

    problems = {row["task_id"]: row for row in stream_jsonl(str(plain))}
    if dataset == "mbpp":
        from evalplus.data.mbpp import mbpp_deserialize_inputs

        for task_id, row in problems.items():
            row["base_input"] = mbpp_deserialize_inputs(task_id, row["base_input"])
            row["plus_input"] = mbpp_deserialize_inputs(task_id, row["plus_input"])
    not_none = MBPP_OUTPUT_NOT_NONE_TASKS if dataset == "mbpp" else []
    expected = {}
    for task_id, problem in problems.items():  # get_groundtruth's loop, uncached
        oracle = {}
        for name in ("base", "plus"):
            oracle[name], oracle[f"{name}_time"] = trusted_exec(
                problem["prompt"] + problem["canonical_solution"], problem[f"{name}_input"], problem["entry_point"],
                record_time=True, output_not_none=problem["entry_point"] in not_none)
        expected[task_id] = oracle
    out = []
    for i, (task_id, _, program) in enumerate(programs):
        result = check_correctness(dataset, i, problems[task_id], program, expected[task_id], fast_check=True)
        out.append({"base_status": result["base"][0], "plus_status": result["plus"][0]})
    return out


STATUS = {"passed": "pass", "failed": "fail", "timed out": "timeout"}


def compare(dataset: str, rows: list[dict], programs: list[tuple[str, str, str]], workers: int,
            api: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / f"{dataset}.jsonl.gz"
        write_jsonl_gz(data, rows)
        started = time.perf_counter()
        ours = run_evalsuite(dataset, data, programs, workers)
        ours_s = time.perf_counter() - started
        started = time.perf_counter()
        theirs = (run_evalplus_api if api else run_evalplus)(dataset, data, programs)
        theirs_s = time.perf_counter() - started
    cases = []
    for (task_id, name, _), mine, peer in zip(programs, ours, theirs):
        case = {"task_id": task_id, "program": name, "evalsuite": {"base": mine["base"]["status"],
                                                                  "plus": mine["plus"]["status"],
                                                                  "result": mine["result"]},
                "evalplus": {"base": peer["base_status"], "plus": peer["plus_status"]}}
        base_pass = (mine["base"]["status"] == "pass") == (peer["base_status"] == "pass")
        plus_pass = mine["passed"] == (peer["base_status"] == peer["plus_status"] == "pass")
        case["agree_pass"] = base_pass and plus_pass
        case["agree_status"] = (mine["base"]["status"] == peer["base_status"]
                                and mine["plus"]["status"] == peer["plus_status"])
        if not case["agree_pass"]:
            case["known"] = KNOWN.get((task_id, name), "")
        elif not case["agree_status"]:
            reasons = {mine["base"]["reason"], mine["plus"]["reason"]}
            case["known"] = next((STATUS_KNOWN[r] for r in reasons if r in STATUS_KNOWN), "")
        cases.append(case)
    return {"dataset": dataset, "programs": len(cases), "evalsuite_s": round(ours_s, 1),
            "evalplus_s": round(theirs_s, 1), "cases": cases}


def summarize(reports: list[dict]) -> dict[str, Any]:
    """Agreement counts. ``pass_agree.plus`` is EvalPlus's "+" verdict (base and plus passed) against evalsuite's
    ``passed``; ``status_agree`` compares each set's own status (pass / fail / timeout)."""
    cases = [c for r in reports for c in r["cases"]]

    def plus_pass(side: dict) -> bool:
        return side["base"] == side["plus"] == "pass"

    return {
        "programs": len(cases),
        "pass_agree": {"base": sum((c["evalsuite"]["base"] == "pass") == (c["evalplus"]["base"] == "pass")
                                   for c in cases),
                       "plus": sum(plus_pass(c["evalsuite"]) == plus_pass(c["evalplus"]) for c in cases)},
        "status_agree": {"base": sum(c["evalsuite"]["base"] == c["evalplus"]["base"] for c in cases),
                         "plus": sum(c["evalsuite"]["plus"] == c["evalplus"]["plus"] for c in cases)},
        "pass_disagreements": [c for c in cases if not c["agree_pass"]],
        "status_only_disagreements": [c for c in cases if c["agree_pass"] and not c["agree_status"]],
        "evalplus_passes": {"base": sum(c["evalplus"]["base"] == "pass" for c in cases),
                            "plus": sum(plus_pass(c["evalplus"]) for c in cases)},
        "evalsuite_passes": {"base": sum(c["evalsuite"]["base"] == "pass" for c in cases),
                             "plus": sum(plus_pass(c["evalsuite"]) for c in cases)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="no timing probes")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--api", action="store_true", help="EvalPlus through its Python API, not its command")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--real", action="store_true", help="instead: every problem of the real data files, each "
                        "ground truth and two broken versions (Mbpp/255 left out: see the data README)")
    args = parser.parse_args()
    if args.real:
        reports = [compare(dataset, rows, real_programs(rows), args.workers, args.api)
                   for dataset, rows in (("humaneval", real_rows("humaneval")),
                                         ("mbpp", real_rows("mbpp", skip=("Mbpp/255",))))]
        summary = summarize(reports)
        print(json.dumps({k: v for k, v in summary.items() if "disagreements" not in k}, indent=1))
        if args.json:
            command = " ".join(["python", *sys.argv])
            args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "command": command,
                                             "summary": summary, "reports": reports}, indent=1) + "\n")
        return 1 if summary["pass_disagreements"] else 0
    he_rows = HUMANEVAL_ROWS + ([] if args.quick else SLOW_ROWS)
    reports = [compare("humaneval", he_rows, he_programs(not args.quick), args.workers, args.api),
               compare("mbpp", MBPP_ROWS, mbpp_programs(), args.workers, args.api)]
    summary = summarize(reports)
    import evalplus

    document = {"date": time.strftime("%Y-%m-%d"), "python": sys.version.split()[0], "peer": "api" if args.api else
                "python -m evalplus.evaluate", "command": " ".join(["python", *sys.argv]),
                "evalplus": getattr(evalplus, "__version__", "?"), "quick": args.quick, "summary": summary,
                "reports": reports}
    print(json.dumps({k: v for k, v in summary.items() if k != "status_only_disagreements"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(document, indent=1) + "\n")
    unexplained = [c for c in summary["pass_disagreements"] if not c.get("known")]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
