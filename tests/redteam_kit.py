"""What the red-team tests share to write hostile candidates: the problems they attack, the guard-undoing
prefix, and the builders that wrap attack code into a candidate. The corpus of attacks itself is data
(tests/data/attacks/, read by tests/attack_corpus.py); tests that write attacks of their own inline
(tests/test_redteam_checker.py, tests/test_redteam_state_*.py...) build them with these.
"""

from __future__ import annotations

import textwrap

# The sample process applies the peers' reliability_guard (sandbox/channel.py: os.fork, os.kill, os.chdir...
# set to None) for verdict parity, not for safety: any candidate can undo it, as this prefix does. Attacks
# run with it so that each one tests the jail, not the guard.
UNGUARD = (
    "import builtins as _gb, importlib as _gi, os as _go, posix as _gp, sys as _gs\n"
    "for _gn in dir(_gp):\n"
    "    if getattr(_go, _gn, 0) is None:\n"
    "        setattr(_go, _gn, getattr(_gp, _gn))\n"
    "for _gm in ('ipdb', 'joblib', 'resource', 'psutil', 'tkinter'):\n"
    "    if _gs.modules.get(_gm, 0) is None:\n"
    "        del _gs.modules[_gm]\n"
    "for _gm in ('shutil', 'subprocess'):\n"
    "    _gi.reload(_gi.import_module(_gm))\n"
    "_gb.exit = _gb.quit = _gs.exit\n"
    "del _gb, _gi, _go, _gp, _gs\n"
)


def unguarded(candidate: str) -> str:
    """``candidate`` with the peers' guard undone first (a leading ``from __future__`` line stays first)."""
    if candidate.lstrip().startswith("from __future__"):
        return candidate
    return UNGUARD + candidate


# -- problems -------------------------------------------------------------------------------------------
ADD_PROMPT = "import math\n\n\ndef add(a, b):\n"
ADD_TEST = textwrap.dedent("""
    import math
    import random
    import copy
    from collections import Counter

    def check(candidate):
        assert candidate(1, 2) == 3
        assert abs(candidate(2.5, 0.5) - 3.0) < 1e-9
        assert math.isclose(candidate(10, -4), 6)
        assert isinstance(candidate(3, 4), int)
        assert len(str(candidate(5, 5))) == 2
        assert sorted([candidate(1, 1), 1]) == [1, 2]
        assert round(candidate(0.25, 0.25), 1) == 0.5
        assert tuple([candidate(0, 0)]) == (0,)
        rng = random.Random(7)
        for _ in range(5):
            a, b = rng.randint(-999, 999), rng.randint(-999, 999)
            assert candidate(*copy.deepcopy((a, b))) == a + b
        assert Counter([candidate(1, 1)]) == Counter([2])
""")
ADD_CORRECT = ADD_PROMPT + "    return a + b\n"

# HumanEval/32: the prompt defines ``poly``, which the test uses.
POLY_PRELUDE = textwrap.dedent('''
    import math


    def poly(xs: list, x: float):
        """Evaluates polynomial with coefficients xs at point x."""
        return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


    def find_zero(xs: list):
        """Finds x such that poly(x) = 0."""
''').lstrip()
POLY_TEST = textwrap.dedent("""
    METADATA = {}

    def check(candidate):
        import math
        import random
        rng = random.Random(42)
        import copy
        for _ in range(20):
            ncoeff = 2 * rng.randint(1, 4)
            coeffs = []
            for _ in range(ncoeff):
                coeff = rng.randint(-10, 10)
                if coeff == 0:
                    coeff = 1
                coeffs.append(coeff)
            solution = candidate(copy.deepcopy(coeffs))
            assert math.fabs(poly(coeffs, solution)) < 1e-4
""")
POLY_CORRECT = POLY_PRELUDE + textwrap.indent(textwrap.dedent("""
    begin, end = -1., 1.
    while poly(xs, begin) * poly(xs, end) > 0:
        begin *= 2.0
        end *= 2.0
    while end - begin > 1e-10:
        center = (begin + end) / 2.0
        if poly(xs, center) * poly(xs, begin) > 0:
            begin = center
        else:
            end = center
    return begin
"""), "    ")

# A hidden answer the candidate cannot compute: it passes only by reading the test (an oracle).
SECRET_VALUE = 481516
SECRET_PROMPT = "def secret(x):\n"
SECRET_TEST = f"# ORACLE_NEEDLE_{SECRET_VALUE}_END\n" + textwrap.dedent(f"""
    def check(candidate):
        assert candidate(0) == {SECRET_VALUE}
""")
SECRET_CORRECT = SECRET_PROMPT + f"    return {SECRET_VALUE}\n"

# A test that iterates over ``map(candidate, ...)``: StopIteration from the candidate must not end it early.
MAP_PROMPT = "def double(x):\n"
MAP_TEST = textwrap.dedent("""
    def check(candidate):
        checked = 0
        for got, want in zip(map(candidate, [1, 2, 3]), [2, 4, 6]):
            assert got == want
        assert all(map(lambda x: candidate(x) == 2 * x, [5, 6]))
""")
MAP_CORRECT = MAP_PROMPT + "    return 2 * x\n"

# Three hidden values; the test stops at the first wrong one. A sample that can keep state from one
# sample to the next learns them (one more call arriving = the previous answer was right).
LEARN_VALUES = (2, 3, 1)
LEARN_PROMPT = "def hidden(i):\n"
LEARN_TEST = textwrap.dedent(f"""
    def check(candidate):
        for i, want in enumerate({LEARN_VALUES!r}):
            assert candidate(i) == want
""")
LEARN_CORRECT = LEARN_PROMPT + f"    return {LEARN_VALUES!r}[i]\n"

PROBLEMS = {  # key -> (prelude, test, check, correct candidate)
    "add": (ADD_PROMPT, ADD_TEST, "check(add)", ADD_CORRECT),
    "poly": (POLY_PRELUDE, POLY_TEST, "check(find_zero)", POLY_CORRECT),
    "secret": (SECRET_PROMPT, SECRET_TEST, "check(secret)", SECRET_CORRECT),
    "map": (MAP_PROMPT, MAP_TEST, "check(double)", MAP_CORRECT),
    "learn": (LEARN_PROMPT, LEARN_TEST, "check(hidden)", LEARN_CORRECT),
}


SEP = "#--\n"  # ends a shared snippet; each part around it is dedented on its own


def dedent(code: str) -> str:
    """``code`` dedented, each part between ``SEP`` lines on its own (snippets and the code after them)."""
    return "".join(textwrap.dedent(part).rstrip(" ").rstrip("\n") + "\n" for part in code.split(SEP)).strip("\n") + "\n"


def body(code: str, prompt: str = ADD_PROMPT) -> str:
    """Attack code as the body of the entry point (runs when the test calls it)."""
    return prompt + textwrap.indent(dedent(code), "    ")


def module(code: str, wrong: str = "    return a - b\n") -> str:
    """A wrong ``add`` plus attack code at module level (runs when the candidate is loaded)."""
    return ADD_PROMPT + wrong + "\n" + dedent(code)


# Finds the call channel (the one socket the sample holds) and writes raw frames on it.
RAW = textwrap.dedent("""
    import os as _os, stat as _stat, struct as _struct
    def _chan():
        for fd in range(1024):  # samples have no /proc: try every descriptor
            try:
                if _stat.S_ISSOCK(_os.fstat(fd).st_mode):
                    return fd
            except OSError:
                pass
        return -1
    def _send(body, size=None):
        data = _struct.pack(">I", len(body) if size is None else size) + body
        while data:
            data = data[_os.write(_chan(), data):]
    def _u32(n):
        return _struct.pack(">I", n)
    def _int(n):
        size = (n.bit_length() + 8) // 8
        return b"i" + _u32(size) + n.to_bytes(size, "big", signed=True)
    def _str(s):
        data = s.encode("utf-8", "surrogatepass")
        return b"s" + _u32(len(data)) + data
    def _hang():
        import time
        time.sleep(30)
""") + SEP


def raw(code: str) -> str:
    """``add`` that writes raw bytes on the channel instead of answering, then hangs."""
    return ADD_PROMPT + textwrap.indent(dedent(RAW + code + SEP + "_hang()\n"), "    ")


LIBC = "import ctypes; libc = ctypes.CDLL(None, use_errno=True)\n" + SEP


def bits_carried(bits: list[int], observations: list[str]) -> int:
    """Pairs decoded right by the best map from observation to bit, beyond what a constant guess gets."""
    votes: dict[str, list[int]] = {}
    for bit, obs in zip(bits, observations):
        votes.setdefault(obs, [0, 0])[bit] += 1
    right = sum(max(v) for v in votes.values())
    return right - max(bits.count(0), bits.count(1))
